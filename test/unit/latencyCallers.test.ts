// "By caller" in user space: the kernel's per-return-address records decoded, named by the
// function each address is in (the innermost inlined one first) and merged per function; the
// CLI's table of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CALLER_VALUE_SIZE, decodeCallers, mergeCallers, type CallSite } from '../../extension/tracers/latency/callers';
import { callersText } from '../../extension/model/latencyFormat';
import type { Frame } from '../../extension/protocol/frames';

function record(address: bigint, count: number, sumNs: number, maxNs: number, slot: number): { key: Buffer; value: Buffer } {
  const key = Buffer.alloc(8);
  key.writeBigUInt64LE(address);
  const value = Buffer.alloc(CALLER_VALUE_SIZE);
  value.writeBigUInt64LE(BigInt(count), 0);
  value.writeBigUInt64LE(BigInt(sumNs), 8);
  value.writeBigUInt64LE(BigInt(maxNs), 16);
  value.writeBigUInt64LE(BigInt(count), 24 + slot * 8);
  return { key, value };
}

const frame = (fn: string, line: number, inlined?: string): Frame => ({ address: '0x1', module: '/bin/app', function: fn, file: '/src/app.c', line, ...(inlined ? { inlined: [{ function: inlined, file: '/src/inl.h', line: 7 }] } : {}) }) as Frame;

test('decodeCallers reads each return address with its count, sum, max and log2 slots', () => {
  const a = record(0x401234n, 3, 3000, 2000, 10);
  const b = record(0x7f0000001000n, 1, 500, 500, 9);
  const sites = decodeCallers({ keys: Buffer.concat([a.key, b.key]), values: Buffer.concat([a.value, b.value]), count: 2 } as never);
  assert.deepEqual(
    sites.map((s) => [s.address, s.count, s.sumNs, s.maxNs, s.slots[10], s.slots[9]]),
    [
      [0x401234n, 3, 3000, 2000, 3, 0],
      [0x7f0000001000n, 1, 500, 500, 0, 1],
    ],
  );
});

test('mergeCallers: call sites of one function are one row, the innermost inlined caller names its own, unnamed ones keep their address', () => {
  const site = (address: bigint, count: number, sumNs: number, maxNs: number): CallSite => ({ address, count, sumNs, maxNs, slots: [0, count] });
  const rows = mergeCallers(
    [site(1n, 5, 500, 200), site(2n, 7, 700, 150), site(3n, 2, 9000, 8000), site(0xdeadn, 1, 10, 10)],
    [frame('handler', 10), frame('handler', 20), frame('outer', 30, 'helper'), undefined],
  );
  assert.deepEqual(
    rows.map((r) => [r.caller, r.sites, r.count, r.totalNs, r.maxNs, r.line]),
    [
      ['handler', 2, 12, 1200, 200, 20],
      ['helper', 1, 2, 9000, 8000, 7],
      ['0xdead', 1, 1, 10, 10, null],
    ],
  );
  assert.equal(rows[0].buckets.reduce((n, b) => n + b.count, 0), 12);
  const text = callersText(rows);
  assert.match(text, /^by caller \(3\):/);
  assert.match(text, /12\s+80\.0%\s+100 ns\s+200 ns\s+1\.20 µs\s+handler \(2 call sites\)\s+\/src\/app\.c:20/);
});
