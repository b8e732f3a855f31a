// The whole-host unwind tables' memory cap: spans within the preallocated maps, and which tables
// go when a newly met file needs room (least recently used first, never one a walk used lately).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CfiBudget, SpanAllocator } from '../../extension/tracers/cfiBudget';
import { capLayout, CFI_HOST_MIN_MAX_BYTES } from '../../extension/tracers/cfiHost';
import { profileTracer } from '../../extension/tracers/profile/tracer';
import { formatSummary } from '../../extension/cli/commands/profile';
import { unwindSummary } from '../../extension/model/unwindText';
import type { ProfileResult } from '../../extension/protocol/profile';

test('spans: first fit, freed spans merge with their free neighbours, a span freed twice is refused', () => {
  const a = new SpanAllocator(10);
  assert.equal(a.alloc(4), 0);
  assert.equal(a.alloc(3), 4);
  assert.equal(a.alloc(3), 7);
  assert.equal(a.alloc(1), undefined);
  a.release({ start: 0, len: 4 });
  a.release({ start: 7, len: 3 });
  assert.equal(a.alloc(5), undefined, 'two free spans of 4 and 3 are not one of 5');
  a.release({ start: 4, len: 3 });
  assert.equal(a.freeUnits, 10);
  assert.equal(a.alloc(10), 0, 'all three merged');
  a.release({ start: 0, len: 10 });
  assert.throws(() => a.release({ start: 2, len: 2 }), /not in use/);
  assert.equal(a.alloc(0), undefined);
});

/** A budget of 10 row blocks and 100 page entries, tables idle 1000 ms evictable; uses: key → ms. */
function budget(uses: Record<string, number>) {
  const b = new CfiBudget(10, 100, 1000);
  return { b, use: (k: string) => uses[k] ?? 0 };
}

test('a table goes into free room without evicting anything', () => {
  const { b, use } = budget({});
  assert.deepEqual(b.place('a', 4, 10, use, 5000), { at: { rows: { start: 0, len: 4 }, pages: { start: 0, len: 10 } }, evicted: [] });
  assert.deepEqual(b.place('b', 6, 10, use, 5000)?.evicted, []);
  assert.deepEqual(b.used, { rowBlocks: 10, pageEntries: 20 });
  assert.equal(b.evictions, 0);
});

test('when full, the least recently used idle table goes first, only as many as make room', () => {
  const uses: Record<string, number> = { a: 3000, b: 1000, c: 2000 };
  const { b, use } = budget(uses);
  b.place('a', 3, 10, use, 0);
  b.place('b', 3, 10, use, 0);
  b.place('c', 4, 10, use, 0);
  uses.d = 9000;
  const p = b.place('d', 3, 10, use, 9000);
  assert.deepEqual(p?.evicted, ['b'], 'b was used longest ago');
  assert.deepEqual(p?.at.rows, { start: 3, len: 3 }, 'in the room b left');
  assert.equal(b.evictions, 1);
  assert.deepEqual([...b.resident.keys()].sort(), ['a', 'c', 'd']);
});

test('contiguous room: older tables go until a span is long enough', () => {
  const uses: Record<string, number> = { a: 1000, b: 3000, c: 2000, d: 4000 };
  const { b, use } = budget(uses);
  for (const k of ['a', 'b', 'c', 'd']) b.place(k, k === 'd' ? 1 : 3, 1, use, 0);
  // a (0-2) is oldest, then c (6-8): freeing both leaves 3+3 apart, not 5 together; then b (3-5)
  const p = b.place('e', 5, 1, use, 10_000);
  assert.deepEqual(p?.evicted, ['a', 'c', 'b']);
  assert.deepEqual(p?.at.rows, { start: 0, len: 5 });
  assert.deepEqual([...b.resident.keys()].sort(), ['d', 'e']);
});

test('a table used within the idle time is never evicted; a newcomer that finds no room evicts nothing', () => {
  const uses: Record<string, number> = { a: 9500, b: 2000 };
  const { b, use } = budget(uses);
  b.place('a', 6, 10, use, 0);
  b.place('b', 4, 10, use, 0);
  assert.equal(b.place('c', 6, 10, use, 10_000), undefined, 'only b is idle, and its 4 blocks are too few');
  assert.deepEqual([...b.resident.keys()].sort(), ['a', 'b'], 'nothing evicted for a miss');
  assert.equal(b.evictions, 0);
  assert.deepEqual(b.victims(4, 10, use, 10_000), ['b']);
  assert.deepEqual(b.place('c', 4, 10, use, 10_000)?.evicted, ['b']);
});

test('a table larger than the whole cap is refused outright; page entries count as rows do', () => {
  const { b, use } = budget({});
  assert.equal(b.fitsCap(11, 1), false);
  assert.equal(b.place('big', 11, 1, use, 0), undefined);
  assert.equal(b.place('idx', 1, 101, use, 0), undefined);
  b.place('x', 1, 90, use, 0);
  assert.deepEqual(b.place('y', 1, 20, use, 5000)?.evicted, ['x'], 'room in the page index made by eviction too');
  assert.throws(() => b.place('y', 1, 1, use, 5000), /resident already/);
  assert.equal(b.remove('y'), true);
  assert.equal(b.remove('y'), false);
});

test('the cap divides into row blocks and page entries, with the smallest cap one block of each', () => {
  assert.deepEqual(capLayout(CFI_HOST_MIN_MAX_BYTES), { rowBlocks: 1, pageEntries: 1024 });
  const l = capLayout(64 << 20);
  assert.equal(l.pageEntries, (2 << 20) / 4);
  assert.equal(l.rowBlocks, Math.floor((62 << 20) / 6144));
  assert.ok(l.rowBlocks * 6144 + l.pageEntries * 4 <= 64 << 20);
});

test('cfiMaxBytes: validated within its bounds, absent unless given', () => {
  assert.equal(profileTracer.validate({ cfiMaxBytes: 1 << 20 }).cfiMaxBytes, 1 << 20);
  assert.equal('cfiMaxBytes' in profileTracer.validate({}), false);
  assert.throws(() => profileTracer.validate({ cfiMaxBytes: 100 }), /cfiMaxBytes must be between/);
  assert.throws(() => profileTracer.validate({ cfiMaxBytes: 2 ** 31 }), /cfiMaxBytes must be between/);
});

test('stacks cut by the cap are said in the CLI summary and the view header, like other losses', () => {
  const r: ProfileResult = { tracer: 'profile', frequency: 99, samples: 500, lost: 2, stacks: [], unwind: { mode: 'cfi', cutByCap: 37, cfiTables: { files: 3, rows: 100, bytes: 10240, fpMappings: 1, capBytes: 10 << 20 } } };
  assert.match(formatSummary(r).split('\n')[0], /500 samples at 99 Hz, 2 lost, 37 cut by the unwind table memory cap \(--cfi-max-mb\)/);
  assert.match(unwindSummary(r.unwind)!, /37 samples cut by the table memory cap/);
  assert.doesNotMatch(formatSummary({ ...r, unwind: { mode: 'cfi' } }), /cut by/);
});
