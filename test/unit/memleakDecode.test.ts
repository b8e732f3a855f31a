// The memleak decoders against bytes laid out as bpf/memleak.h says, and the exact aggregation
// (minimum age, oldest age, ordering) the reports rely on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { aggregate, ageMs, ALLOC_SIZE, CNT, CNT_MAX, decodeAlloc, decodeAllocDump, decodeExitEvent, decodeTotals, EXIT_EVENT_SIZE, TOTALS_SIZE } from '../../extension/tracers/memleak/decode';

function alloc(size: number, ts: bigint, stackId: number): Buffer {
  const b = Buffer.alloc(ALLOC_SIZE);
  b.writeBigUInt64LE(BigInt(size), 0);
  b.writeBigUInt64LE(ts, 8);
  b.writeBigInt64LE(BigInt(stackId), 16);
  return b;
}
function key(addr: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(addr);
  return b;
}

test('sizes and counter indexes match bpf/memleak.h', () => {
  const h = fs.readFileSync(path.join(__dirname, '../../bpf/memleak.h'), 'utf8');
  const def = (n: string) => Number(new RegExp(`#define ${n} (\\d+)`).exec(h)?.[1]);
  assert.equal(def('MEMLEAK_ALLOC_SIZE'), ALLOC_SIZE);
  assert.equal(def('MEMLEAK_TOTALS_SIZE'), TOTALS_SIZE);
  assert.equal(def('MEMLEAK_EXIT_EVENT_SIZE'), EXIT_EVENT_SIZE);
  assert.equal(def('MEMLEAK_CNT_MAX'), CNT_MAX);
  assert.equal(def('MEMLEAK_CNT_ALLOCS_FULL'), CNT.allocsFull);
  assert.equal(def('MEMLEAK_CNT_STACK_LOST'), CNT.stackLost);
  assert.equal(def('MEMLEAK_CNT_EXIT_LOST'), CNT.exitLost);
});

test('decodeAlloc reads size, timestamp and a negative stack id', () => {
  const r = decodeAlloc(key(0x7f0012345678n), alloc(4096, 123456789012345n, -1));
  assert.deepEqual(r, { address: 0x7f0012345678n, size: 4096, timestampNs: 123456789012345n, stackId: -1 });
});

test('decodeAllocDump splits back-to-back keys and values', () => {
  const dump = { keys: Buffer.concat([key(0x1000n), key(0x2000n)]), values: Buffer.concat([alloc(10, 5n, 3), alloc(20, 6n, 4)]), count: 2 };
  const r = decodeAllocDump(dump);
  assert.deepEqual(
    r.map((x) => [x.address, x.size, x.stackId]),
    [
      [0x1000n, 10, 3],
      [0x2000n, 20, 4],
    ],
  );
});

test('decodeTotals and decodeExitEvent', () => {
  const k = Buffer.alloc(8);
  k.writeBigInt64LE(7n);
  const v = Buffer.alloc(16);
  v.writeBigUInt64LE(3000n, 0);
  v.writeBigUInt64LE(3n, 8);
  assert.deepEqual(decodeTotals(k, v), { stackId: 7, bytes: 3000, count: 3 });
  const e = Buffer.alloc(8);
  e.writeUInt32LE(1234, 0);
  e.writeUInt32LE(1240, 4);
  assert.deepEqual(decodeExitEvent(e), { tgid: 1234, tid: 1240 });
});

test('aggregate groups by stack, largest first, with the oldest timestamp', () => {
  const ms = 1_000_000n;
  const recs = [
    { address: 1n, size: 1000, timestampNs: 100n * ms, stackId: 1 },
    { address: 2n, size: 1000, timestampNs: 50n * ms, stackId: 1 },
    { address: 3n, size: 5000, timestampNs: 900n * ms, stackId: 2 },
    { address: 4n, size: 10, timestampNs: 10n * ms, stackId: -1 },
  ];
  const now = 1000n * ms;
  const all = aggregate(recs, now, 0);
  assert.deepEqual(
    all.map((a) => [a.stackId, a.bytes, a.allocations, ageMs(now, a.oldestNs)]),
    [
      [2, 5000, 1, 100],
      [1, 2000, 2, 950],
      [-1, 10, 1, 990],
    ],
  );
  // min age 500 ms: the 100 ms-old block and nothing else drops out; counts stay exact
  const old = aggregate(recs, now, 500);
  assert.deepEqual(
    old.map((a) => [a.stackId, a.bytes, a.allocations]),
    [
      [1, 2000, 2],
      [-1, 10, 1],
    ],
  );
  // exactly at the threshold counts as old enough
  assert.equal(aggregate(recs, now, 950).find((a) => a.stackId === 1)?.allocations, 1);
  assert.equal(ageMs(5n, 10n), 0);
});
