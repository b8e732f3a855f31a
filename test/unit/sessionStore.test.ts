// The store behind the Sessions view (with the `vscode` mock): a finished session is listed and
// reopens after a new activation (a window reload) from global storage; storage stays within its
// bounds (oldest dropped, too-big sessions listed for this window only); Delete removes both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installVscodeMock, Uri } from '../mocks/vscode';
import { makeSession } from '../../extension/model/sessionFile';
import { fromFolded } from '../../extension/model/flamegraph/formats';

installVscodeMock();
 
const store = require('../../extension/editor/sessions/sessionStore') as typeof import('../../extension/editor/sessions/sessionStore');

function context(storage: string, state: Map<string, unknown>) {
  return {
    globalStorageUri: Uri.file(storage),
    subscriptions: [] as { dispose(): void }[],
    workspaceState: {
      get: <T>(k: string, d?: T) => (state.has(k) ? (state.get(k) as T) : d),
      update: async (k: string, v: unknown) => void state.set(k, v),
      keys: () => [...state.keys()],
    },
  } as never;
}

const profile = (n: number) => makeSession('profile', `CPU: run ${n}`, { profile: fromFolded(`main;work ${n}\n`, 'p'), warnings: [] }, new Date(Date.UTC(2026, 10, 23, 8, n)), new Date(Date.UTC(2026, 10, 23, 8, n, 30)));

test('a finished session is listed, kept in storage and reopens after a reload; Delete forgets it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-store-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const state = new Map<string, unknown>();
  store.activate(context(dir, state));
  const key = await store.recordSession(profile(1));
  assert.deepEqual(store.finishedSessions().map((e) => [e.title, e.tracer, e.stored]), [['CPU: run 1', 'profile', true]]);
  assert.ok(fs.existsSync(path.join(dir, 'sessions', `${key}.ebpf-session.json`)));
  // A reload: a new activation with the same storage and workspace state, nothing in memory.
  store.activate(context(dir, state));
  const back = store.loadSession(key);
  assert.equal(back?.title, 'CPU: run 1');
  assert.equal(back?.tracer === 'profile' && back.data.profile.total, 1);
  await store.forgetSession(key);
  assert.deepEqual(store.finishedSessions(), []);
  assert.equal(store.loadSession(key), undefined);
  assert.equal(fs.existsSync(path.join(dir, 'sessions', `${key}.ebpf-session.json`)), false);
});

test('storage is bounded: oldest files go first; a session over the per-session bound is listed but not kept across a reload', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-store-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const state = new Map<string, unknown>();
  const one = Buffer.byteLength(JSON.stringify(profile(1)));
  store.activate(context(dir, state), { one: one * 10, total: Math.floor(one * 2.5) });
  const keys: string[] = [];
  for (let i = 1; i <= 4; i++) {
    keys.push(await store.recordSession(profile(i)));
    // Distinct modification times, so "oldest" is well defined.
    const f = path.join(dir, 'sessions', `${keys[i - 1]}.ebpf-session.json`);
    const when = new Date(Date.now() - (10 - i) * 1000);
    fs.utimesSync(f, when, when);
  }
  const files = fs.readdirSync(path.join(dir, 'sessions'));
  assert.equal(files.length, 2, `kept: ${files.join(', ')}`);
  assert.deepEqual(files.sort(), [keys[2], keys[3]].map((k) => `${k}.ebpf-session.json`).sort());
  const big = makeSession('profile', 'CPU: big', { profile: fromFolded(Array.from({ length: 400 }, (_, i) => `main;f${i} 1`).join('\n'), 'big'), warnings: [] }, new Date());
  const bigKey = await store.recordSession(big);
  assert.equal(store.finishedSessions()[0].stored, false);
  assert.equal(store.loadSession(bigKey)?.title, 'CPU: big', 'still opens in this window');
  store.activate(context(dir, state), { one: one * 10, total: Math.floor(one * 2.5) });
  // After the reload only sessions whose data survived are listed.
  assert.deepEqual(store.finishedSessions().map((e) => e.title).sort(), ['CPU: run 3', 'CPU: run 4']);
});

test('a session whose workspaceState write never landed (the window hung or reloaded first) is still listed after the reload', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-store-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const state = new Map<string, unknown>();
  store.activate(context(dir, state));
  const first = await store.recordSession(profile(1));
  // The Java GC session ends while the window is frozen: its workspaceState update is lost.
  const before = new Map(state);
  const gc = makeSession('java-gc', 'Java GC: pid 4242', { target: 'pid 4242', updates: [], ended: { reason: 'stopped' } }, new Date(Date.UTC(2026, 10, 23, 9, 0)), new Date(Date.UTC(2026, 10, 23, 9, 2)));
  const gcKey = await store.recordSession(gc);
  store.activate(context(dir, before));
  assert.deepEqual(store.finishedSessions().map((e) => [e.key, e.title]), [[gcKey, 'Java GC: pid 4242'], [first, 'CPU: run 1']]);
  assert.equal(store.loadSession(gcKey)?.title, 'Java GC: pid 4242');
});

test('a session running at a reload: its figures as they were when the window went, stopped and saying why, not listed', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-store-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { GcLive } = await import('../../extension/model/javaGcLive');
  const state = new Map<string, unknown>();
  const ctx = context(dir, state) as unknown as { subscriptions: { dispose(): void }[] };
  store.activate(ctx as never);
  const live = new GcLive();
  const gc = (i: number) => ({ pid: 7, tid: 8, cpu: 0, timestampNs: 1e9 + i * 1e7, durationNs: 1e5 + i, collector: 'Copy', kind: 'young' as const, operation: 'op', escalated: false, full: false, pools: [] });
  const key = store.newSessionKey();
  const doc = () => makeSession('java-gc', 'Java GC: pid 7', { target: 'pid 7', state: live.toJSON(), ended: { reason: 'stopped', message: 'the window reloaded' } }, new Date());
  store.checkpointWhileRunning(key, doc);
  live.apply({ events: [gc(1), gc(2), gc(3)], lost: 0, pids: [7], startNs: 1e9, nowNs: 2e9 });
  // The window goes: the extension's subscriptions are disposed, the checkpoint is written then.
  for (const d of ctx.subscriptions) d.dispose();
  store.activate(context(dir, state));
  const back = store.loadSession(key);
  assert.ok(back && back.tracer === 'java-gc');
  assert.equal(back.data.state?.count, 3, 'the restored figures are those at the moment the window went');
  assert.deepEqual(back.data.ended, { reason: 'stopped', message: 'the window reloaded' });
  assert.deepEqual(store.finishedSessions(), [], 'a session that did not finish is not listed as finished');
});

test('a Java heap session is listed as one and comes back after a reload with its rows', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-store-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { javaHeapViewStacks } = await import('../../extension/model/javaHeapReport');
  const state = new Map<string, unknown>();
  store.activate(context(dir, state));
  const frames = [{ address: '0x0', module: '[java]', function: 'HeapSites.leak', file: 'HeapSites.java', line: 40 }];
  const site = { bytes: 3e7, allocations: 900, bytesStdErr: 1e6, allocationsStdErr: 30, oldestAgeMs: 5000, frames, class: 'long[]', survivedGcs: 4, allocatedBytes: 9e7, allocatedObjects: 2700, allocatedBytesStdErr: 2e6, growthBytesPerSecond: 1e6, leakCandidate: true };
  const doc = makeSession('java-heap', 'Java heap leaks of pid 4711', { pid: 4711, totalBytes: 3e7, totalAllocations: 900, sampleBytes: 524288, stacks: javaHeapViewStacks([site], new Map(), []) }, new Date(Date.UTC(2026, 10, 23, 8, 0)), new Date(Date.UTC(2026, 10, 23, 8, 1)));
  const key = await store.recordSession(doc);
  store.activate(context(dir, state));
  assert.deepEqual(store.finishedSessions().map((e) => [e.key, e.tracer, e.title]), [[key, 'java-heap', 'Java heap leaks of pid 4711']]);
  const back = store.loadSession(key);
  assert.ok(back && back.tracer === 'java-heap');
  assert.deepEqual(back.data, JSON.parse(JSON.stringify(doc.data)));
  assert.equal(back.data.stacks[0].frames[0].function, 'HeapSites.leak → new long[]');
});
