// The latency tracer's pure parts: FILE:LINE to a function through a line table, the return
// sites of a function's disassembly, and the fine histogram's slots and percentiles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDebugLine, pathMatch, pickLine, returnSites } from '../../extension/tracers/latency/lines';
import { fineBounds, fineSlot, percentile, FINE_SLOTS } from '../../extension/tracers/latency/decode';
import { lensText } from '../../extension/model/latencyFormat';
import { functionLines } from '../../extension/model/functionLines';

const DUMP = `
debug_line[0x00000000]
include_directories[  0] = "/build"
include_directories[  1] = "/src/app"
file_names[  0]:
           name: "work.c"
      dir_index: 1
file_names[  1]:
           name: "work.c"
      dir_index: 1
file_names[  2]:
           name: "util.h"
      dir_index: 1
Address            Line   Column File   ISA Discriminator Flags
------------------ ------ ------ ------ --- ------------- -------------
0x0000000000001540     22      1      1   0             0  is_stmt
0x0000000000001540     23      2      1   0             0  is_stmt
0x0000000000001548     40      5      2   0             0  is_stmt
0x0000000000001560     29      2      1   0             0  is_stmt
0x0000000000001580     33      1      1   0             0  is_stmt
0x0000000000001584     34      2      1   0             0  is_stmt
0x000000000000158f     36      1      1   0             0  end_sequence
`;
const SYMS = [
  { name: 'lat_work', value: 0x1540n, size: 0x40n },
  { name: 'lat_recurse', value: 0x1580n, size: 0x10n },
];

test('line table rows carry their file paths', () => {
  const rows = parseDebugLine(DUMP);
  assert.equal(rows.length, 6);
  assert.deepEqual(rows[0], { address: 0x1540n, line: 22, file: '/src/app/work.c', stmt: true });
  assert.equal(rows[2].file, '/src/app/util.h');
});

test('paths match by trailing components', () => {
  assert.equal(pathMatch('/src/app/work.c', 'work.c'), 1);
  assert.equal(pathMatch('/src/app/work.c', 'app/work.c'), 2);
  assert.equal(pathMatch('/src/app/work.c', '/home/me/src/app/work.c'), 3);
  assert.equal(pathMatch('/src/app/work.c', 'main.c'), 0);
});

test('FILE:LINE: a signature line finds the brace below it; a body line its function', () => {
  const rows = parseDebugLine(DUMP);
  const sig = pickLine(rows, SYMS, 'work.c', 21);
  assert.ok('function' in sig && sig.function.name === 'lat_work' && sig.line === 22);
  const body = pickLine(rows, SYMS, 'app/work.c', 29);
  assert.ok('function' in body && body.function.name === 'lat_work');
  const other = pickLine(rows, SYMS, 'work.c', 33);
  assert.ok('function' in other && other.function.name === 'lat_recurse');
  assert.match((pickLine(rows, SYMS, 'work.c', 100) as { why: string }).why, /has no code/);
  assert.match((pickLine(rows, SYMS, 'main.c', 5) as { why: string }).why, /no line table names a file main.c/);
});

test('return sites: ret instructions, and jumps out of the function as tail calls', () => {
  const dis = `
0000000000001540 <lat_work>:
    1540:	push   %rbx
    154b:	je     1580 <lat_work+0x40>
    157f:	ret
    1580:	bnd ret
    1582:	notrack jmp *%rax
    1585:	jmp    1600 <other>
`;
  assert.deepEqual(returnSites(dis, 0x1540n, 0x1590n), { rets: [0x157fn, 0x1580n], tailCalls: ['other'] });
  assert.deepEqual(returnSites(dis, 0x1540n, 0x1584n).tailCalls, []);
});

test('fine histogram: slots invert, percentiles land within 3 %', () => {
  for (const v of [0, 31, 32, 63, 64, 1000, 1_100_000, 20_000_000, 3e9]) {
    const [low, high] = fineBounds(fineSlot(v));
    assert.ok(v >= low && v < high, `${v} in [${low}, ${high})`);
  }
  const counts = new Array<number>(FINE_SLOTS).fill(0);
  counts[fineSlot(1_050_000)] += 90;
  counts[fineSlot(20_300_000)] += 10;
  assert.ok(Math.abs(percentile(counts, 50) - 1_050_000) / 1_050_000 < 0.03);
  assert.ok(Math.abs(percentile(counts, 99) - 20_300_000) / 20_300_000 < 0.03);
  assert.equal(percentile(new Array<number>(FINE_SLOTS).fill(0), 50), 0);
});

test('the lens line', () => {
  const s = { count: 10, totalNs: 0, p50Ns: 800_000, p90Ns: 0, p99Ns: 41_000_000, maxNs: 0, callsPerS: 1234, abandoned: 0, exited: 0, tooDeep: 0, slowLost: 0 };
  assert.equal(lensText(s), 'p50 800 µs · p99 41.0 ms · 1.2 k calls/s');
});

test('function definitions for the lenses: C, C++, Rust, Go; not declarations or statements', () => {
  const c = 'static int cmp(const void *a, const void *b)\n{\n\treturn 0;\n}\nint decl(int);\n\tif (x) {\n__attribute__((noinline)) long lat_parse(int i)\n{\n#define M(x) (x)\nvoid Foo::bar() const {\n';
  assert.deepEqual(functionLines(c, 'cpp'), [
    { line: 1, name: 'cmp' },
    { line: 7, name: 'lat_parse' },
    { line: 10, name: 'Foo::bar' },
  ]);
  assert.deepEqual(functionLines('pub async fn go_x(a: u8) -> u8 {\n', 'rust'), [{ line: 1, name: 'go_x' }]);
  assert.deepEqual(functionLines('func (s *S) Run(x int) error {\n', 'go'), [{ line: 1, name: 'Run' }]);
});

test('Java methods by the name the JVM gives them: package.Class.method, nested classes joined by $', () => {
  const src = [
    'package com.example.app;',
    '',
    'public class Parser {',
    '    private int count;',
    '    public static int parse(String s) throws Exception {',
    '        if (s == null) {',
    '            return 0;',
    '        }',
    '        return s.length();',
    '    }',
    '    List<String> names(int n)',
    '    {',
    '        return null;',
    '    }',
    '    Parser() {',
    '    }',
    '    static class Inner {',
    '        void run() {',
    '            synchronized (this) {',
    '            }',
    '        }',
    '    }',
    '    abstract void nobody();',
    '}',
  ].join('\n');
  assert.deepEqual(functionLines(src, 'java'), [
    { line: 5, name: 'com.example.app.Parser.parse' },
    { line: 11, name: 'com.example.app.Parser.names' },
    { line: 18, name: 'com.example.app.Parser$Inner.run' },
  ]);
  // the default package: no prefix
  assert.deepEqual(functionLines('class A {\n  static long work(int i) {\n  }\n}\n', 'java'), [{ line: 2, name: 'A.work' }]);
});
