// Session files: each tracer's session survives write → read unchanged and replays into the
// messages its view expects; bad, foreign and future files are refused with errors that say why.
// Also the .cpuprofile importer the profile editor uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeSession, peekTracer, readSession, replayMessages, sessionFileName, viewOf, writeSession, SESSION_SUFFIX, SESSION_TRACERS, type AnySessionFile } from '../../extension/model/sessionFile';
import { StudioError } from '../../extension/protocol/errors';
import { fromFolded } from '../../extension/model/flamegraph/formats';
import { fromCpuProfile } from '../../extension/model/flamegraph/cpuprofile';
import type { JavaGcUpdate } from '../../extension/protocol/javaGc';
import type { RunqlatUpdate } from '../../extension/protocol/runqlat';
import type { JavaHeapStack } from '../../extension/protocol/javaHeap';
import { javaHeapSnapshot, javaHeapStackKey, javaHeapViewStacks, javaLeakLenses } from '../../extension/model/javaHeapReport';
import { toRows, totalsText } from '../../webview/memleak/model';

const t0 = new Date('2026-11-23T08:00:00.000Z');
const t1 = new Date('2026-11-23T08:01:30.000Z');

const gcUpdates: JavaGcUpdate[] = [
  {
    events: [{ pid: 42, tid: 43, cpu: 1, timestampNs: 1_000_000, durationNs: 2_500_000, collector: 'Copy', kind: 'young', operation: 'GenCollectForAllocation', escalated: false, full: false, pools: [{ name: 'Eden Space', usedBefore: 4096, usedAfter: 0, committedAfter: 8192 }] }],
    lost: 0,
    pids: [42],
    startNs: 0,
    nowNs: 1_000_000_000,
  },
  { events: [{ pid: 42, tid: 43, cpu: 0, timestampNs: 1_500_000_000, durationNs: 40_000_000, collector: 'MarkSweepCompact', kind: 'full', operation: 'GenCollectFull', escalated: false, full: true, pools: [] }], lost: 2, pids: [42], startNs: 0, nowNs: 2_000_000_000 },
];

const rqUpdates: RunqlatUpdate[] = [
  {
    interval: { timestampNs: 1e9, buckets: [{ low: 0, high: 1, count: 5 }, { low: 2, high: 3, count: 7 }] },
    keys: [{ key: 100, comm: 'java', count: 12, buckets: [{ low: 0, high: 1, count: 5 }, { low: 2, high: 3, count: 7 }] }],
    dropped: 0,
  },
];

const sessions: AnySessionFile[] = [
  makeSession('java-gc', 'Java GC: pid 42', { target: 'pid 42', updates: gcUpdates, ended: { reason: 'target-exited', message: 'pid 42 exited' } }, t0, t1),
  makeSession('runqlat', 'Run Queue Latency: whole system, per process', { scope: 'whole system, per process', per: 'process', unit: 'us', updates: rqUpdates, ended: { reason: 'stopped' } }, t0, t1),
  makeSession(
    'memleak',
    'Leaks: pid 7',
    {
      totalBytes: 3072,
      totalAllocations: 3,
      dropped: 0,
      stacks: [{ key: '0x401000,0x401100', bytes: 3072, allocations: 3, oldestAgeMs: 900, history: [1024, 2048, 3072], site: '/src/leaky.c:12', frames: [{ address: '0x401000', module: 'leaky', function: 'leak_some', file: '/src/leaky.c', line: 12 }, { address: '0x401100', module: 'leaky', function: 'main' }] }],
    },
    t0,
    t1,
  ),
  makeSession('profile', 'CPU: pid 9 (app)', { profile: { ...fromFolded('main;work;hot 30\nmain;idle 10\n', 'app'), frequency: 99, lost: 1 }, warnings: ['no -XX:+PreserveFramePointer'] }, t0, t1),
];
// A Java heap session as the live view builds it: sites from the agent, lenses on workspace
// lines, each site's live bytes at every update.
const jframe = (fn: string, file: string, line: number) => ({ address: '0x0', module: '[java]', function: fn, file, line });
const jbase = { bytesStdErr: 0, allocationsStdErr: 0, oldestAgeMs: 1, allocatedBytes: 0, allocatedObjects: 0, allocatedBytesStdErr: 0 };
const heapStacks: JavaHeapStack[] = [
  { ...jbase, bytes: 48e6, allocations: 12_000, bytesStdErr: 2.1e6, allocationsStdErr: 520, oldestAgeMs: 9000, class: 'long[]', survivedGcs: 9, growthBytesPerSecond: 2.1e6, leakCandidate: true, evidence: 'live bytes grew across 9 GCs', frames: [jframe('HeapSites.leak', 'HeapSites.java', 40), jframe('HeapSites.main', 'HeapSites.java', 12)] },
  { ...jbase, bytes: 1.5e6, allocations: 3, class: 'byte[]', survivedGcs: 1, growthBytesPerSecond: 0, leakCandidate: false, frames: [jframe('java.util.ArrayList.grow', 'java/util/ArrayList.java', 237)] },
];
const heapHistory = new Map([[javaHeapStackKey(heapStacks[0]), [16e6, 32e6, 48e6]]]);
const heapLenses = javaLeakLenses(heapStacks, (rel) => (rel === 'HeapSites.java' ? `/ws/${rel}` : undefined));
const heapData = { pid: 4711, totalBytes: 49.5e6, totalAllocations: 12_003, sampleBytes: 524288, stacks: javaHeapViewStacks(heapStacks, heapHistory, heapLenses) };
const heapSession = makeSession('java-heap', 'Java heap leaks of pid 4711', heapData, t0, t1);

// A Java agent profile: frame types (javaType) are part of the saved profile.
const javaSession = makeSession('profile', 'CPU: pid 10 (java)', { profile: { ...fromFolded('Work.main_[0];Work.run_[1];Work.hot_[j];Work.step_[i] 5\n', 'java'), frequency: 99 }, warnings: [] }, t0, t1);

test('a profile session keeps Java frame types, and refuses a type it does not know', () => {
  const back = readSession(writeSession(javaSession), 'x.ebpf-session.json') as typeof javaSession;
  assert.deepEqual(back, JSON.parse(JSON.stringify(javaSession)));
  assert.deepEqual(back.data.profile.frames.map((f) => f.javaType ?? '-'), ['-', 'c1', '-', 'inlined']);
  const bad = JSON.parse(writeSession(javaSession));
  bad.data.profile.frames[1].javaType = 'c3';
  assert.throws(() => readSession(JSON.stringify(bad), 'x.ebpf-session.json'), /javaType must be one of interpreted, c1, c2, compiled, inlined/);
});

test('java-heap: a reopened session replays the snapshot the live view last drew, stopped: same rows, classes, figures', () => {
  const back = readSession(writeSession(heapSession), 'x.ebpf-session.json');
  assert.deepEqual(back, JSON.parse(JSON.stringify(heapSession)));
  assert.equal(viewOf('java-heap'), 'memleak');
  const messages = replayMessages(back);
  assert.equal(messages.length, 1);
  const live = javaHeapSnapshot('Java heap leaks of pid 4711', true, heapData);
  assert.deepEqual(messages[0], JSON.parse(JSON.stringify({ ...live, running: false })), 'the live snapshot, only stopped');
  const m = messages[0] as typeof live;
  // What the view draws from it: the same rows as live, the allocated class in the stack title.
  assert.deepEqual(toRows(m.stacks), toRows(live.stacks));
  const rows = toRows(m.stacks);
  assert.deepEqual(rows.map((r) => r.frames[0].label), ['HeapSites.leak → new long[] — HeapSites.java:40', 'java.util.ArrayList.grow → new byte[] — ArrayList.java:237']);
  assert.equal(rows[0].bytes, '≈45.8 MB ± 2 MB', 'binary units, as the live view shows them');
  assert.equal(rows[0].site, '/ws/HeapSites.java:40');
  assert.equal(rows[1].site, undefined, 'a JDK line has no lens');
  assert.deepEqual(m.stacks[0].history, [16e6, 32e6, 48e6]);
  assert.deepEqual(m.stacks[1].history, [1.5e6], 'a site without history starts at its bytes');
  assert.equal(m.sampleBytes, 524288);
  assert.equal(m.dropped, 0);
  assert.deepEqual(totalsText(m.totalBytes, m.totalAllocations, Boolean(m.sampleBytes)).text, totalsText(49.5e6, 12_003, true).text);
  // The Java figures stay in the document (for Export and for the CodeLens text).
  const saved = (back as typeof heapSession).data.stacks[0];
  assert.deepEqual([saved.class, saved.survivedGcs, saved.growthBytesPerSecond, saved.leakCandidate, saved.evidence], ['long[]', 9, 2.1e6, true, 'live bytes grew across 9 GCs']);
});

test('java-heap: broken session data is refused, naming the field', () => {
  const good = JSON.parse(writeSession(heapSession));
  refuses(JSON.stringify({ ...good, data: { ...good.data, sampleBytes: undefined } }), /needs pid, totalBytes, totalAllocations, sampleBytes and stacks/);
  refuses(JSON.stringify({ ...good, data: { ...good.data, stacks: [{ ...good.data.stacks[0], class: 7 }] } }), /data\.stacks\[0\] needs bytes, allocations, class, key, frames and history/);
});

for (const s of [...sessions, heapSession]) {
  test(`${s.tracer}: a session file round trips unchanged and replays into its view`, () => {
    const text = writeSession(s);
    const back = readSession(text, 'x.ebpf-session.json');
    assert.deepEqual(back, JSON.parse(JSON.stringify(s)));
    assert.equal(back.format, 'ebpf-studio-session');
    assert.equal(back.version, 1);
    assert.equal(back.tracer, s.tracer);
    const messages = replayMessages(back) as { type: string }[];
    assert.ok(messages.length >= 1);
    const name = sessionFileName(back);
    assert.ok(name.startsWith(`${s.tracer}-2026-11-23T08-00-00`) && name.endsWith(SESSION_SUFFIX), name);
  });
}

test('replay: GC and run-queue sessions resend init, every update in order, then ended', () => {
  const gc = replayMessages(readSession(writeSession(sessions[0]))) as { type: string; update?: JavaGcUpdate; reason?: string }[];
  assert.deepEqual(gc.map((m) => m.type), ['init', 'update', 'update', 'ended']);
  assert.equal(gc[2].update!.events[0].durationNs, 40_000_000);
  assert.equal(gc[3].reason, 'target-exited');
  const rq = replayMessages(readSession(writeSession(sessions[1]))) as { type: string; per?: string; tracer?: string }[];
  assert.deepEqual(rq.map((m) => m.type), ['init', 'update', 'ended']);
  assert.equal(rq[0].per, 'process');
  assert.equal(rq[0].tracer, 'runqlat', 'the kit view is told which tracer it shows');
  const leaks = replayMessages(readSession(writeSession(sessions[2]))) as { type: string; running?: boolean; totalBytes?: number }[];
  assert.deepEqual([leaks[0].type, leaks[0].running, leaks[0].totalBytes], ['snapshot', false, 3072]);
  const prof = replayMessages(readSession(writeSession(sessions[3]))) as { type: string; profile?: { total: number } }[];
  assert.deepEqual([prof[0].type, prof[0].profile!.total], ['profile', 40]);
  assert.deepEqual(sessions.map((s) => viewOf(s.tracer)), ['javaGc', 'latencyKit', 'memleak', 'flamegraph']);
});

function refuses(text: string, pattern: RegExp): void {
  assert.throws(
    () => readSession(text, 'bad.ebpf-session.json'),
    (e: unknown) => e instanceof StudioError && e.kind === 'input' && pattern.test(e.message),
  );
}

test('bad files: not JSON, another format, bad or future versions, unknown tracers, broken data', () => {
  const good = JSON.parse(writeSession(sessions[3]));
  refuses('{"format": ', /not JSON/);
  refuses(JSON.stringify({ ...good, format: 'speedscope' }), /not an eBPF Studio session/);
  refuses(JSON.stringify({ ...good, version: 2 }), /version 2 session, written by a newer eBPF Studio; this one reads version 1\. Update the extension/);
  refuses(JSON.stringify({ ...good, version: 0 }), /invalid version 0/);
  refuses(JSON.stringify({ ...good, version: '1' }), /invalid version "1"/);
  refuses(JSON.stringify({ ...good, tracer: 'no-such-tracer' }), new RegExp(`unknown tracer "no-such-tracer"; known: ${SESSION_TRACERS.join(', ')}$`));
  // The JVM timeline's sessions share the envelope and open in their own view.
  refuses(JSON.stringify({ format: 'ebpf-studio-session', version: 1, tracer: 'jvm', savedAt: t0.toISOString(), result: {} }), /JVM timeline session: open it with "eBPF: Open JVM Timeline"/);
  assert.equal(peekTracer(JSON.stringify({ format: 'ebpf-studio-session', version: 1, tracer: 'jvm' })), 'jvm');
  assert.equal(peekTracer('{"format":"speedscope"}'), undefined);
  assert.equal(peekTracer('not json'), undefined);
  refuses(JSON.stringify({ ...good, startedAt: 'yesterday' }), /startedAt/);
  refuses(JSON.stringify({ ...good, data: { ...good.data, profile: { ...good.data.profile, stacks: [{ frames: [0, 99], weight: 1 }] } } }), /frame 99, which does not exist/);
  const gc = JSON.parse(writeSession(sessions[0]));
  refuses(JSON.stringify({ ...gc, data: { ...gc.data, updates: [{ lost: 0 }] } }), /updates\[0\] has no "events"/);
  const rq = JSON.parse(writeSession(sessions[1]));
  refuses(JSON.stringify({ ...rq, data: { ...rq.data, unit: 'ns' } }), /unit \("us"\|"ms"\)/);
  const ml = JSON.parse(writeSession(sessions[2]));
  refuses(JSON.stringify({ ...ml, data: { stacks: [] } }), /totalBytes/);
});

test('.cpuprofile: samples keep their time order, hitCount without samples, the synthetic root dropped', () => {
  const nodes = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [2] },
    { id: 2, callFrame: { functionName: 'main', url: 'file:///src/app.js', lineNumber: 0 }, children: [3, 4], hitCount: 1 },
    { id: 3, callFrame: { functionName: 'parse', url: 'file:///src/app.js', lineNumber: 9 }, hitCount: 2 },
    { id: 4, callFrame: { functionName: '', url: 'file:///src/app.js', lineNumber: 19 }, hitCount: 3 },
  ];
  const p = fromCpuProfile({ nodes, samples: [3, 3, 4, 2, 4, 4], timeDeltas: [1, 1, 1, 1, 1, 1] }, 'app.cpuprofile');
  const names = (s: { frames: number[] }) => s.frames.map((f) => p.frames[f].name).join(';');
  assert.deepEqual(p.stacks.map((s) => [names(s), s.weight]), [['main;parse', 2], ['main;(anonymous)', 1], ['main', 1], ['main;(anonymous)', 2]]);
  assert.equal(p.total, 6);
  const parse = p.frames.find((f) => f.name === 'parse')!;
  assert.deepEqual([parse.file, parse.line], ['/src/app.js', 10]);
  const byHits = fromCpuProfile({ nodes });
  assert.equal(byHits.total, 6);
  assert.throws(() => fromCpuProfile({ samples: [] }), /needs a "nodes" array/);
  assert.throws(() => fromCpuProfile({ nodes, samples: [77] }), /node 77/);
});

test('a GC or latency session names where its target ran: the container read back as written, null for the host, a broken one refused', () => {
  const c = { runtime: 'podman', id: 'f'.repeat(64), name: 'shop', image: 'localhost/shop:2' };
  const gc = makeSession('java-gc', 'Java GC: pid 42', { target: 'pid 42', container: c, updates: gcUpdates }, t0, t1);
  assert.deepEqual((readSession(writeSession(gc)).data as { container?: unknown }).container, c);
  const rq = makeSession('runqlat', 'Run Queue Latency: pid 42', { scope: 'pid 42', container: null, per: 'none', unit: 'us', updates: rqUpdates }, t0, t1);
  assert.equal((readSession(writeSession(rq)).data as { container?: unknown }).container, null);
  refuses(JSON.stringify({ ...gc, data: { ...gc.data, container: { runtime: 'podman' } } }), /data\.container must be null or \{"runtime","id"\}/);
  refuses(JSON.stringify({ ...rq, data: { ...rq.data, container: { ...c, image: 7 } } }), /data\.container must be null/);
});
