// The "Trace Java GC" command's picker (with the `vscode` mock and a fake helper): the shared
// process picker with "All JVMs" above the JVMs and "Enter a pid…" below; a JVM with USDT is
// pickable, one without is shown with the reason and refused with it when picked; a typed pid
// that is not running (or is not a JVM) gets a message saying so and starts nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { fakeJvm as jvm, listingHelper } from '../mocks/jvms';

const vscode = installVscodeMock();

const feature = require('../../extension/editor/features/javaGc') as typeof import('../../extension/editor/features/javaGc');

const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

type Row = { label: string; detail?: string; description?: string; kind?: number; process?: { pid: number }; askPid?: boolean; options?: unknown };
const win = vscode.window as unknown as Record<string, unknown>;
feature.activate(fakeContext('/tmp') as never);

test('picker rows: "All JVMs" first, the JVMs as pid and main class, one without USDT marked with the reason, "Enter a pid…"', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  let rows: Row[] = [];
  let title = '';
  win.showQuickPick = async (items: Row[], o: { title: string }) => ((rows = items), (title = o.title), undefined);
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.traceJavaGc'), undefined);
  assert.equal(title, 'Trace Java GC');
  assert.match(rows[0].label, /All JVMs, including ones that start later/);
  assert.deepEqual(rows[0].options, { pid: 0, all: true, minUs: 0 });
  const ok = rows.find((r) => r.process?.pid === 100)!;
  assert.equal(ok.label, '$(coffee) 100  app.jar');
  assert.match(ok.description!, /alice/);
  assert.equal(ok.detail, '/usr/lib/jvm/java-17-openjdk-amd64');
  const refused = rows.find((r) => r.process?.pid === 200)!;
  assert.match(refused.label, /^\$\(circle-slash\) 200/);
  assert.match(refused.detail!, /Cannot trace: \/opt\/vendor-jdk\/lib\/server\/libjvm\.so has no \.note\.stapsdt section/);
  assert.ok(rows.some((r) => r.askPid && r.label === '$(edit) Enter a pid…'), 'Enter a pid… is offered');
  assert.deepEqual(calls, ['listProcesses']);
});

test('picking the JVM without USDT shows the reason as an error and starts nothing', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), jvm(200, false)], calls));
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.process?.pid === 200);
  const before = recorded.errors.length;
  const r = await vscode.commands.executeCommand('ebpfStudio.traceJavaGc');
  assert.equal(r, undefined);
  assert.deepEqual(calls, ['listProcesses']);
  assert.match(recorded.errors.slice(before).join('\n'), /Trace Java GC: .*has no \.note\.stapsdt section: this JDK was built without DTrace\/USDT probes/);
});

test('"Enter a pid…" with a pid that has exited: a message says so and nothing starts', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true)], calls));
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.askPid);
  win.showInputBox = async () => '4242';
  const before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.traceJavaGc'), undefined);
  assert.match(recorded.errors.slice(before).join('\n'), /Trace Java GC: No process with pid 4242 is running: it has exited, or the pid is mistyped/);
  assert.deepEqual(calls, ['listProcesses', 'listProcesses'], 'the pid was checked against a fresh listing; no session was started');
});

test('"All JVMs" and a listed JVM start the session with the options the old picker gave', async () => {
  for (const [choose, options] of [
    [(items: Row[]) => items[0], { pid: 0, all: true, minUs: 0 }],
    [(items: Row[]) => items.find((i) => i.process?.pid === 100), { pid: 100, all: false, minUs: 0 }],
  ] as const) {
    const calls: string[] = [];
    const params: unknown[] = [];
    setHelper(listingHelper([jvm(100, true)], calls, params));
    win.showQuickPick = async (items: Row[]) => choose(items);
    await vscode.commands.executeCommand('ebpfStudio.traceJavaGc');
    assert.deepEqual(calls, ['listProcesses', 'session/start']);
    assert.deepEqual(params[1], { tracer: 'java-gc', options: { ...options, boundedResult: true } });
  }
});

test('a typed pid of a running process that is not a JVM: a message says so and nothing starts', async () => {
  const calls: string[] = [];
  setHelper(listingHelper([jvm(100, true), { ...jvm(300, true), comm: 'server', jvm: undefined }], calls));
  win.showQuickPick = async (items: Row[]) => items.find((i) => i.askPid);
  win.showInputBox = async () => '300';
  const before = recorded.errors.length;
  assert.equal(await vscode.commands.executeCommand('ebpfStudio.traceJavaGc'), undefined);
  assert.match(recorded.errors.slice(before).join('\n'), /Trace Java GC: pid 300 \(server\) is not a JVM \(no libjvm\.so mapped\)/);
  assert.deepEqual(calls, ['listProcesses', 'listProcesses']);
});
