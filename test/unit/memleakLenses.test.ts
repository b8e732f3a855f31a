// CodeLens placement from a leak snapshot (extension/model/leakSites.ts): first workspace
// frame, allocator wrappers skipped, inlined frames first, sites summed, the lens text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemleakStack } from '../../extension/protocol/memleak';
import { formatAge, formatBytesDecimal, growthRate, leakSites, lensText, placeLenses, siteOf } from '../../extension/model/leakSites';

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
  const sites = leakSites([stack(1000, 10, 500, at(12, 'a')), stack(300000, 3, 12000, at(30, 'b')), stack(2000, 5, 900, at(12, 'c'))], [ws]);
  assert.deepEqual(
    sites.map((s) => [s.line, s.bytes, s.allocations, s.oldestAgeMs, s.stacks]),
    [
      [30, 300000, 3, 12000, [1]],
      [12, 3000, 15, 900, [0, 2]],
    ],
  );
});

test('lens text matches the issue: "⚠ 409.6 KB outstanding in 100 allocations · oldest 12 s · +34 KB/s"', () => {
  assert.equal(lensText({ bytes: 409600, allocations: 100, oldestAgeMs: 12000 }, 34000), '⚠ 409.6 KB outstanding in 100 allocations · oldest 12 s · +34 KB/s');
  assert.equal(lensText({ bytes: 248, allocations: 1, oldestAgeMs: 80 }), '⚠ 248 B outstanding in 1 allocation · oldest 80 ms');
  assert.equal(formatBytesDecimal(1_500_000), '1.5 MB');
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
  assert.deepEqual(placeLenses([s], [ws], history), [{ file: `${ws}/l.c`, line: 9, key: `${ws}/l.c:9`, text: '⚠ 68 KB outstanding in 68 allocations · oldest 2 s · +34 KB/s' }]);
});
