// The "Open JVM Timeline" command (with the `vscode` mock and a fake helper): its picker lists
// JVMs (one without USDT refused with the reason), "Enter a pid…" (an exited pid gets a message),
// and saved sessions; a file that is not a JVM timeline session is refused with the file's name
// and what is wrong with it.
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

type Row = { label: string; detail?: string; kind?: number; process?: { pid: number }; askPid?: boolean; open?: boolean };
const win = vscode.window as unknown as Record<string, unknown>;

test('picker: the JVMs (one without USDT marked with the reason), "Enter a pid…", open a saved session', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  feature.activate(fakeContext('/tmp') as never);
  let rows: Row[] = [];
  win.showQuickPick = async (items: Row[]) => ((rows = items), undefined);
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline'), undefined);
  assert.equal(rows.find((r) => r.process?.pid === 100)!.label, '$(coffee) 100  app.jar');
  assert.match(rows.find((r) => r.process?.pid === 200)!.detail!, /Cannot trace: .*has no \.note\.stapsdt section/);
  const ask = rows.findIndex((r) => r.askPid);
  assert.equal(rows[ask].label, '$(edit) Enter a pid…');
  assert.ok(rows.findIndex((r) => r.open) > ask, '"Open a saved session…" comes after the processes and "Enter a pid…"');
  assert.match(rows.find((r) => r.open)!.label, /Open a saved session…/);
});

test('"Enter a pid…" with a pid that has exited: a message says so and nothing starts', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true)], calls));
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.askPid);
  win.showInputBox = async () => '4242';
  const before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline'), undefined);
  assert.match(recorded.errors.slice(before).join('\n'), /Open JVM Timeline: No process with pid 4242 is running: it has exited, or the pid is mistyped/);
  assert.deepEqual(calls, ['listProcesses', 'listProcesses'], 'the pid was checked against a fresh listing; no session was started');
});

test('"Open a saved session…" asks for a file; a listed JVM starts the timeline on its pid', async () => {
  const calls: string[] = [];
  const params: unknown[] = [];
  setHelper(listingHelper([jvm(100, true)], calls, params));
  let asked = '';
  win.showOpenDialog = async (o: { title: string }) => ((asked = o.title), undefined);
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.open);
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline'), undefined);
  assert.equal(asked, 'Open a JVM timeline session');
  assert.deepEqual(calls, ['listProcesses']);

  win.showQuickPick = async (items: Row[]) => items.find((i) => i.process?.pid === 100);
  await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline');
  assert.deepEqual(calls, ['listProcesses', 'listProcesses', 'session/start']);
  assert.deepEqual(params[2], { tracer: 'jvm', options: { pid: 100, frequency: 99, sliceMs: 250 } });
});

test('picking the JVM without USDT shows the reason and starts nothing; a bad session file names the file and the cause', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.process?.pid === 200);
  let before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline'), undefined);
  assert.deepEqual(calls, ['listProcesses']);
  assert.match(recorded.errors.slice(before).join('\n'), /Open JVM Timeline: .*has no \.note\.stapsdt section/);

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
