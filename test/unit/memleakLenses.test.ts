// CodeLens placement from a leak snapshot (extension/model/leakSites.ts): the allocation line is
// the first workspace frame (allocator wrappers skipped, inlined frames first), every workspace
// caller above it gets a lens too, figures are inclusive, one size format with exact bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemleakStack } from '../../extension/protocol/memleak';
import { exactBytes, formatAge, formatLeakBytes, growthRate, leakSites, lensText, lensTooltip, placeLenses, siteOf } from '../../extension/model/leakSites';

const ws = '/home/dev/project';
const libc = { address: '0x7f0000001000', module: '/usr/lib/x86_64-linux-gnu/libc.so.6', function: '__libc_start_call_main', file: './csu/libc_start_call_main.h', line: 58 };
const stack = (bytes: number, allocations: number, oldestAgeMs: number, frames: MemleakStack['frames']): MemleakStack => ({ bytes, allocations, oldestAgeMs, frames });

test('the site is the first frame inside the workspace', () => {
  const s = stack(4096, 1, 10, [
    { address: '0x7f0000002000', module: '/usr/lib/libstdc++.so.6', function: 'std::string::_M_create', file: '/build/gcc/basic_string.tcc', line: 10 },
    { address: '0x5500001000', module: `${ws}/app`, function: 'load', file: `${ws}/src/load.c`, line: 42 },
    { address: '0x5500002000', module: `${ws}/app`, function: 'main', file: `${ws}/src/main.c`, line: 7 },
  ]);
  assert.deepEqual(siteOf(s, [ws]), { file: `${ws}/src/load.c`, line: 42 });
  assert.equal(siteOf(s, ['/elsewhere']), undefined);
  // a sibling folder with a common prefix is not inside
  assert.equal(siteOf(s, ['/home/dev/proj']), undefined);
});

test('allocator wrappers in the workspace are skipped; inlined locations come first', () => {
  const wrapped = stack(100, 1, 1, [
    { address: '0x1', module: `${ws}/app`, function: 'xmalloc', file: `${ws}/src/util.c`, line: 5 },
    { address: '0x2', module: `${ws}/app`, function: 'parse_header', file: `${ws}/src/parse.c`, line: 88 },
  ]);
  assert.deepEqual(siteOf(wrapped, [ws]), { file: `${ws}/src/parse.c`, line: 88 });
  const inlined = stack(100, 1, 1, [{ address: '0x3', module: `${ws}/app`, function: 'outer', file: `${ws}/src/a.c`, line: 20, inlined: [{ function: 'helper', file: `${ws}/src/a.h`, line: 3 }] }]);
  assert.deepEqual(siteOf(inlined, [ws]), { file: `${ws}/src/a.h`, line: 3 });
});

test('stacks that share a site are summed; sites sort by bytes', () => {
  const at = (line: number, caller: string) => [
    { address: `0x${line}`, module: `${ws}/app`, function: 'make', file: `${ws}/m.c`, line },
    { address: `0x${caller}`, module: `${ws}/app`, function: caller, file: `${ws}/main.c`, line: 1 },
    libc,
  ];
  const sites = leakSites([stack(1000, 10, 500, at(12, 'a')), stack(300000, 3, 12000, at(30, 'b')), stack(2000, 5, 900, at(12, 'c'))], [ws]).filter((s) => s.kind === 'allocation');
  assert.deepEqual(
    sites.map((s) => [s.line, s.bytes, s.allocations, s.oldestAgeMs, s.stacks]),
    [
      [30, 300000, 3, 12000, [1]],
      [12, 3000, 15, 900, [0, 2]],
    ],
  );
});

test('one size format: binary KB/MB on screen, the exact bytes in the tooltip', () => {
  assert.equal(lensText({ bytes: 409600, allocations: 100, oldestAgeMs: 12000, kind: 'allocation' }, 4096), '⚠ allocated here: 400 KB outstanding in 100 allocations · oldest 12 s · +4 KB/s');
  assert.equal(lensText({ bytes: 248, allocations: 1, oldestAgeMs: 80 }), '⚠ 248 B outstanding in 1 allocation · oldest 80 ms');
  assert.equal(formatLeakBytes(40960), '40 KB');
  assert.equal(formatLeakBytes(1536 * 1024), '1.5 MB');
  assert.equal(formatLeakBytes(123 * 1024 + 700), '124 KB');
  assert.equal(exactBytes(40960), '40,960 bytes');
  assert.equal(formatAge(90_000), '2 min');
});

test('growth rate over the history; lenses carry it', () => {
  assert.equal(growthRate([{ atMs: 0, bytes: 1000 }]), undefined);
  assert.equal(growthRate([
    { atMs: 0, bytes: 0 },
    { atMs: 1000, bytes: 20000 },
    { atMs: 2000, bytes: 68000 },
  ]), 34000);
  const s = stack(68000, 68, 2000, [{ address: '0x1', module: `${ws}/app`, function: 'leak', file: `${ws}/l.c`, line: 9 }]);
  const history = new Map([[`${ws}/l.c:9`, [{ atMs: 0, bytes: 0 }, { atMs: 2000, bytes: 68000 }]]]);
  const [lens] = placeLenses([s], [ws], history);
  assert.equal(lens.text, '⚠ allocated here: 66.4 KB outstanding in 68 allocations · oldest 2 s · +33.2 KB/s');
  assert.deepEqual([lens.file, lens.line, lens.key, lens.kind], [`${ws}/l.c`, 9, `${ws}/l.c:9`, 'allocation']);
  assert.match(lens.tooltip, /^68,000 bytes in 68 allocations not yet freed, from 1 call stack\./);
});

// The shape of scripts/demo/leaky.c: main calls make_record(256) on line 29 (freed) and
// make_record(4096) on line 32 (never freed); make_record calls malloc on line 21.
const leaky = `${ws}/scripts/demo/leaky.c`;
const mallocFrame = { address: '0x7f00000a0000', module: '/usr/lib/x86_64-linux-gnu/libc.so.6', function: 'malloc' };
const makeRecord = { address: '0x5500001150', module: `${ws}/leaky`, function: 'make_record', file: leaky, line: 21 };
const mainAt = (line: number, address: string) => ({ address, module: `${ws}/leaky`, function: 'main', file: leaky, line });

test('leaky.c: a lens on the allocation line and on the calling line that leaks, with inclusive figures', () => {
  const leaking = stack(40960, 10, 9000, [mallocFrame, makeRecord, mainAt(32, '0x55000011c0'), libc]);
  const inFlight = stack(256, 1, 5, [mallocFrame, makeRecord, mainAt(29, '0x55000011a0'), libc]);
  const lenses = placeLenses([leaking, inFlight], [ws]);
  const at = (line: number) => lenses.find((l) => l.line === line);
  assert.deepEqual(
    lenses.map((l) => [l.line, l.kind]),
    [
      [21, 'allocation'],
      [32, 'caller'],
      [29, 'caller'],
    ],
  );
  assert.equal(at(21)!.text, '⚠ allocated here: 40.3 KB outstanding in 11 allocations · oldest 9 s', 'the allocation line sums both stacks');
  assert.equal(at(32)!.text, '⚠ via make_record: leaks 40 KB in 10 allocations · oldest 9 s');
  assert.match(at(32)!.tooltip, /^40,960 bytes in 10 allocations not yet freed, from 1 call stack\. This line calls make_record, which leads to an allocation nobody freed \(leaky\.c:21\)/);
  assert.equal(at(29)!.text, '⚠ via make_record: leaks 256 B in 1 allocation · oldest 5 ms');
});

test('caller figures are inclusive over every stack through the line; recursion counts a stack once', () => {
  const rec = (bytes: number, depth: number) =>
    stack(bytes, 1, 1, [
      { address: '0x1', module: `${ws}/app`, function: 'node_new', file: `${ws}/t.c`, line: 5 },
      ...Array.from({ length: depth }, (_, i) => ({ address: `0x2${i}`, module: `${ws}/app`, function: 'insert', file: `${ws}/t.c`, line: 12 })),
      { address: '0x3', module: `${ws}/app`, function: 'main', file: `${ws}/main.c`, line: 40 },
    ]);
  const sites = leakSites([rec(100, 3), rec(50, 1)], [ws]);
  const byLine = Object.fromEntries(sites.map((s) => [`${s.file.slice(ws.length + 1)}:${s.line}`, [s.kind, s.bytes, s.allocations, s.via]]));
  assert.deepEqual(byLine, {
    't.c:5': ['allocation', 150, 2, undefined],
    't.c:12': ['caller', 150, 2, 'node_new'],
    'main.c:40': ['caller', 150, 2, 'insert'],
  });
});

test('a wrapper is skipped below the allocation line only; lines outside the workspace get nothing', () => {
  const s = stack(64, 1, 1, [
    { address: '0x1', module: `${ws}/app`, function: 'xmalloc', file: `${ws}/util.c`, line: 3 },
    { address: '0x2', module: `${ws}/app`, function: 'dup_name', file: `${ws}/names.c`, line: 17 },
    { address: '0x3', module: '/usr/lib/libfoo.so', function: 'foo_each', file: '/usr/src/foo.c', line: 99 },
    { address: '0x4', module: `${ws}/app`, function: 'main', file: `${ws}/main.c`, line: 8 },
  ]);
  const lenses = placeLenses([s], [ws]);
  assert.deepEqual(
    lenses.map((l) => [l.file.slice(ws.length + 1), l.line, l.kind]),
    [
      ['names.c', 17, 'allocation'],
      ['main.c', 8, 'caller'],
    ],
  );
  assert.match(lenses[1].text, /^⚠ via dup_name: leaks 64 B in 1 allocation/);
  assert.match(lensTooltip({ bytes: 1, allocations: 1, oldestAgeMs: 0, stacks: [0], kind: 'allocation' }), /^1 byte in 1 allocation/);
});
