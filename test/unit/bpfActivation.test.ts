// The extension starts early only for BPF work: package.json's activation events name *.bpf.c /
// *.bt workspaces and bpftrace documents and nothing broader, and the language server starts on
// the first .bpf.c / .bt document without any command having run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers';
import { isBpfAuthoringFile, startWhenBpfFileOpens } from '../../extension/authoring/bpfFiles';

const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: { languages: { id: string; extensions?: string[] }[] };
};

test('activation events: BPF workspaces and bpftrace only; never all C files or "*"', () => {
  const ev = pkg.activationEvents;
  for (const e of ['workspaceContains:**/*.bpf.c', 'workspaceContains:**/*.bt', 'onLanguage:bpftrace']) assert.ok(ev.includes(e), `missing ${e}`);
  assert.ok(!ev.includes('*'), 'must not activate on startup');
  assert.ok(!ev.includes('onStartupFinished'));
  assert.ok(!ev.some((e) => /^onLanguage:(c|cpp)$/.test(e)), 'onLanguage:c would start us for every C file');
  // .bpf.c stays language "c" (clangd serves it); only bpftrace is our own language.
  assert.deepEqual(pkg.contributes.languages.map((l) => l.id), ['bpftrace']);
});

test('BPF authoring files are recognised by name, other C is not', () => {
  assert.ok(isBpfAuthoringFile('/p/minimal.bpf.c', 'c'));
  assert.ok(isBpfAuthoringFile('/p/maps.bpf.h', 'c'));
  assert.ok(isBpfAuthoringFile('/p/x.bt', 'plaintext'));
  assert.ok(isBpfAuthoringFile('untitled:1', 'bpftrace'));
  assert.ok(!isBpfAuthoringFile('/p/minimal.c', 'c'));
  assert.ok(!isBpfAuthoringFile('/p/bpf.c', 'c'));
  assert.ok(!isBpfAuthoringFile('/p/x.bpf.o', 'plaintext'));
});

function fakeWorkspace(open: { fileName: string; languageId: string }[]) {
  const listeners = new Set<(d: { fileName: string; languageId: string; uri: { scheme: string } }) => unknown>();
  return {
    textDocuments: open.map((d) => ({ ...d, uri: { scheme: 'file' } })),
    onDidOpenTextDocument(l: (d: { fileName: string; languageId: string; uri: { scheme: string } }) => unknown) {
      listeners.add(l);
      return { dispose: () => listeners.delete(l) };
    },
    open(fileName: string, languageId: string) {
      for (const l of [...listeners]) l({ fileName, languageId, uri: { scheme: 'file' } });
    },
    listeners,
  };
}

test('the server starts at once when a .bpf.c is already open', () => {
  const ws = fakeWorkspace([{ fileName: '/p/main.c', languageId: 'c' }, { fileName: '/p/minimal.bpf.c', languageId: 'c' }]);
  let starts = 0;
  assert.equal(startWhenBpfFileOpens(ws, () => starts++), undefined);
  assert.equal(starts, 1);
});

test('the server starts on the first .bpf.c opened later, once, and ignores other C files', () => {
  const ws = fakeWorkspace([{ fileName: '/p/main.c', languageId: 'c' }]);
  let starts = 0;
  const waiting = startWhenBpfFileOpens(ws, () => starts++);
  assert.ok(waiting);
  ws.open('/p/other.c', 'c');
  assert.equal(starts, 0);
  ws.open('/p/probe.bpf.c', 'c');
  ws.open('/p/second.bpf.c', 'c');
  assert.equal(starts, 1);
  assert.equal(ws.listeners.size, 0, 'the listener is removed after starting');
});
