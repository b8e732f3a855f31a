// Reload Window while a Java GC or run-queue session runs (with the `vscode` mock and a fake
// helper that goes away with the window, as the real one does): the session is stored as the
// reload ended it — stopped, saying so — with the figures of the checkpoint written at the close,
// not as "ended: the helper is gone"; it is listed in the Sessions view's finished sessions, and
// the panel VS Code brings back shows it so. Stop before a reload still stores "stopped" plainly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeContext, fakeWebviewPanel, installVscodeMock, recorded } from '../mocks/vscode';
import { sessionHelper } from '../mocks/sessionHelper';
import { toBuckets } from '../../extension/model/log2hist';
import type { JavaGcUpdate } from '../../extension/protocol/javaGc';
import type { RunqlatUpdate } from '../../extension/protocol/runqlat';

const vscode = installVscodeMock();

const store = require('../../extension/editor/sessions/sessionStore') as typeof import('../../extension/editor/sessions/sessionStore');
const liveSessions = require('../../extension/editor/sessions/liveSessions') as typeof import('../../extension/editor/sessions/liveSessions');
const sessionEditors = require('../../extension/editor/sessions/sessionEditors') as typeof import('../../extension/editor/sessions/sessionEditors');
const javaGc = require('../../extension/editor/features/javaGc') as typeof import('../../extension/editor/features/javaGc');
const histograms = require('../../extension/editor/features/histograms') as typeof import('../../extension/editor/features/histograms');
const { RELOADED } = require('../../extension/editor/sessions/livePanel') as typeof import('../../extension/editor/sessions/livePanel');
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');
const { GcLive } = require('../../extension/model/javaGcLive') as typeof import('../../extension/model/javaGcLive');
const { HistLive } = require('../../extension/model/histLive') as typeof import('../../extension/model/histLive');

const S = 1e9;
const gcUpdate = (i: number): JavaGcUpdate => ({
  events: [
    {
      pid: 7, tid: 8, cpu: 0, timestampNs: 100 * S + i * S, durationNs: (1 + (i % 7)) * 1e6, collector: i % 10 ? 'G1 Young Generation' : 'G1 Old Generation', kind: i % 10 ? 'young' : 'full',
      operation: 'G1CollectForAllocation', escalated: false, full: i % 10 === 0, pools: [{ name: 'G1 Eden Space', usedBefore: 30e6 + i, usedAfter: 0, committedAfter: 64e6 }],
    },
  ],
  lost: 0, pids: [7], startNs: 100 * S, nowNs: 101 * S + i * S,
});
const rqUpdate = (i: number): RunqlatUpdate => ({ interval: { timestampNs: 100 * S + i * S, buckets: toBuckets([0, i % 5, 3, i % 2]) }, keys: [], dropped: 0 });

const cases = [
  { name: 'Java GC', view: 'javaGc', command: 'ebpfStudio.traceJavaGc', args: { pid: 7 }, update: gcUpdate, model: () => new GcLive() },
  { name: 'run queue', view: 'latencyKit', tracer: 'runqlat', command: 'ebpfStudio.showRunQueueLatency', args: { per: 'none' }, update: rqUpdate, model: () => new HistLive() },
  // the kit's panel for another tracer: the same view type, restored with its own tracer
  { name: 'block I/O', view: 'latencyKit', tracer: 'biolatency', command: 'ebpfStudio.showBlockIoLatency', args: { per: 'disk' }, update: rqUpdate, model: () => new HistLive() },
] as const;

/** A window's extension context over a storage folder; the same folder after a reload. */
function windowContext(dir: string, state: Map<string, unknown>) {
  return { ...fakeContext('/tmp'), globalStorageUri: vscode.Uri.file(dir), workspaceState: { get: <T>(k: string, d?: T) => (state.has(k) ? (state.get(k) as T) : d), update: async (k: string, v: unknown) => void state.set(k, v), keys: () => [...state.keys()] } };
}

const ticks = () => new Promise((r) => setTimeout(r, 20));

for (const c of cases) {
  test(`Reload Window with a ${c.name} session running: stored and restored stopped, saying the reload ended it, with the figures it had`, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-reload-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const state = new Map<string, unknown>();
    const ctx = windowContext(dir, state);
    const fake = sessionHelper();
    setHelper(fake.helper);
    store.activate(ctx as never);
    liveSessions.activate(ctx as never);
    sessionEditors.activate(ctx as never);
    (c.view === 'javaGc' ? javaGc : histograms).activate(ctx as never);
    const id = (await vscode.commands.executeCommand(c.command, c.args)) as string;
    assert.equal(id, 's1');
    const panel = recorded.panels.at(-1)!;
    const key = /data-session-key="([0-9a-f]+)"/.exec(panel.webview.html)?.[1];
    assert.ok(key, 'the panel carries its session key');
    const expected = c.model();
    for (let i = 0; i < 40; i++) {
      fake.data(id, c.update(i));
      (expected as { apply(u: unknown): void }).apply(c.update(i));
    }
    // The window reloads: its subscriptions are disposed (the checkpoint is written, the session
    // is stopped), the helper goes away with it and its requests fail.
    fake.state.gone = true;
    for (const d of ctx.subscriptions) d.dispose();
    await ticks();

    // The next window: the session is listed, stored as the reload ended it, with the same figures.
    const next = windowContext(dir, state);
    store.activate(next as never);
    const entry = store.finishedSessions().find((e) => e.key === key);
    assert.ok(entry, 'listed under "Finished in this window"');
    const file = store.loadSession(key)!;
    const data = file.data as { ended?: { reason: string; message?: string }; state?: unknown };
    assert.deepEqual(data.ended, { reason: 'stopped', message: RELOADED }, 'not "ended: the helper is gone"');
    assert.deepEqual(data.state, JSON.parse(JSON.stringify((expected as { toJSON(): unknown }).toJSON())));

    sessionEditors.activate(next as never);
    const restored = fakeWebviewPanel(panel.title);
    await recorded.serializers.get(`ebpfStudio.${c.view}`)!.deserializeWebviewPanel(restored.panel, { sessionKey: key });
    await restored.say({ type: 'ready' });
    assert.deepEqual(restored.posted.find((m) => m.type === 'ended'), { type: 'ended', reason: 'stopped', message: RELOADED });
    assert.deepEqual(restored.posted.find((m) => m.type === 'restore')?.state, data.state);
    if ('tracer' in c) assert.equal((restored.posted.find((m) => m.type === 'init') as { tracer?: string } | undefined)?.tracer, c.tracer, 'the one kit view is told its tracer');
    for (const d of next.subscriptions) d.dispose();
  });

  test(`${c.name}: Stop, then a reload — stored as stopped by the user, no reload message`, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-reload-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const ctx = windowContext(dir, new Map());
    const fake = sessionHelper();
    setHelper(fake.helper);
    store.activate(ctx as never);
    liveSessions.activate(ctx as never);
    (c.view === 'javaGc' ? javaGc : histograms).activate(ctx as never);
    const id = (await vscode.commands.executeCommand(c.command, c.args)) as string;
    const panel = recorded.panels.at(-1)!;
    const key = /data-session-key="([0-9a-f]+)"/.exec(panel.webview.html)![1];
    fake.data(id, c.update(1));
    await panel.say({ type: 'stop' });
    fake.state.gone = true;
    for (const d of ctx.subscriptions) d.dispose();
    await ticks();
    store.activate(windowContext(dir, new Map()) as never);
    const data = store.loadSession(key)!.data as { ended?: { reason: string; message?: string } };
    assert.equal(data.ended?.reason, 'stopped');
    assert.equal(data.ended?.message, undefined);
  });
}
