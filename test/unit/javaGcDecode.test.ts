// The Java GC decoder against handcrafted records laid out as bpf/java-gc.h says, and the
// header's sizes against the decoder's constants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { decodeJavaGcEvent, decodeRawGcEvent, JAVA_GC_EVENT_SIZE, JAVA_GC_HEADER_SIZE, JAVA_GC_MAX_POOLS, JAVA_GC_POOL_NAME_LEN, JAVA_GC_POOL_SIZE, javaGcTracer, POOL_HAS_AFTER, POOL_HAS_BEFORE } from '../../extension/tracers/javaGc';
import { repoRoot } from '../helpers';

interface PoolSpec {
  ptr: bigint;
  before: bigint;
  after: bigint;
  committed: bigint;
  flags: number;
  name: string;
}

function record(h: { start: bigint; dur: bigint; pid: number; tid: number; cpu: number; full: number }, pools: PoolSpec[]): Buffer {
  const b = Buffer.alloc(JAVA_GC_EVENT_SIZE, 0xee); // garbage everywhere the kernel would not write
  b.writeBigUInt64LE(h.start, 0);
  b.writeBigUInt64LE(h.dur, 8);
  b.writeUInt32LE(h.pid, 16);
  b.writeUInt32LE(h.tid, 20);
  b.writeUInt32LE(h.cpu, 24);
  b.writeUInt8(h.full, 28);
  b.writeUInt32LE(pools.length, 32);
  pools.forEach((p, i) => {
    const o = 40 + i * 88;
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
  assert.equal(JAVA_GC_EVENT_SIZE, 1448);
});

test('decodes header and pools of a full GC', () => {
  const b = record({ start: 123_456_789_012n, dur: 1_731_787n, pid: 20540, tid: 20547, cpu: 1, full: 1 }, [
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
  const b = record({ start: 1n, dur: 80_000n, pid: 1, tid: 2, cpu: 0, full: 0 }, [{ ptr: 1n, before: 5n, after: 5n, committed: 6n, flags: both, name: long }]);
  assert.equal(decodeJavaGcEvent(b).full, false);
  assert.equal(decodeJavaGcEvent(b).pools[0].name, long);
  b.writeUInt32LE(999, 32);
  assert.equal(decodeRawGcEvent(b).pools.length, JAVA_GC_MAX_POOLS);
});

test('a short record names the mismatch instead of reading out of bounds', () => {
  assert.throws(() => decodeJavaGcEvent(Buffer.alloc(100)), /expected 1448.*rebuild/);
});

test('options: a pid is required unless all, minUs bounded', () => {
  assert.deepEqual(javaGcTracer.validate({ pid: 42 }), { pid: 42, all: false, minUs: 0 });
  assert.deepEqual(javaGcTracer.validate({ all: true, minUs: 500 }), { pid: 0, all: true, minUs: 500 });
  assert.throws(() => javaGcTracer.validate({}), /pid is required/);
  assert.throws(() => javaGcTracer.validate({ pid: -1 }), /pid must be between/);
  assert.throws(() => javaGcTracer.validate({ pid: 1, minUs: 1.5 }), /minUs must be an integer/);
  assert.throws(() => javaGcTracer.validate({ pid: 1, all: 'yes' }), /all must be true or false/);
});
