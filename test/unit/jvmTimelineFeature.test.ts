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

/** A webview panel as VS Code hands one to a serializer: records what is posted, lets the test say "ready". */
function fakePanel(title: string) {
  const posted: { type: string; [k: string]: unknown }[] = [];
  let onMessage: ((m: unknown) => unknown) | undefined;
  const panel = {
    title,
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: unknown) => u,
      postMessage: async (m: { type: string }) => void posted.push(m),
      onDidReceiveMessage: (h: (m: unknown) => unknown) => ((onMessage = h), { dispose() {} }),
    },
    onDidDispose: () => ({ dispose() {} }),
  };
  return { panel, posted, say: async (m: unknown) => onMessage?.(m) };
}

test('Reload Window: a running timeline comes back stopped, saying so, with the same lanes and figures; an unsaved one says it was not saved', async (t) => {
  const { JvmTimeline, toSessionFile } = await import('../../extension/model/jvmTimeline');
  const { TimelineView } = await import('../../webview/jvmTimeline/model');
  const store = await import('../../extension/editor/sessions/sessionStore');
  const { LiveViewHost, RELOADED } = await import('../../extension/editor/sessions/livePanel');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-jvmt-reload-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const state = new Map<string, unknown>();
  const ctx = { ...fakeContext('/tmp'), globalStorageUri: vscode.Uri.file(dir), workspaceState: { get: <T>(k: string, d?: T) => (state.has(k) ? (state.get(k) as T) : d), update: async (k: string, v: unknown) => void state.set(k, v), keys: () => [...state.keys()] } };
  store.activate(ctx as never);
  feature.activate(ctx as never);
  // A live session as the feature keeps it in the extension host: a bounded model, checkpointed.
  const live = new JvmTimeline(60e9);
  live.pid = 4242;
  const MS = 1e6;
  for (let i = 0; i < 2000; i++) {
    const t0 = 1e9 + i * 250 * MS;
    live.apply({
      startNs: 1e9, nowNs: t0 + 250 * MS, safepoints: [], safepointsAvailable: false, runq: [], cpu: [], stacks: [], threads: i ? [] : [{ tid: 4243, comm: 'VM Thread', group: 'vm' }], lost: 0, dropped: 0,
      gc: [{ pid: 4242, tid: 4243, cpu: 0, timestampNs: t0 + 10 * MS, durationNs: (1 + (i % 9)) * MS, collector: 'G1 Young Generation', kind: 'young', operation: 'G1CollectForAllocation', escalated: false, full: false, pools: [{ name: 'G1 Eden Space', usedBefore: 30e6 + (i % 5) * 1e6, usedAfter: 0, committedAfter: 64e6 }] }],
    });
  }
  const host = new LiveViewHost();
  host.checkpointWith(() => JSON.stringify({ ...toSessionFile(live.toResult({ withTimeline: true }), new Date(), { reason: 'stopped', message: RELOADED }), title: 'JVM timeline: pid 4242' }));
  const serializer = recorded.serializers.get('ebpfStudio.jvmTimeline');
  // The window reloads: the extension's subscriptions are disposed, which writes the checkpoint.
  for (const d of (ctx as unknown as { subscriptions: { dispose(): void }[] }).subscriptions) d.dispose();
  store.activate(ctx as never);
  assert.ok(serializer, 'the JVM timeline registers a panel serializer');
  const restored = fakePanel('JVM timeline: pid 4242');
  await serializer.deserializeWebviewPanel(restored.panel, { sessionKey: host.key });
  assert.match(restored.panel.webview.html, /data-view="jvmTimeline"/);
  assert.match(restored.panel.webview.html, new RegExp(`data-session-key="${host.key}"`), 'the restored panel keeps its key for the next reload');
  await restored.say({ type: 'ready' });
  const load = restored.posted.find((m) => m.type === 'load') as { result: import('../../extension/model/jvmTimeline').JvmResult; ended: { reason: string; message: string }; name: string } | undefined;
  assert.ok(load, 'the stored session is sent to the view');
  assert.deepEqual(load.ended, { reason: 'stopped', message: RELOADED });
  assert.equal(load.name, 'pid 4242');
  // The view shows what it showed: the same lanes and marks over the whole session (500 s, of which 60 s raw).
  const before = new TimelineView();
  before.data = live;
  const after = new TimelineView();
  after.load(load.result, 'stopped');
  assert.equal(after.state, 'stopped');
  const marks = (v: InstanceType<typeof TimelineView>) => v.lanes().map((l) => [l.label, v.marks(l, 900).map((m) => [m.x, m.w, m.level, m.label])]);
  assert.deepEqual(marks(after), marks(before));
  assert.deepEqual(after.rangeStats().collectors, before.rangeStats().collectors);
  assert.equal(after.rangeStats().collectors[0].count, 2000);
  assert.ok(live.droppedBeforeNs > 0, 'the session outgrew its raw window');

  const unsaved = fakePanel('JVM timeline: pid 1');
  await serializer.deserializeWebviewPanel(unsaved.panel, { sessionKey: 'no-such-key' });
  assert.match(unsaved.panel.webview.html, /was not saved before the window reloaded/);
});
