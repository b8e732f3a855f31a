// The Java GC decoder against handcrafted records laid out as bpf/java-gc.h says, and the
// header's sizes against the decoder's constants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { CTR_HIST_FULL, decodeHistEntries, decodeJavaGcEvent, decodeRawGcEvent, decodeSafepoint, EV_CYCLE, JAVA_GC_HIST_EDGES_NS, JAVA_GC_HIST_KEY_SIZE, JAVA_GC_HIST_SLOTS, JAVA_GC_HIST_VALUE_SIZE, JAVA_SAFEPOINT_EVENT_SIZE, JAVA_GC_EVENT_SIZE, JAVA_GC_HEADER_SIZE, JAVA_GC_MAX_POOLS, JAVA_GC_POOL_NAME_LEN, JAVA_GC_POOL_SIZE, POOL_HAS_AFTER, POOL_HAS_BEFORE } from '../../extension/tracers/javaGc/decode';
import { javaGcTracer } from '../../extension/tracers/javaGc/tracer';
import { JVM_LAUNCHERS, launcherNames } from '../../extension/tracers/javaGc/jvms';
import { PAUSE_BUCKETS_S } from '../../extension/agent/exposition';
import { repoRoot } from '../helpers';

interface PoolSpec {
  ptr: bigint;
  before: bigint;
  after: bigint;
  committed: bigint;
  flags: number;
  name: string;
}

interface Head {
  start: bigint;
  dur: bigint;
  pid: number;
  tid: number;
  cpu: number;
  full: number;
  flags?: number;
  seq?: number;
  manager?: string;
  vmop?: string;
}

function record(h: Head, pools: PoolSpec[]): Buffer {
  const b = Buffer.alloc(JAVA_GC_EVENT_SIZE, 0xee); // garbage everywhere the kernel would not write
  b.writeBigUInt64LE(h.start, 0);
  b.writeBigUInt64LE(h.dur, 8);
  b.writeBigUInt64LE(h.start, 16);
  b.writeUInt32LE(h.pid, 32);
  b.writeUInt32LE(h.tid, 36);
  b.writeUInt32LE(h.cpu, 40);
  b.writeUInt8(h.full, 44);
  b.writeUInt8(h.flags ?? 0, 45);
  b.writeUInt8(h.seq ?? 0, 46);
  b.writeUInt32LE(pools.length, 48);
  b.fill(0, 64, 144);
  b.write(h.manager ?? '', 64, 'utf8');
  b.write(h.vmop ?? '', 96, 'utf8');
  pools.forEach((p, i) => {
    const o = 144 + i * 88;
    b.writeBigUInt64LE(p.ptr, o);
    b.writeBigUInt64LE(p.before, o + 8);
    b.writeBigUInt64LE(p.after, o + 16);
    b.writeBigUInt64LE(p.committed, o + 24);
    b.writeUInt32LE(p.flags, o + 32);
    b.fill(0, o + 40, o + 88);
    b.write(p.name, o + 40, 'utf8');
  });
  return b;
}

const both = POOL_HAS_BEFORE | POOL_HAS_AFTER;

test('constants match bpf/java-gc.h', () => {
  const h = fs.readFileSync(path.join(repoRoot, 'bpf', 'java-gc.h'), 'utf8');
  const def = (name: string) => Number(new RegExp(`#define ${name} (\\d+)`).exec(h)?.[1]);
  assert.equal(def('JAVA_GC_MAX_POOLS'), JAVA_GC_MAX_POOLS);
  assert.equal(def('JAVA_GC_POOL_NAME_LEN'), JAVA_GC_POOL_NAME_LEN);
  assert.equal(def('JAVA_GC_POOL_SIZE'), JAVA_GC_POOL_SIZE);
  assert.equal(def('JAVA_GC_HEADER_SIZE'), JAVA_GC_HEADER_SIZE);
  assert.equal(def('JAVA_GC_POOL_HAS_BEFORE'), POOL_HAS_BEFORE);
  assert.equal(def('JAVA_GC_POOL_HAS_AFTER'), POOL_HAS_AFTER);
  assert.equal(def('JAVA_GC_EV_CYCLE'), EV_CYCLE);
  assert.equal(def('JAVA_SAFEPOINT_EVENT_SIZE'), JAVA_SAFEPOINT_EVENT_SIZE);
  assert.equal(JAVA_GC_EVENT_SIZE, 1552);
});

test('decodes header and pools of a full GC', () => {
  const b = record({ start: 123_456_789_012n, dur: 1_731_787n, pid: 20540, tid: 20547, cpu: 1, full: 1, manager: 'MarkSweepCompact', vmop: 'GenCollectFull' }, [
    { ptr: 0x7f00_0000_1000n, before: 4_421_456n, after: 0n, committed: 17_891_328n, flags: both, name: 'Eden Space' },
    { ptr: 0x7f00_0000_2000n, before: 735_872n, after: 801_424n, committed: 44_761_088n, flags: both, name: 'Tenured Gen' },
    { ptr: 0x7f00_0000_3000n, before: 0n, after: 9n, committed: 9n, flags: POOL_HAS_AFTER, name: 'Half Seen' },
  ]);
  const raw = decodeRawGcEvent(b);
  assert.equal(raw.pools.length, 3);
  assert.equal(raw.pools[0].namePtr, 0x7f00_0000_1000n);
  const e = decodeJavaGcEvent(b);
  assert.deepEqual(e, {
    pid: 20540,
    tid: 20547,
    cpu: 1,
    timestampNs: 123_456_789_012,
    durationNs: 1_731_787,
    collector: 'MarkSweepCompact',
    kind: 'full',
    operation: 'GenCollectFull',
    escalated: false,
    full: true,
    pools: [
      { name: 'Eden Space', usedBefore: 4_421_456, usedAfter: 0, committedAfter: 17_891_328 },
      { name: 'Tenured Gen', usedBefore: 735_872, usedAfter: 801_424, committedAfter: 44_761_088 },
    ],
  });
});

test('a young GC, a 32-character pool name, and an npools beyond the array are bounded', () => {
  const long = "CodeHeap 'non-profiled nmethods'";
  assert.equal(long.length, 32);
  const b = record({ start: 1n, dur: 80_000n, pid: 1, tid: 2, cpu: 0, full: 0, manager: 'Copy' }, [{ ptr: 1n, before: 5n, after: 5n, committed: 6n, flags: both, name: long }]);
  assert.equal(decodeJavaGcEvent(b).full, false);
  assert.equal(decodeJavaGcEvent(b).kind, 'young');
  assert.equal(decodeJavaGcEvent(b).pools[0].name, long);
  b.writeUInt32LE(999, 48);
  assert.equal(decodeRawGcEvent(b).pools.length, JAVA_GC_MAX_POOLS);
});

test('the collection a young one escalated into; gc__begin full=0 does not make a full collection young', () => {
  const e = decodeJavaGcEvent(record({ start: 5n, dur: 9n, pid: 1, tid: 2, cpu: 0, full: 0, seq: 1, manager: 'MarkSweepCompact', vmop: 'GenCollectForAllocation' }, []));
  assert.deepEqual([e.collector, e.kind, e.escalated, e.full], ['MarkSweepCompact', 'full', true, true]);
});

test('pauses without pool probes are named from their VM operation; cycles from their manager', () => {
  const pause = (vmop: string) => decodeJavaGcEvent(record({ start: 5n, dur: 9n, pid: 1, tid: 2, cpu: 0, full: 0, vmop }, []));
  assert.deepEqual([pause('G1PauseRemark').collector, pause('G1PauseRemark').kind], ['G1 Concurrent GC', 'concurrent-pause']);
  assert.deepEqual([pause('ZMarkStart').collector, pause('ZMarkStart').kind], ['ZGC Pauses', 'concurrent-pause']);
  assert.deepEqual([pause('Shenandoah Init Marking').collector, pause('Shenandoah Init Marking').kind], ['Shenandoah Pauses', 'concurrent-pause']);
  assert.deepEqual([pause('Shenandoah Degenerated GC').collector, pause('Shenandoah Degenerated GC').kind], ['Shenandoah Pauses', 'degenerated']);
  assert.deepEqual([pause('').collector, pause('').kind], ['unknown', 'pause']);
  const cycle = decodeJavaGcEvent(record({ start: 5n, dur: 9n, pid: 1, tid: 2, cpu: 0, full: 0, flags: EV_CYCLE, manager: 'ZGC Cycles', vmop: 'ZMarkStart' }, []));
  assert.deepEqual([cycle.collector, cycle.kind, cycle.operation], ['ZGC Cycles', 'concurrent-cycle', '']);
  for (const [m, k] of [['PS Scavenge', 'young'], ['PS MarkSweep', 'full'], ['G1 Young Generation', 'young'], ['G1 Old Generation', 'full'], ['Shenandoah Cycles', 'concurrent-cycle']]) {
    assert.equal(decodeJavaGcEvent(record({ start: 5n, dur: 9n, pid: 1, tid: 2, cpu: 0, full: 0, manager: m }, [])).kind, k, m);
  }
});

test('safepoint records', () => {
  const b = Buffer.alloc(JAVA_SAFEPOINT_EVENT_SIZE);
  b.writeBigUInt64LE(1000n, 0);
  b.writeBigUInt64LE(40n, 8);
  b.writeBigUInt64LE(900n, 16);
  b.writeUInt32LE(7, 24);
  b.writeUInt32LE(9, 28);
  b.write('G1CollectForAllocation', 32);
  assert.deepEqual(decodeSafepoint(b), { timestampNs: 1000, timeToSafepointNs: 40, durationNs: 900, pid: 7, tid: 9, operation: 'G1CollectForAllocation' });
  assert.throws(() => decodeSafepoint(Buffer.alloc(10)), /expected 80.*rebuild/);
});

test('a short record names the mismatch instead of reading out of bounds', () => {
  assert.throws(() => decodeJavaGcEvent(Buffer.alloc(100)), /expected 1552.*rebuild/);
});

test('options: a pid is required unless all, minUs bounded', () => {
  assert.deepEqual(javaGcTracer.validate({ pid: 42 }), { pid: 42, all: false, minUs: 0 });
  assert.deepEqual(javaGcTracer.validate({ all: true, minUs: 500 }), { pid: 0, all: true, minUs: 500 });
  assert.throws(() => javaGcTracer.validate({}), /pid is required/);
  assert.throws(() => javaGcTracer.validate({ pid: -1 }), /pid must be between/);
  assert.throws(() => javaGcTracer.validate({ pid: 1, minUs: 1.5 }), /minUs must be an integer/);
  assert.throws(() => javaGcTracer.validate({ pid: 1, all: 'yes' }), /all must be true or false/);
});

/** One `hists` entry as bpf/java-gc.h lays it out (strings zero-padded, epoch last). */
function histEntry(pid: number, what: number, manager: string, vmop: string, slots: Record<number, number>, sumNs: bigint): { key: Buffer; value: Buffer } {
  const key = Buffer.alloc(JAVA_GC_HIST_KEY_SIZE);
  key.writeUInt32LE(pid, 0);
  key.writeUInt32LE(what, 4);
  key.write(manager, 8, 'utf8');
  key.write(vmop, 40, 'utf8');
  key.writeUInt32LE(7, 88);
  const value = Buffer.alloc(JAVA_GC_HIST_VALUE_SIZE);
  for (const [i, n] of Object.entries(slots)) value.writeBigUInt64LE(BigInt(n), Number(i) * 8);
  value.writeBigUInt64LE(sumNs, JAVA_GC_HIST_SLOTS * 8);
  return { key, value };
}

test('metrics-only histograms: layout and edges match bpf/java-gc.h and the agent\'s Prometheus bounds', () => {
  const h = fs.readFileSync(path.join(repoRoot, 'bpf', 'java-gc.h'), 'utf8');
  const def = (name: string) => Number(new RegExp(`#define ${name} (\\d+)`).exec(h)?.[1]);
  assert.equal(def('JAVA_GC_HIST_KEY_SIZE'), JAVA_GC_HIST_KEY_SIZE);
  assert.equal(def('JAVA_GC_HIST_VALUE_SIZE'), JAVA_GC_HIST_VALUE_SIZE);
  assert.equal(def('JAVA_GC_HIST_NR_EDGES'), JAVA_GC_HIST_EDGES_NS.length);
  assert.equal(def('JAVA_GC_CTR_HIST_FULL'), CTR_HIST_FULL);
  const edges = /#define JAVA_GC_HIST_EDGES_NS([^#]*)/.exec(h)![1].match(/\d+ULL/g)!.map((e) => Number(e.slice(0, -3)));
  assert.deepEqual(edges, JAVA_GC_HIST_EDGES_NS);
  // The kernel's slots are the exposition's buckets: the series read the same either way.
  assert.deepEqual(JAVA_GC_HIST_EDGES_NS.map((e) => e / 1e9), PAUSE_BUCKETS_S);
});

test('metrics-only histograms: entries named like events, one per JVM and collector, safepoints per JVM', () => {
  const entries = [
    histEntry(10, 0, 'Copy', 'GenCollectForAllocation', { 0: 1, 3: 4 }, 123_000n),
    histEntry(10, 0, 'Copy', 'GenCollectFull', { 19: 1 }, 20_000_000_000n), // same collector, other operation
    histEntry(10, 0, '', 'G1PauseRemark', { 5: 2 }, 900_000n), // no pool probe: named from the operation
    histEntry(10, 1, '', '', { 1: 3 }, 45_000n),
    histEntry(11, 0, 'MarkSweepCompact', 'GenCollectFull', { 9: 1 }, 8_000_000n),
  ];
  const got = decodeHistEntries(Buffer.concat(entries.map((e) => e.key)), Buffer.concat(entries.map((e) => e.value)), entries.length);
  const slots = (m: Record<number, number>) => Array.from({ length: JAVA_GC_HIST_SLOTS }, (_, i) => m[i] ?? 0);
  assert.deepEqual(got, [
    { pid: 10, what: 'pause', collector: 'Copy', kind: 'young', counts: slots({ 0: 1, 3: 4, 19: 1 }), sumNs: 20_000_123_000 },
    { pid: 10, what: 'pause', collector: 'G1 Concurrent GC', kind: 'concurrent-pause', counts: slots({ 5: 2 }), sumNs: 900_000 },
    { pid: 10, what: 'safepoint', counts: slots({ 1: 3 }), sumNs: 45_000 },
    { pid: 11, what: 'pause', collector: 'MarkSweepCompact', kind: 'full', counts: slots({ 9: 1 }), sumNs: 8_000_000 },
  ]);
  assert.deepEqual(decodeHistEntries(Buffer.alloc(0), Buffer.alloc(0), 0), []);
  assert.throws(() => decodeHistEntries(Buffer.alloc(90), Buffer.alloc(168), 1), /expected 92 \+ 168.*rebuild/);
});

test('options: metricsOnly is a boolean, left out unless set', () => {
  assert.deepEqual(javaGcTracer.validate({ all: true, metricsOnly: true }), { pid: 0, all: true, minUs: 0, metricsOnly: true });
  assert.deepEqual(javaGcTracer.validate({ all: true, metricsOnly: false }), { pid: 0, all: true, minUs: 0 });
  assert.throws(() => javaGcTracer.validate({ all: true, metricsOnly: 1 }), /metricsOnly must be true or false/);
});

test('options: launchers are program names, 24 at most; as comm keeps them, the JDK\'s first', () => {
  assert.deepEqual(javaGcTracer.validate({ all: true, launchers: ['orderservice'] }), { pid: 0, all: true, minUs: 0, launchers: ['orderservice'] });
  assert.throws(() => javaGcTracer.validate({ all: true, launchers: ['/opt/app/bin/orderservice'] }), /is not a program name: give the base name/);
  assert.throws(() => javaGcTracer.validate({ all: true, launchers: [''] }), /is not a program name/);
  assert.throws(() => javaGcTracer.validate({ all: true, launchers: Array.from({ length: 25 }, (_, i) => `l${i}`) }), /launchers must be an array of at most 24 strings/);
  const names = launcherNames(['orderservice', 'java', 'a-launcher-name-over-15-bytes']).map((b) => b.toString('latin1'));
  assert.deepEqual(names, [...JVM_LAUNCHERS, 'orderservice', 'a-launcher-name']);
});
