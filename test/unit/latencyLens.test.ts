// The "Measure latency" lens (with the `vscode` mock): on every function definition of a workspace
// program's C source, never on a .bpf.c program (it runs in the kernel, no process to measure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock } from '../mocks/vscode';

const vscode = installVscodeMock();
type Provider = { provideCodeLenses(doc: unknown): { command?: { title: string } }[] };
let provider: Provider | undefined;
(vscode.languages as unknown as Record<string, unknown>).registerCodeLensProvider = (_sel: unknown, p: Provider) => {
  provider = p;
  return { dispose: () => undefined };
};
(vscode.workspace as unknown as Record<string, unknown>).getWorkspaceFolder = () => ({ uri: { fsPath: '/w' }, name: 'w', index: 0 });

const feature = require('../../extension/editor/features/latency') as typeof import('../../extension/editor/features/latency');
feature.activate(fakeContext('/tmp') as never);

const SOURCE = 'long work(int n)\n{\n  return n * 2;\n}\n\nint main(void)\n{\n  return work(1);\n}\n';
function doc(fileName: string) {
  const lines = SOURCE.split('\n');
  return {
    uri: { fsPath: fileName, scheme: 'file' },
    fileName,
    languageId: 'c',
    getText: () => SOURCE,
    lineAt: (i: number) => ({ range: new vscode.Range(i, 0, i, lines[i].length) }),
  };
}

test('a C program has a Measure latency and a Profile the slow calls lens per function; a .bpf.c program has none', () => {
  assert.ok(provider, 'no CodeLens provider registered');
  const titles = provider.provideCodeLenses(doc('/w/main.c')).map((l) => l.command?.title);
  assert.equal(titles.length, 4, JSON.stringify(titles));
  assert.equal(titles.filter((t) => /Measure latency/.test(t ?? '')).length, 2, JSON.stringify(titles));
  assert.equal(titles.filter((t) => /Profile the slow calls/.test(t ?? '')).length, 2, JSON.stringify(titles));
  assert.deepEqual(provider.provideCodeLenses(doc('/w/minimal.bpf.c')), []);
});
