// Symbolizer unit tier: names and file:line on a freshly compiled fixture ELF (no process, no
// root), inlined frames, return-address adjustment, the ELF-symbols fallback, and the parsers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Symbolizer, parseKallsyms, parsePerfMap } from '../../extension/sys/symbolize';
import { normalizeJavaMethodName } from '../../extension/protocol/frames';
import { AddressTable } from '../../extension/sys/symbolize/addressTable';
import { parseAnswer } from '../../extension/sys/symbolize/llvmSymbolizer';
import { buildSymfix, haveTool, markerLines, nmFunctions, parsePrinted, SYMFIX_SRC, tempDir } from './symbolizeFixture';

const noGcc = haveTool('gcc') ? false : 'gcc is not installed (apt-get install gcc)';

describe('symbolize a fixture ELF', { skip: noGcc }, () => {
  let dir: string;
  let o0: string;
  let o2: string;
  let lines: Record<string, number>;
  let sym: Symbolizer;
  before(() => {
    dir = tempDir('symfix-unit-');
    // -no-pie: the addresses the program prints are its link-time vaddrs.
    o0 = buildSymfix(dir, 'symfix_O0', ['-O0', '-no-pie']);
    o2 = buildSymfix(dir, 'symfix_O2', ['-O2', '-no-pie']);
    lines = markerLines();
    sym = new Symbolizer();
  });
  after(() => {
    sym?.dispose();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('function names and declaration lines at the addresses nm reports', async () => {
    const nm = nmFunctions(o0);
    const names = ['leaf_record', 'after_call', 'outer_inl', 'main'];
    const frames = await sym.symbolizeFile(o0, names.map((n) => nm.get(n)!));
    frames.forEach((f, i) => {
      assert.equal(f.function, names[i]);
      assert.equal(f.file, SYMFIX_SRC);
      assert.equal(f.line, lines[names[i]], `line of ${names[i]}`);
      assert.equal(f.kind, 'native');
      assert.equal(f.address, '0x' + nm.get(names[i])!.toString(16));
    });
    // Inside a function body, the name stays; the line moves into the body.
    const [inside] = await sym.symbolizeFile(o0, [nm.get('leaf_record')! + 8n]);
    assert.equal(inside.function, 'leaf_record');
    assert.ok(inside.line! >= lines.leaf_record && inside.line! <= lines.leaf_record + 4, `line ${inside.line}`);
  });

  test('return addresses resolve to the line of the call, raw ones to the next line', async () => {
    const printed = parsePrinted(execFileSync(o0, [], { encoding: 'utf8' }));
    const ret = printed.ret_from_leaf;
    assert.ok(ret, 'fixture printed its return address');
    const [asReturn, raw] = await sym.symbolizeFile(o0, [ret, ret], { returnAddresses: [true, false] });
    assert.equal(asReturn.function, 'after_call');
    assert.equal(asReturn.line, lines.call_leaf);
    assert.equal(asReturn.address, '0x' + ret.toString(16), 'address stays the one given');
    assert.equal(raw.function, 'after_call');
    assert.equal(raw.line, lines.after_leaf);
  });

  test('-O2 with an always_inline helper: the inlined frame, then the real function at its call site', async () => {
    const printed = parsePrinted(execFileSync(o2, [], { encoding: 'utf8' }));
    const [f] = await sym.symbolizeFile(o2, [printed.ret_from_inline], { returnAddresses: [true] });
    assert.equal(f.function, 'outer_inl');
    assert.equal(f.line, lines.outer_calls_inl);
    assert.equal(f.inlined?.length, 1);
    assert.equal(f.inlined![0].function, 'inl_helper');
    assert.equal(f.inlined![0].file, SYMFIX_SRC);
    assert.equal(f.inlined![0].line, lines.inl_call);
    assert.ok(f.inlined![0].column! > 0);
  });

  test('warm lookups answer from the cache with the same frames, as independent objects', async () => {
    const nm = nmFunctions(o2);
    const addrs = [...nm.values()];
    const cold = await sym.symbolizeFile(o2, addrs);
    const warm = await sym.symbolizeFile(o2, addrs);
    assert.deepEqual(warm, cold);
    if (warm[0].inlined) assert.notEqual(warm[0].inlined, cold[0].inlined);
  });

  test('without llvm-symbolizer: names from ELF symbols, no file:line, and a warning saying so', async () => {
    const bare = new Symbolizer({ llvmSymbolizerPath: path.join(dir, 'no-such-llvm-symbolizer') });
    try {
      const nm = nmFunctions(o0);
      const frames = await bare.symbolizeFile(o0, [nm.get('after_call')!, nm.get('outer_inl')! + 3n]);
      assert.deepEqual(
        frames.map((f) => [f.function, f.file, f.line]),
        [
          ['after_call', undefined, undefined],
          ['outer_inl', undefined, undefined],
        ],
      );
      assert.ok(bare.warnings().some((w) => /llvm-symbolizer not found .*ELF symbols/.test(w)), bare.warnings().join('\n'));
    } finally {
      bare.dispose();
    }
  });

  test('a file that is not ELF is an input error that names the file', async () => {
    await assert.rejects(sym.symbolizeFile(SYMFIX_SRC, [0n]), (e: Error & { kind?: string }) => {
      assert.equal(e.kind, 'input');
      assert.match(e.message, /symfix\.c.*not an ELF file/);
      return true;
    });
  });
});

describe('perf map parsing', () => {
  test('HotSpot (0x-prefixed) and perf-map-agent (bare hex) lines, kinds, later entries winning', () => {
    const t = parsePerfMap(
      [
        '0x00007fed3cec7180 0x0000000000000078 void java.lang.Object.<init>()',
        '0x00007fed3c940b80 0x0000000000017de0 Interpreter',
        '7fed3c958a00 1b0 I2C/C2I adapters',
        'garbage line',
        '7fed3cec7180 10 long Hot.f(long)',
      ].join('\n'),
    );
    assert.deepEqual(t.lookup(0x7fed3cec7181n)?.value, { name: 'Hot.f', kind: 'jit' });
    assert.deepEqual(t.lookup(0x7fed3cec71a0n)?.value, { name: 'java.lang.Object.<init>', kind: 'jit' });
    assert.deepEqual(t.lookup(0x7fed3c941000n)?.value, { name: 'Interpreter', kind: 'interpreted' });
    assert.equal(t.lookup(0x7fed3c958a00n + 0x1afn)?.value.name, 'I2C/C2I adapters');
    assert.equal(t.lookup(0x7fed3c958a00n + 0x1b0n), undefined);
    assert.equal(t.lookup(0x1000n), undefined);
  });
});

describe('Java method names from perf maps', () => {
  test('HotSpot signatures, perf-map-agent descriptors and notes become Class.method; other names stay', () => {
    const cases: [string, string][] = [
      ['com.sun.tools.javac.util.List com.sun.tools.javac.comp.Attr.attribArgs(com.sun.tools.javac.code.Kinds$KindSelector, com.sun.tools.javac.util.List, com.sun.tools.javac.comp.Env, com.sun.tools.javac.util.ListBuffer)', 'com.sun.tools.javac.comp.Attr.attribArgs'],
      ['void java.lang.Object.<init>()', 'java.lang.Object.<init>'],
      ['void Foo.<clinit>()', 'Foo.<clinit>'],
      ['int[] a.b.C$D.f(int[][], java.lang.String)', 'a.b.C$D.f'],
      ['java.util.Map$Entry java.util.HashMap$TreeNode.find(int, java.lang.Object, java.lang.Class) [c2]', 'java.util.HashMap$TreeNode.find'],
      ['com.sun.tools.javac.comp.Attr.attribTree(com.sun.tools.javac.tree.JCTree)', 'com.sun.tools.javac.comp.Attr.attribTree'],
      ['Lcom/x/Foo$Bar;::run', 'com.x.Foo$Bar.run'],
      ['Ljava/lang/String;.hashCode', 'java.lang.String.hashCode'],
      ['Interpreter', 'Interpreter'],
      ['StubRoutines (1)', 'StubRoutines (1)'],
      ['I2C/C2I adapters', 'I2C/C2I adapters'],
      ['native method entry point (kind = native)', 'native method entry point (kind = native)'],
      ['vtable chunks', 'vtable chunks'],
      ['LazyCompile:*fib /app/x.js:3', 'LazyCompile:*fib /app/x.js:3'],
    ];
    for (const [raw, want] of cases) assert.equal(normalizeJavaMethodName(raw), want, raw);
  });
});

describe('kallsyms parsing', () => {
  const text = [
    'ffffffff81000000 T _stext',
    'ffffffff81000100 t do_one_thing',
    'ffffffff81000100 T do_one_thing_alias',
    'ffffffff81000200 D some_data',
    'ffffffff81000300 T schedule',
    'ffffffffc0a01000 t nft_do_chain\t[nf_tables]',
    '',
  ].join('\n');

  test('text symbols sorted, each running to the next, module symbols included, data skipped', () => {
    const { table, hidden } = parseKallsyms(text);
    assert.equal(hidden, false);
    assert.equal(table.lookup(0xffffffff81000000n)?.value.name, '_stext');
    assert.match(table.lookup(0xffffffff81000150n)!.value.name, /^do_one_thing/);
    // the data symbol does not cut do_one_thing short
    assert.match(table.lookup(0xffffffff81000250n)!.value.name, /^do_one_thing/);
    assert.equal(table.lookup(0xffffffff81000300n)?.value.name, 'schedule');
    assert.deepEqual(table.lookup(0xffffffffc0a01010n)?.value, { name: 'nft_do_chain', module: 'nf_tables' });
    assert.equal(table.lookup(0xffffffff80000000n), undefined);
  });

  test('all-zero addresses (no privilege) are reported as hidden', () => {
    const { table, hidden } = parseKallsyms(text.replace(/^ffffffff[0-9a-f]{8}/gm, '0000000000000000'));
    assert.equal(hidden, true);
    assert.equal(table.size, 0);
  });

  test('symbolizeKernel names frames, adjusts return addresses, and warns when addresses are hidden', async () => {
    const dir = tempDir('kallsyms-');
    const file = path.join(dir, 'kallsyms');
    fs.writeFileSync(file, text);
    const sym = new Symbolizer({ kallsymsPath: file });
    const hiddenFile = path.join(dir, 'hidden');
    fs.writeFileSync(hiddenFile, text.replace(/^ffffffff[0-9a-f]{8}/gm, '0000000000000000'));
    const blind = new Symbolizer({ kallsymsPath: hiddenFile });
    try {
      const frames = await sym.symbolizeKernel([0xffffffff81000310n, 0xffffffff81000300n, 0xffffffff81000300n], {
        returnAddresses: [false, false, true],
      });
      assert.deepEqual(
        frames.map((f) => [f.function, f.module, f.kind]),
        [
          ['schedule', '[kernel]', 'kernel'],
          ['schedule', '[kernel]', 'kernel'],
          [frames[2].function, '[kernel]', 'kernel'],
        ],
      );
      assert.match(frames[2].function!, /^do_one_thing/, 'a call ending a function returns to the next one');
      const [f] = await blind.symbolizeKernel([0xffffffff81000310n]);
      assert.equal(f.function, undefined);
      assert.equal(f.address, '0xffffffff81000310');
      assert.ok(blind.warnings().some((w) => /kallsyms shows only zero addresses/.test(w)));
    } finally {
      sym.dispose();
      blind.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('address table and llvm-symbolizer answers', () => {
  test('nested ranges: innermost wins; latest-wins tables prefer later entries', () => {
    const ranges = [
      { start: 0x100n, end: 0x200n, value: 'outer' },
      { start: 0x120n, end: 0x130n, value: 'inner' },
    ];
    const t = new AddressTable(ranges);
    assert.equal(t.lookup(0x125n)?.value, 'inner');
    assert.equal(t.lookup(0x150n)?.value, 'outer');
    assert.equal(t.lookup(0x200n), undefined);
    const later = new AddressTable([ranges[1], ranges[0]], true);
    assert.equal(later.lookup(0x125n)?.value, 'outer');
  });

  test('JSON answers: outermost function carries the location, inlined innermost first, unknowns dropped', () => {
    const r = parseAnswer(
      JSON.stringify({
        Address: '0x10',
        Symbol: [
          { FunctionName: 'inner', FileName: '/a.c', Line: 3, Column: 5 },
          { FunctionName: 'mid', FileName: '/a.c', Line: 9, Column: 0 },
          { FunctionName: 'outer', FileName: '/b.c', Line: 20, Column: 2 },
        ],
      }),
    );
    assert.deepEqual(r, {
      function: 'outer',
      file: '/b.c',
      line: 20,
      column: 2,
      inlined: [
        { function: 'inner', file: '/a.c', line: 3, column: 5 },
        { function: 'mid', file: '/a.c', line: 9 },
      ],
    });
    assert.deepEqual(parseAnswer('{"Symbol":[{"FunctionName":"","FileName":"","Line":0,"Column":0}]}'), {});
    assert.equal(parseAnswer('{"Error":{"Message":"No such file or directory"}}'), undefined);
    assert.equal(parseAnswer('not json'), undefined);
  });
});
