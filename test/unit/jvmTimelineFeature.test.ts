// The "Open JVM Timeline" command (with the `vscode` mock and a fake helper): its picker lists
// JVMs (one without USDT refused with the reason), a pid, and saved sessions; a file that is not
// a JVM timeline session is refused with the file's name and what is wrong with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { fakeJvm as jvm, listingHelper } from '../mocks/jvms';

const vscode = installVscodeMock();
 
const feature = require('../../extension/editor/features/jvmTimeline') as typeof import('../../extension/editor/features/jvmTimeline');
 
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

test('quick pick: JVMs with USDT, one without marked with the reason, enter a pid, open a saved session', () => {
  const items = feature.timelineItems([jvm(100, true), jvm(200, false), { ...jvm(300, true), jvm: undefined }]);
  assert.equal(items.length, 5, 'a process that is not a JVM is not listed');
  assert.equal(items[0].label, '$(coffee) 100  app.jar');
  assert.equal(items[0].pid, 100);
  assert.match(items[1].detail!, /Cannot trace: .*has no \.note\.stapsdt section/);
  assert.equal(items[1].pid, undefined);
  assert.equal(items[2].kind, vscode.QuickPickItemKind.Separator);
  assert.equal(items[3].askPid, true);
  assert.equal(items[4].open, true);
});

test('picking the JVM without USDT shows the reason and starts nothing; a bad session file names the file and the cause', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  feature.activate(fakeContext('/tmp') as never);
  vscode.window.showQuickPick = (async (items: { refuse?: string }[]) => items.find((i) => i.refuse)) as never;
  let before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline'), undefined);
  assert.deepEqual(calls, ['listProcesses']);
  assert.match(recorded.errors.slice(before).join('\n'), /has no \.note\.stapsdt section/);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-jvmt-'));
  try {
    const file = path.join(dir, 'memleak-session.json');
    fs.writeFileSync(file, JSON.stringify({ format: 'ebpf-studio-session', version: 1, tracer: 'memleak', result: {} }));
    (vscode.workspace as unknown as { fs: unknown }).fs = { readFile: async (u: { fsPath: string }) => fs.readFileSync(u.fsPath) };
    before = recorded.errors.length;
    assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { file }), undefined);
    assert.match(recorded.errors.slice(before).join('\n'), new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be opened: this session was recorded by "memleak"`));
    assert.deepEqual(calls, ['listProcesses'], 'no session was started');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
