// The .eh_frame → unwind-row compiler (extension/sys/elf/cfiTable.ts) checked row by row against
// binutils' own interpretation (readelf --debug-dump=frames-interp) of real binaries: this
// machine's libc and a -O2 program compiled here.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CFI_KIND, compileCfi, compileCfiFile, encodeRows, type CfiRow } from '../../extension/sys/elf/cfiTable';
import { ElfFile } from '../../extension/sys/elf/elf';
import { pageIndex } from '../../extension/tracers/cfiTables';

const has = (cmd: string) => {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

interface RefRow {
  pc: number;
  cfa: string;
  rbp: string;
  ra: string;
}

/** readelf's interpreted FDE tables: per FDE its range and rows (an FDE without instructions has its CIE's one row). */
function readelfRows(file: string): { start: number; end: number; rows: RefRow[] }[] {
  // readelf exits 1 over warnings about other sections; its stdout is complete
  const out = spawnSync('readelf', ['--debug-dump=frames-interp', file], { encoding: 'utf8', maxBuffer: 256 << 20 }).stdout;
  const fdes: { start: number; end: number; cie: RefRow[]; rows: RefRow[] }[] = [];
  const cies = new Map<string, RefRow[]>();
  let cols: string[] = [];
  let cur: { start: number; end: number; cie: RefRow[]; rows: RefRow[] } | undefined;
  for (const line of out.split('\n')) {
    const f = / FDE cie=(\w+) pc=([0-9a-f]+)\.\.([0-9a-f]+)/.exec(line);
    if (f) {
      cur = { start: parseInt(f[2], 16), end: parseInt(f[3], 16), cie: cies.get(f[1]) ?? [], rows: [] };
      fdes.push(cur);
      continue;
    }
    const c = /^([0-9a-f]{8}) [0-9a-f]+ [0-9a-f]+ CIE /.exec(line);
    if (c) {
      cur = { start: 0, end: 0, cie: [], rows: [] };
      cies.set(c[1], cur.rows);
      continue;
    }
    // a register rule reads "r10 (r10)": one column
    const t = line.trim().replace(/(r\d+) \((\w+)\)/g, '$1($2)').split(/\s+/);
    if (t[0] === 'LOC') cols = t;
    else if (cur && /^[0-9a-f]{16}$/.test(t[0])) {
      const at = (name: string) => (cols.indexOf(name) >= 0 ? t[cols.indexOf(name)] : 'u');
      cur.rows.push({ pc: parseInt(t[0], 16), cfa: t[1], rbp: at('rbp'), ra: at('ra') });
    }
  }
  // an FDE without instructions has its CIE's one row
  return fdes.map((f) => ({ start: f.start, end: f.end, rows: f.rows.length ? f.rows : f.cie.slice(0, 1).map((r) => ({ ...r, pc: f.start })) }));
}

function rowAt(rows: CfiRow[], pc: number): CfiRow | undefined {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].pc <= pc) lo = mid + 1;
    else hi = mid;
  }
  return lo ? rows[lo - 1] : undefined;
}

/** Compares every readelf row with the compiled row covering its pc; returns mismatches (at most 10) and rows checked. */
function compare(file: string): { checked: number; bad: string[]; exprs: number } {
  const table = compileCfiFile(file);
  const bad: string[] = [];
  let checked = 0;
  let exprs = 0;
  const fdes = readelfRows(file);
  const starts = new Set(fdes.map((f) => f.start));
  for (const fde of fdes) {
    for (const ref of fde.rows) {
      const got = rowAt(table.rows, ref.pc);
      checked++;
      const m = /^(rsp|rbp)\+(\d+)$/.exec(ref.cfa);
      let ok: boolean;
      if (ref.cfa === 'exp' && ref.ra === 'exp') ok = got?.kind === CFI_KIND.signal;
      else if (ref.ra !== 'u' && ref.ra !== 'c-8') ok = got?.kind === CFI_KIND.unsupported;
      else if (ref.ra === 'u') ok = got?.kind === CFI_KIND.outermost;
      else if (ref.cfa === 'exp') {
        exprs++;
        ok = got !== undefined && [CFI_KIND.plt, CFI_KIND.signal, CFI_KIND.unsupported].includes(got.kind as 3 | 4 | 6);
      } else if (m) {
        const rbp = /^c-(\d+)$/.exec(ref.rbp);
        ok = got !== undefined && got.kind === (m[1] === 'rsp' ? CFI_KIND.sp : CFI_KIND.bp) && got.cfaOff === Number(m[2]) && got.rbpOff === (rbp ? -Number(rbp[1]) : 0);
        if (!rbp && ref.rbp !== 'u' && ref.rbp !== 's') ok = got?.kind === CFI_KIND.unsupported;
      } else ok = got?.kind === CFI_KIND.unsupported;
      if (!ok && bad.length < 10) bad.push(`${file} @0x${ref.pc.toString(16)}: readelf ${ref.cfa} rbp=${ref.rbp} ra=${ref.ra}, compiled ${JSON.stringify(got)}`);
    }
    // past the FDE's end, unless another FDE starts there, no CFI
    const after = rowAt(table.rows, fde.end);
    if (!starts.has(fde.end) && after?.kind !== CFI_KIND.none && bad.length < 10) bad.push(`${file} @0x${fde.end.toString(16)}: no gap row at the FDE's end`);
  }
  return { checked, bad, exprs };
}

const libc = ['/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libc.so.6'].find((f) => fs.existsSync(f));

test('libc: every row readelf interprets is the compiled row at that pc', { skip: !has('readelf') ? 'readelf (binutils) is not installed' : !libc ? 'no x86_64 libc.so.6 here' : false }, () => {
  const r = compare(libc!);
  assert.deepEqual(r.bad, []);
  assert.ok(r.checked > 10_000, `${r.checked} rows checked`);
  const t = compileCfiFile(libc!);
  // glibc's PLT and __restore_rt are expressed, not counted as unsupported
  assert.ok(t.rows.some((x) => x.kind === CFI_KIND.plt));
  assert.ok(t.rows.some((x) => x.kind === CFI_KIND.signal));
  const unsupported = Object.values(t.unsupported).reduce((a, b) => a + b, 0);
  assert.ok(unsupported < t.rows.length / 100, `unsupported ${JSON.stringify(t.unsupported)} of ${t.rows.length} rows`);
});

test('a -O2 program compiled here: rows match readelf, the .plt has its expression row', { skip: !has('readelf') || !has('gcc') ? 'gcc and readelf are needed' : false }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    const src = path.join(dir, 'p.c');
    fs.writeFileSync(src, '#include <stdio.h>\n#include <stdlib.h>\n__attribute__((noinline)) static int leaf(int n) { return n * 3; }\nint main(int c, char **v) { char *b = malloc(64); snprintf(b, 64, "%d", leaf(c)); puts(b); free(b); return 0; }\n');
    execFileSync('gcc', ['-O2', '-g', '-fno-omit-frame-pointer', '-o', path.join(dir, 'fp'), src]);
    execFileSync('gcc', ['-O2', '-g', '-o', path.join(dir, 'nofp'), src]);
    for (const exe of ['fp', 'nofp']) {
      const r = compare(path.join(dir, exe));
      assert.deepEqual(r.bad, []);
      assert.ok(r.exprs >= 1, `${exe}: the .plt's expression row`);
    }
    const t = compileCfiFile(path.join(dir, 'fp'));
    assert.ok(t.rows.some((x) => x.kind === CFI_KIND.bp && x.cfaOff === 16 && x.rbpOff === -16), 'main with a frame pointer: CFA = rbp+16, rbp at CFA-16');
    assert.ok(t.rows.some((x) => x.kind === CFI_KIND.plt && x.arg === 11), 'the .plt stub: rsp+8, +8 from offset 11');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('encodeRows writes struct cfi_row: u32 pc, s32 cfa_off, s16 rbp_off, u8 kind, u8 arg', () => {
  const b = encodeRows([{ pc: 0x1234, kind: CFI_KIND.bp, cfaOff: 16, rbpOff: -16, arg: 0 }, { pc: 0xfffffff0, kind: CFI_KIND.plt, cfaOff: 8, rbpOff: 0, arg: 11 }]);
  assert.equal(b.length, 24);
  assert.equal(b.readUInt32LE(0), 0x1234);
  assert.equal(b.readInt32LE(4), 16);
  assert.equal(b.readInt16LE(8), -16);
  assert.equal(b[10], CFI_KIND.bp);
  assert.equal(b.readUInt32LE(12), 0xfffffff0);
  assert.equal(b[23], 11);
});

test('a file without .eh_frame compiles to no rows; a non-ELF file is an error', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    fs.writeFileSync(path.join(dir, 'x'), 'not an elf file at all, just some text here to be long enough for a header');
    assert.throws(() => compileCfiFile(path.join(dir, 'x')), /not an ELF file/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('pageIndex: each page points at the row covering its start, and its rows end at the next entry', () => {
  const rows = [0x1000, 0x1010, 0x1ff0, 0x3008, 0x3100, 0x5000].map((pc) => ({ pc }));
  const { base, idx } = pageIndex(rows);
  assert.equal(base, 1);
  // pages 1..5 and the end: 0x1000 → row 0, 0x2000 → row 2 (0x1ff0), 0x3000 → row 2, 0x4000 → row 4, 0x5000 → row 5, 0x6000 → row 5
  assert.deepEqual([...idx], [0, 2, 2, 4, 5, 5]);
  // every pc's row (the last at or below it) lies in its page's [idx[k], idx[k + 1]]
  for (let pc = 0x1000; pc < 0x6000; pc += 0x10) {
    const want = rows.reduce((w, r, i) => (r.pc <= pc ? i : w), -1);
    const k = Math.floor(pc / 4096) - base;
    assert.ok(want >= idx[k] && want <= idx[k + 1], `pc 0x${pc.toString(16)}`);
  }
  assert.deepEqual([...pageIndex([]).idx], []);
});

test('a corrupted .eh_frame compiles or fails with a RangeError, promptly and within the row cap', { skip: !has('gcc') ? 'gcc is needed' : false }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    const src = path.join(dir, 'p.c');
    fs.writeFileSync(src, 'int f(int x) { return x * 3; }\nint main(int c, char **v) { return f(c); }\n');
    execFileSync('gcc', ['-O2', '-o', path.join(dir, 'p'), src]);
    const good = fs.readFileSync(path.join(dir, 'p'));
    const eh = new ElfFile(path.join(dir, 'p'));
    const sec = eh.section('.eh_frame')!;
    eh.close();
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    for (let i = 0; i < 200; i++) {
      const bad = Buffer.from(good);
      for (let j = 0; j < 1 + (i % 8); j++) bad[sec.offset + (rnd() % sec.size)] = rnd() & 0xff;
      const f = path.join(dir, `bad${i}`);
      fs.writeFileSync(f, bad);
      const t0 = Date.now();
      const elf = new ElfFile(f);
      try {
        const t = compileCfi(elf, 10_000);
        assert.ok(t.rows.length <= 10_000 + t.fdes);
      } catch (e) {
        assert.ok(e instanceof RangeError, `${i}: ${(e as Error).stack}`);
      } finally {
        elf.close();
      }
      assert.ok(Date.now() - t0 < 2000, `${i}: took ${Date.now() - t0} ms`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('.debug_frame: a -fno-asynchronous-unwind-tables -g program\'s functions get their rows from it (readelf agrees), also from a separate debug file, zlib-compressed or not', { skip: !has('readelf') || !has('gcc') || !has('objcopy') ? 'gcc and binutils are needed' : false }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    const exe = path.join(dir, 'df');
    execFileSync('gcc', ['-O2', '-g', '-fomit-frame-pointer', '-fno-asynchronous-unwind-tables', '-o', exe, path.join(__dirname, '..', 'fixtures', 'c', 'cfisleep.c')]);
    const main = parseInt(/^([0-9a-f]+) T main$/m.exec(execFileSync('nm', [exe], { encoding: 'utf8' }))![1], 16);
    // .eh_frame has crt's _start and the .plt only: main is in a gap there
    const own = compileCfiFile(exe);
    assert.ok(own.debugFrameFdes! >= 4, `FDEs from .debug_frame: ${own.debugFrameFdes}`);
    assert.equal(rowAt(own.rows, main + 1)?.kind, CFI_KIND.sp, 'main: CFA by rsp, from .debug_frame');
    const r = compare(exe);
    assert.deepEqual(r.bad, []);
    assert.ok(r.checked > 15, `${r.checked} rows checked`);
    // stripped of its debug sections, with them in DIR/.build-id/xx/rest.debug
    const id = new ElfFile(exe);
    const buildId = id.buildId()!;
    id.close();
    const debug = path.join(dir, 'debug', '.build-id', buildId.slice(0, 2), `${buildId.slice(2)}.debug`);
    fs.mkdirSync(path.dirname(debug), { recursive: true });
    execFileSync('objcopy', ['--only-keep-debug', exe, debug]);
    execFileSync('strip', ['--strip-debug', exe]);
    assert.equal(rowAt(compileCfiFile(exe).rows, main + 1)?.kind, CFI_KIND.none, 'stripped, no debug directory: main has no row');
    for (const compress of ['none', 'zlib']) {
      execFileSync('objcopy', [`--compress-debug-sections=${compress}`, debug]);
      const sep = compileCfiFile(exe, { debugDirs: [path.join(dir, 'nothing-here'), path.join(dir, 'debug')] });
      assert.deepEqual(sep.rows, own.rows, `rows from the separate debug file (${compress})`);
    }
    // a debug file of another build at that path is not used
    fs.writeFileSync(path.join(dir, 'other.c'), 'int main(void) { return 0; }\n');
    execFileSync('gcc', ['-O2', '-g', '-fno-asynchronous-unwind-tables', '-o', path.join(dir, 'other'), path.join(dir, 'other.c')]);
    execFileSync('objcopy', ['--only-keep-debug', path.join(dir, 'other'), debug]);
    assert.equal(rowAt(compileCfiFile(exe, { debugDirs: [path.join(dir, 'debug')] }).rows, main + 1)?.kind, CFI_KIND.none);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a corrupted .debug_frame leaves the .eh_frame rows and says so, promptly', { skip: !has('gcc') ? 'gcc is needed' : false }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    const exe = path.join(dir, 'df');
    execFileSync('gcc', ['-O2', '-g', '-fno-asynchronous-unwind-tables', '-o', exe, path.join(__dirname, '..', 'fixtures', 'c', 'cfisleep.c')]);
    const good = fs.readFileSync(exe);
    const elf = new ElfFile(exe);
    const sec = elf.section('.debug_frame')!;
    const base = compileCfi(elf);
    elf.close();
    const ehRows = (t: { rows: CfiRow[] }) => t.rows.filter((x) => x.kind === CFI_KIND.plt || x.kind === CFI_KIND.outermost).length;
    let corrupt = 0;
    let seed = 777;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    for (let i = 0; i < 200; i++) {
      const bad = Buffer.from(good);
      for (let j = 0; j < 1 + (i % 8); j++) bad[sec.offset + (rnd() % sec.size)] = rnd() & 0xff;
      const f = path.join(dir, `bad${i}`);
      fs.writeFileSync(f, bad);
      const t0 = Date.now();
      const t = compileCfiFile(f, { maxRows: 10_000 });
      assert.equal(ehRows(t), ehRows(base), `${i}: the .plt and _start rows of .eh_frame stay`);
      if (t.unsupported['debug_frame-corrupt']) corrupt++;
      assert.ok(Date.now() - t0 < 2000, `${i}: took ${Date.now() - t0} ms`);
    }
    assert.ok(corrupt > 0, 'unreadable .debug_frame records are counted');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a .debug_frame that inflates to 32 MiB of zeros, or claims more, costs a moment and leaves .eh_frame\'s rows', { skip: !has('gcc') || !has('objcopy') ? 'gcc and binutils are needed' : false }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfitable-'));
  try {
    const exe = path.join(dir, 'df');
    execFileSync('gcc', ['-O2', '-g', '-fno-asynchronous-unwind-tables', '-o', exe, path.join(__dirname, '..', 'fixtures', 'c', 'cfisleep.c')]);
    const base = compileCfiFile(exe);
    for (const [name, bytes] of [['fits', (32 << 20) - 4096], ['over', (32 << 20) + 4096]] as const) {
      fs.writeFileSync(path.join(dir, 'zeros'), Buffer.alloc(bytes));
      const bomb = path.join(dir, name);
      execFileSync('objcopy', ['--update-section', `.debug_frame=${path.join(dir, 'zeros')}`, exe, bomb]);
      execFileSync('objcopy', ['--compress-debug-sections=zlib', bomb]);
      assert.ok(fs.statSync(bomb).size < 1 << 20, 'the compressed section is small');
      const t0 = Date.now();
      const t = compileCfiFile(bomb);
      assert.ok(Date.now() - t0 < 2000, `${name}: took ${Date.now() - t0} ms`);
      assert.deepEqual(t.rows, base.rows.filter((r) => t.rows.some((x) => x.pc === r.pc)), `${name}: .eh_frame's rows, nothing invented`);
      assert.ok(t.rows.some((r) => r.kind === CFI_KIND.plt), `${name}: the .plt row of .eh_frame`);
      if (name === 'over') assert.equal(t.unsupported['debug_frame-too-large'], 1);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
