// CFI leak stacks without a kernel: the stack-copy decoder (mirrors struct memleak_stack_copy in
// bpf/memleak.h) and the remapping of per-allocation ids to interned stacks before aggregation.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { decodeStackCopy, MEMLEAK_DWARF_ID_BASE, MEMLEAK_MAX_STACK_COPY, MEMLEAK_STACK_COPY_HEADER_SIZE, MemleakDwarfStacks, PENDING_STACK_ID } from '../../extension/tracers/memleak/dwarf';
import { aggregate, CNT, CNT_MAX, type AllocRecord } from '../../extension/tracers/memleak/decode';
import type { Addon } from '../../extension/sys/addon';

const h = fs.readFileSync(path.join(__dirname, '../../bpf/memleak.h'), 'utf8');
const def = (n: string) => new RegExp(`#define ${n}\\s+(\\([^)]*\\)|\\S+)`).exec(h)![1].replace(/^\((.*)\)$/, '$1');

test('memleak.h constants match the decoder', () => {
  assert.equal(Number(def('MEMLEAK_STACK_COPY_HEADER_SIZE')), MEMLEAK_STACK_COPY_HEADER_SIZE);
  assert.equal(Number(def('MEMLEAK_MAX_STACK_COPY')), MEMLEAK_MAX_STACK_COPY);
  assert.equal(def('MEMLEAK_DWARF_ID_BASE'), '1LL << 40');
  assert.equal(MEMLEAK_DWARF_ID_BASE, 2 ** 40);
  assert.equal(Number(def('MEMLEAK_CNT_COPY_LOST')), CNT.copyLost);
  assert.equal(Number(def('MEMLEAK_CNT_MAX')), CNT_MAX);
});

function copyRecord(stackId: number, pid: number, ip: bigint): Buffer {
  const b = Buffer.alloc(MEMLEAK_STACK_COPY_HEADER_SIZE + 16);
  b.writeBigInt64LE(BigInt(stackId), 0);
  b.writeUInt32LE(pid, 8);
  b.writeUInt32LE(pid, 12);
  b.writeUInt32LE(16, 16);
  b.writeBigUInt64LE(ip, 24 + 16 * 8);
  return b;
}

test('decodeStackCopy reads ids, registers and the copied bytes by offset', () => {
  const c = decodeStackCopy(copyRecord(MEMLEAK_DWARF_ID_BASE + 7, 321, 0x1234n));
  assert.equal(c.stackId, MEMLEAK_DWARF_ID_BASE + 7);
  assert.equal(c.pid, 321);
  assert.equal(c.regs.readBigUInt64LE(16 * 8), 0x1234n);
  assert.equal(c.stack.length, 16);
  assert.throws(() => decodeStackCopy(Buffer.alloc(10)), /shorter than its 160-byte header/);
});

// An addon whose Unwinder returns the pc and a fixed caller: the grouping, not libdw, is under test.
const fake = {
    Unwinder: class {
      constructor(readonly pid: number) {}
      truncated = false;
      unwindInto(_tid: number, regs: Buffer, _stack: Buffer, out: BigUint64Array) {
        out[0] = regs.readBigUInt64LE(16 * 8);
        out[1] = 0x9000n;
        return 2;
      }
      refresh() {
        return true;
      }
      modules() {
        return [{ name: '/bin/x', start: 0n, end: 0xffffffn, cfi: 'eh_frame' }];
      }
      close() {}
    },
  } as unknown as Addon;

test('per-allocation ids group by unwound stack; unknown ones are pending; freed ones are forgotten', () => {
  const d = new MemleakDwarfStacks(fake, () => {});
  const id = (n: number) => MEMLEAK_DWARF_ID_BASE + n;
  d.add(copyRecord(id(1), 10, 0x100n));
  d.add(copyRecord(id(2), 10, 0x100n));
  d.add(copyRecord(id(3), 10, 0x200n));
  const rec = (n: number, size: number): AllocRecord => ({ address: BigInt(n), size, timestampNs: 1n, stackId: n < 0 ? n : id(n) });
  const mapped = d.remap([rec(1, 100), rec(2, 100), rec(3, 300), rec(4, 7), { address: 9n, size: 5, timestampNs: 1n, stackId: 42 }]);
  const aggs = aggregate(mapped, 10n, 0);
  const byStack = new Map(aggs.map((a) => [a.stackId, a]));
  const same = mapped[0].stackId;
  assert.equal(mapped[1].stackId, same, 'two allocations with one stack share an interned id');
  assert.ok(d.isInterned(same));
  assert.deepEqual([...d.stack(same)], [0x100n, 0x9000n]);
  assert.equal(byStack.get(same)!.bytes, 200);
  assert.equal(mapped[3].stackId, PENDING_STACK_ID, 'a copy not unwound yet');
  assert.equal(mapped[4].stackId, 42, 'frame-pointer stack ids pass through');
  // Allocation 1 freed; 5 unwound after the dump was read (newer than every outstanding id): kept.
  d.add(copyRecord(id(5), 10, 0x300n));
  d.remap([rec(2, 100), rec(3, 300)]);
  const again = d.remap([rec(1, 100), rec(5, 1)]);
  assert.equal(again[0].stackId, PENDING_STACK_ID, 'the id of a freed allocation is forgotten');
  assert.ok(d.isInterned(again[1].stackId), 'a copy newer than the dump is not forgotten');
  d.close();
});

test('a program that frees everything between reports: the id table stays bounded, one interned stack', () => {
  // mallocfree's bench mode: 10k malloc+free a second from one call site, nothing outstanding at
  // any report. Every copy is remembered until a report SETTLE_MS (1 s) after it was unwound.
  let now = 0;
  const d = new MemleakDwarfStacks(fake, () => {}, () => now);
  let seq = 0;
  const sizes: number[] = [];
  for (let second = 0; second < 30; second++) {
    for (let i = 0; i < 10_000; i++) d.add(copyRecord(MEMLEAK_DWARF_ID_BASE + seq++, 10, 0x100n));
    now += 1000;
    d.remap([]);
    sizes.push(d.remembered);
  }
  assert.equal(d.stacks, 1, 'identical stacks are interned once');
  assert.ok(Math.max(...sizes) <= 20_000, `at most the last two seconds of ids are remembered (sizes ${sizes.join(' ')})`);
  assert.equal(sizes[sizes.length - 1], 10_000, 'ids unwound in the last second are kept (their records may not be stored yet)');
  // An allocation still outstanding keeps its stack across reports.
  d.add(copyRecord(MEMLEAK_DWARF_ID_BASE + seq, 10, 0x200n));
  const live: AllocRecord = { address: 1n, size: 8, timestampNs: 1n, stackId: MEMLEAK_DWARF_ID_BASE + seq };
  for (let i = 0; i < 3; i++) {
    now += 1000;
    const [r] = d.remap([live]);
    assert.deepEqual([...d.stack(r.stackId)], [0x200n, 0x9000n]);
  }
  assert.equal(d.remembered, 1, 'only the outstanding allocation remains');
  d.close();
});
