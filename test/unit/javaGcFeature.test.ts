// The "Trace Java GC" command's picker (with the `vscode` mock and a fake helper): JVMs with
// USDT are pickable, one without is shown with the reason and refused with it when picked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { fakeJvm as jvm, listingHelper } from '../mocks/jvms';

const vscode = installVscodeMock();
 
const feature = require('../../extension/editor/features/javaGc') as typeof import('../../extension/editor/features/javaGc');
 
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

test('quick pick items: pid, main, user, JDK; no-USDT JVM marked with the reason; all and enter-a-pid', () => {
  const items = feature.jvmItems([jvm(100, true), jvm(200, false)]);
  assert.equal(items[0].label, '$(coffee) 100  app.jar');
  assert.equal(items[0].description, 'alice');
  assert.equal(items[0].detail, '/usr/lib/jvm/java-17-openjdk-amd64');
  assert.deepEqual(items[0].options, { pid: 100, all: false, minUs: 0 });
  assert.match(items[1].label, /^\$\(circle-slash\) 200/);
  assert.match(items[1].detail!, /Cannot trace: \/opt\/vendor-jdk\/lib\/server\/libjvm\.so has no \.note\.stapsdt section/);
  assert.equal(items[1].options, undefined);
  assert.equal(items[2].kind, vscode.QuickPickItemKind.Separator);
  assert.deepEqual(items[3].options, { pid: 0, all: true, minUs: 0 });
  assert.match(items[3].label, /All JVMs, including ones that start later/);
  assert.equal(items[4].askPid, true);
});

test('picking the JVM without USDT shows the reason as an error and starts nothing', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  feature.activate(fakeContext('/tmp') as never);
  vscode.window.showQuickPick = (async (items: { refuse?: string }[]) => items.find((i) => i.refuse)) as never;
  const before = recorded.errors.length;
  const r = await vscode.commands.executeCommand('ebpfStudio.traceJavaGc');
  assert.equal(r, undefined);
  assert.deepEqual(calls, ['listProcesses']);
  assert.match(recorded.errors.slice(before).join('\n'), /has no \.note\.stapsdt section: this JDK was built without DTrace\/USDT probes/);
});
