// The Sessions view lists a finished JVM timeline under "Finished in this window" like the other
// live views' sessions (with the `vscode` mock and a fake helper): its full label, a tooltip naming
// the view and the time span, its icon; Open shows it in the timeline view as it ended; Save
// writes it as a session file the timeline opens; it is still listed after a reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeContext, installVscodeMock, recorded } from '../mocks/vscode';
import { sessionHelper } from '../mocks/sessionHelper';

const vscode = installVscodeMock();

const store = require('../../extension/editor/sessions/sessionStore') as typeof import('../../extension/editor/sessions/sessionStore');
const liveSessions = require('../../extension/editor/sessions/liveSessions') as typeof import('../../extension/editor/sessions/liveSessions');
const sessionsView = require('../../extension/editor/sessions/sessionsView') as typeof import('../../extension/editor/sessions/sessionsView');
const jvmTimeline = require('../../extension/editor/features/jvmTimeline') as typeof import('../../extension/editor/features/jvmTimeline');
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');
const { fromSessionFile } = require('../../extension/model/jvmTimeline') as typeof import('../../extension/model/jvmTimeline');
const { peekTracer } = require('../../extension/model/sessionFile') as typeof import('../../extension/model/sessionFile');

type Item = { label: string; description?: string; tooltip?: { value: string }; iconPath?: { id: string }; contextValue?: string; command?: { command: string; arguments?: unknown[] } };
type Tree = { getChildren(n?: unknown): Promise<unknown[]>; getTreeItem(n: unknown): Item };

const MS = 1e6;
const update = (i: number) => ({
  startNs: 1e9, nowNs: 1e9 + (i + 1) * 250 * MS, safepoints: [], safepointsAvailable: false, runq: [], cpu: [], stacks: [], lost: 0, dropped: 0,
  threads: i ? [] : [{ tid: 4243, comm: 'VM Thread', group: 'vm' }],
  gc: [{ pid: 4242, tid: 4243, cpu: 0, timestampNs: 1e9 + i * 250 * MS + 10 * MS, durationNs: 3 * MS, collector: 'G1 Young Generation', kind: 'young', operation: 'G1CollectForAllocation', escalated: false, full: false, pools: [{ name: 'G1 Eden Space', usedBefore: 30e6, usedAfter: 0, committedAfter: 64e6 }] }],
});

test('a finished JVM timeline is listed in "Finished in this window" with label, tooltip and icon; Open, Save and a reload work', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-sessions-jvm-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const state = new Map<string, unknown>();
  const windowContext = () => ({ ...fakeContext('/tmp'), globalStorageUri: vscode.Uri.file(dir), workspaceState: { get: <T>(k: string, d?: T) => (state.has(k) ? (state.get(k) as T) : d), update: async (k: string, v: unknown) => void state.set(k, v), keys: () => [...state.keys()] } });
  const ctx = windowContext();
  const fake = sessionHelper();
  setHelper(fake.helper);
  store.activate(ctx as never);
  liveSessions.activate(ctx as never);
  jvmTimeline.activate(ctx as never);
  sessionsView.activate(ctx as never);
  const tree = recorded.trees.get('ebpfStudio.sessions') as unknown as Tree;
  assert.ok(tree, 'the Sessions view is registered');

  const id = (await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { pid: 4242 })) as string;
  for (let i = 0; i < 12; i++) fake.data(id, update(i));
  fake.end(id, 'target-exited', 'the JVM (pid 4242) exited');
  await new Promise((r) => setTimeout(r, 20));

  const finished = await tree.getChildren({ kind: 'group', group: 'finished' });
  const items = finished.map((n) => tree.getTreeItem(n));
  const item = items.find((i) => i.label === 'JVM timeline: pid 4242');
  assert.ok(item, `listed; the finished group has ${JSON.stringify(items.map((i) => i.label))}`);
  assert.equal(item.contextValue, 'finishedSession.jvm');
  assert.equal(item.iconPath?.id, 'timeline-open');
  assert.match(item.tooltip!.value, /^JVM timeline: pid 4242 {2}\nJVM timeline, .+ – .+ {2}\nClick to open/);
  assert.equal(item.command?.command, 'ebpfStudio.sessions.open');

  // Open: a new timeline panel with the session as it ended.
  const before = recorded.panels.length;
  await vscode.commands.executeCommand('ebpfStudio.sessions.open', ...item.command!.arguments!);
  assert.equal(recorded.panels.length, before + 1, 'a panel opened');
  const panel = recorded.panels.at(-1)!;
  assert.equal(panel.viewType, 'ebpfStudio.jvmTimeline');
  assert.equal(panel.title, 'JVM timeline: pid 4242');
  await panel.say({ type: 'ready' });
  const load = panel.posted.find((m) => m.type === 'load') as { ended: { reason: string; message?: string }; result: { gc: unknown[] } } | undefined;
  assert.ok(load, 'the stored session is sent to the view');
  assert.deepEqual(load.ended, { reason: 'target-exited', message: 'the JVM (pid 4242) exited' });
  assert.equal(load.result.gc.length, 12);

  // Save (the view's $(save) by key): a session file the timeline reads back.
  const key = (finished[items.indexOf(item)] as { entry: { key: string } }).entry.key;
  (vscode.workspace as unknown as { fs: unknown }).fs = { writeFile: async (u: { fsPath: string }, b: Uint8Array) => fs.writeFileSync(u.fsPath, b) };
  const saved = path.join(dir, 'jvm.ebpf-session.json');
  await vscode.commands.executeCommand('ebpfStudio.saveSession', key, vscode.Uri.file(saved));
  const text = fs.readFileSync(saved, 'utf8');
  assert.equal(peekTracer(text), 'jvm');
  assert.equal(fromSessionFile(text).gc.length, 12);

  // A reload: still listed (its document is stored), and Open still works from storage.
  for (const d of ctx.subscriptions) d.dispose();
  const next = windowContext();
  store.activate(next as never);
  assert.deepEqual(store.finishedSessions().filter((e) => e.key === key).map((e) => [e.title, e.tracer, e.stored]), [['JVM timeline: pid 4242', 'jvm', true]]);
  jvmTimeline.activate(next as never);
  await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { key });
  const reopened = recorded.panels.at(-1)!;
  await reopened.say({ type: 'ready' });
  assert.equal((reopened.posted.find((m) => m.type === 'load') as unknown as { result: { gc: unknown[] } }).result.gc.length, 12);

  // Delete forgets it.
  sessionsView.activate(next as never);
  await vscode.commands.executeCommand('ebpfStudio.sessions.delete', { kind: 'finished', entry: store.finishedSessions().find((e) => e.key === key) });
  assert.equal(store.finishedSessions().some((e) => e.key === key), false);
  for (const d of next.subscriptions) d.dispose();
});
