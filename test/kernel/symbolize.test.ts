// Symbolizer against live processes (root: /proc/PID/map_files and /proc/PID/mem need it).
// The fixture prints its own function and return addresses; the test recomputes them from
// /proc/PID/maps + nm + readelf (independently of our ELF reader), symbolizes them, then lets
// the process exit, deletes its binary, and symbolizes again from the capture.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Symbolizer, type Frame, type ProcessImage } from '../../extension/sys/symbolize';
import { StudioError } from '../../extension/protocol/errors';
import { buildSymfix, haveTool, markerLines, nmFunctions, parsePrinted, SYMFIX_SRC, tempDir } from '../unit/symbolizeFixture';

const skip =
  process.geteuid?.() !== 0
    ? 'symbolizing live processes reads /proc/PID/map_files and /proc/PID/mem, which need root; run the tests as root'
    : !haveTool('gcc')
      ? 'gcc is not installed (apt-get install gcc)'
      : undefined;

interface MapLine {
  start: bigint;
  end: bigint;
  perms: string;
  offset: bigint;
  path: string;
}

function mapsOf(pid: number): MapLine[] {
  return fs
    .readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const f = l.split(/\s+/);
      const [s, e] = f[0].split('-');
      return { start: BigInt('0x' + s), end: BigInt('0x' + e), perms: f[1], offset: BigInt('0x' + f[2]), path: f.slice(5).join(' ') };
    });
}

/** PT_LOAD segments from binutils readelf. */
function loads(file: string): { offset: bigint; vaddr: bigint; filesz: bigint }[] {
  const text = execFileSync('readelf', ['-lW', file], { encoding: 'utf8' });
  return [...text.matchAll(/^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+(0x[0-9a-f]+)/gm)].map((m) => ({
    offset: BigInt(m[1]),
    vaddr: BigInt(m[2]),
    filesz: BigInt(m[3]),
  }));
}

/** Link-time vaddr → runtime address and file offset in a process. */
function runtime(maps: MapLine[], file: string, vaddr: bigint): { addr: bigint; fileOffset: bigint } {
  const seg = loads(file).find((s) => vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz);
  assert.ok(seg, `no PT_LOAD holds 0x${vaddr.toString(16)} in ${file}`);
  const fileOffset = vaddr - seg.vaddr + seg.offset;
  const m = maps.find((x) => x.path === file && x.perms[2] === 'x' && fileOffset >= x.offset && fileOffset < x.offset + (x.end - x.start));
  assert.ok(m, `${file} offset 0x${fileOffset.toString(16)} is not mapped executable`);
  return { addr: m.start + fileOffset - m.offset, fileOffset };
}

interface Started {
  child: ChildProcess;
  printed: Record<string, bigint>;
  output(): string;
}

function startFixture(bin: string, args: string[]): Promise<Started> {
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} did not print ready: ${out}`)), 15_000);
    child.stdout!.on('data', (d) => {
      out += d;
      if (/^ready$/m.test(out)) {
        clearTimeout(timer);
        resolve({ child, printed: parsePrinted(out), output: () => out });
      }
    });
    child.on('error', reject);
  });
}

const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
const pick = (f: Frame) => ({ function: f.function, file: f.file, line: f.line, module: f.module, offset: f.offset });

describe('symbolize a live C process, then after it exits', { skip }, () => {
  let dir: string;
  let bin: string;
  let child: ChildProcess | undefined;
  let printed: Record<string, bigint>;
  let output: () => string;
  let maps: MapLine[];
  const lines = markerLines();
  const syms: Symbolizer[] = [];
  const newSym = (o?: ConstructorParameters<typeof Symbolizer>[0]) => {
    const s = new Symbolizer(o);
    syms.push(s);
    return s;
  };
  let libc: string;

  before(async () => {
    dir = tempDir('symfix-kernel-');
    bin = buildSymfix(dir, 'symfix', ['-O0']); // PIE: runtime addresses differ from vaddrs
    ({ child, printed, output } = await startFixture(bin, ['wait']));
    maps = mapsOf(child.pid!);
    libc = maps.find((m) => /\/libc[.-][^/]*$/.test(m.path))!.path;
  });
  after(() => {
    child?.kill('SIGKILL');
    for (const s of syms) s.dispose();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  let expected: { addrs: bigint[]; returns: boolean[]; frames: ReturnType<typeof pick>[] };
  let sym2: Symbolizer;
  let image2: ProcessImage;

  test('maps + nm give the addresses the program printed, and they symbolize to names and lines', async () => {
    const nm = nmFunctions(bin);
    const names = ['leaf_record', 'after_call', 'outer_inl', 'main'];
    const at = names.map((n) => runtime(maps, bin, nm.get(n)!));
    names.forEach((n, i) => assert.equal(at[i].addr, printed[n], `runtime address of ${n}`));

    const sym = newSym();
    const image = sym.captureProcess(child!.pid!);
    sym2 = newSym();
    image2 = sym2.captureProcess(child!.pid!); // symbolized only after the process is gone

    const addrs = [...at.map((a) => a.addr), printed.ret_from_leaf];
    const returns = [false, false, false, false, true];
    const frames = await sym.symbolizeUser(image, addrs, { returnAddresses: returns });
    names.forEach((n, i) => {
      assert.deepEqual(pick(frames[i]), { function: n, file: SYMFIX_SRC, line: lines[n], module: bin, offset: '0x' + at[i].fileOffset.toString(16) });
      assert.equal(frames[i].address, '0x' + printed[n].toString(16));
      assert.equal(frames[i].kind, 'native');
    });
    assert.equal(frames[4].function, 'after_call');
    assert.equal(frames[4].line, lines.call_leaf);
    expected = { addrs, returns, frames: frames.map(pick) };

    const w = sym.warnings(image);
    assert.ok(!w.some((x) => x.includes(bin)), `no warning about the fixture built with -g -fno-omit-frame-pointer: ${w.join('\n')}`);
  });

  test('libc frames: module path and file offset, names from .dynsym without debug files, a frame-pointer warning', async () => {
    const dyn = nmFunctions(libc, true);
    const aliases = new Map<bigint, string[]>();
    for (const [name, v] of dyn) aliases.set(v, [...(aliases.get(v) ?? []), name]);
    const wanted = ['malloc', 'free', 'qsort', 'read'].filter((n) => dyn.has(n));
    assert.ok(wanted.length >= 3, 'libc exports malloc, free, qsort, read');
    const at = wanted.map((n) => runtime(maps, libc, dyn.get(n)! + 4n));

    // An empty debug-file directory hides libc6-dbg: what users without debug packages get.
    const emptyDebug = path.join(dir, 'empty-debug');
    fs.mkdirSync(emptyDebug);
    const noDebug = newSym({ debugFileDirectories: [emptyDebug] });
    const image = noDebug.captureProcess(child!.pid!);
    const frames = await noDebug.symbolizeUser(image, at.map((a) => a.addr));
    wanted.forEach((n, i) => {
      const f = frames[i];
      assert.equal(f.module, libc);
      assert.equal(f.offset, '0x' + at[i].fileOffset.toString(16));
      assert.ok(aliases.get(dyn.get(n)!)!.includes(f.function!), `${f.function} is an alias of ${n}`);
      assert.equal(f.file, undefined);
    });
    const w = noDebug.warnings(image);
    assert.ok(w.some((x) => x.startsWith(`no debug info in ${libc}`)), w.join('\n'));
    // Debian's glibc is built without frame pointers (RECIPES.md): the fix named is one users can
    // apply (a distribution that builds it with them), never "rebuild libc".
    const fpWarning = w.find((x) => x.startsWith(`${libc} is built without frame pointers`));
    assert.ok(fpWarning, w.join('\n'));
    assert.match(fpWarning!, /Ubuntu 24\.04\+, Fedora 38\+/);
    assert.doesNotMatch(fpWarning!, /rebuild/);
    // Walked by CFI, libc (which has .eh_frame) is no problem at all.
    assert.ok(!noDebug.warnings(image, { stacks: 'cfi' }).some((x) => x.includes('frame pointers')), 'no frame-pointer warning where CFI covers the module');

    // With the default debug directory, libc6-dbg (when installed) adds file:line.
    const withDebug = newSym();
    const img2 = withDebug.captureProcess(child!.pid!);
    const framesDbg = await withDebug.symbolizeUser(img2, at.map((a) => a.addr));
    framesDbg.forEach((f) => assert.ok(f.function, `named: ${JSON.stringify(f)}`));
    const buildId = execFileSync('readelf', ['-n', libc], { encoding: 'utf8' }).match(/Build ID: ([0-9a-f]+)/)?.[1];
    if (buildId && fs.existsSync(`/usr/lib/debug/.build-id/${buildId.slice(0, 2)}/${buildId.slice(2)}.debug`)) {
      framesDbg.forEach((f) => assert.ok(f.file && f.line, `file:line from the debug file: ${JSON.stringify(f)}`));
    }
  });

  test('vdso, JIT perf map entries and unknown anonymous code', async () => {
    const pid = child!.pid!;
    const sym = newSym();
    const anon = printed.anon_exec;
    const before = sym.captureProcess(pid);
    const [unknown] = await sym.symbolizeUser(before, [anon + 0x10n]);
    assert.deepEqual(unknown, { address: '0x' + (anon + 0x10n).toString(16), module: '[unknown]', kind: 'native' });
    assert.ok(sym.warnings(before).some((w) => w.startsWith(`no perf map for pid ${pid}`)));

    const perfMap = `/tmp/perf-${pid}.map`;
    fs.writeFileSync(perfMap, `${(anon + 0x100n).toString(16)} 80 int Jitted.method(int)\n0x${(anon + 0x1000n).toString(16)} 0x100 Interpreter\n`);
    try {
      sym.refreshPerfMap(before);
      const frames = await sym.symbolizeUser(before, [anon + 0x120n, anon + 0x1010n, anon + 0x800n, anon + 0x180n], {
        returnAddresses: [false, false, false, true],
      });
      assert.deepEqual(
        frames.map((f) => [f.module, f.function, f.kind]),
        [
          ['[jit]', 'Jitted.method', 'jit'],
          ['[jit]', 'Interpreter', 'interpreted'],
          ['[unknown]', undefined, 'native'],
          ['[jit]', 'Jitted.method', 'jit'], // return address at the end of the blob: the call is inside it
        ],
      );
    } finally {
      fs.rmSync(perfMap, { force: true });
    }

    // vdso: our oracle is nm on a copy of the process's vdso image.
    const vdso = mapsOf(pid).find((m) => m.path === '[vdso]');
    if (vdso) {
      const copy = path.join(dir, 'vdso.so');
      const fd = fs.openSync(`/proc/${pid}/mem`, 'r');
      const buf = Buffer.alloc(Number(vdso.end - vdso.start));
      fs.readSync(fd, buf, 0, buf.length, vdso.start);
      fs.closeSync(fd);
      fs.writeFileSync(copy, buf);
      const [name, vaddr] = [...nmFunctions(copy, true)].find(([n]) => /clock_gettime/.test(n))!;
      const seg = loads(copy)[0];
      const [f] = await sym.symbolizeUser(before, [vdso.start + vaddr - seg.vaddr + seg.offset + 2n]);
      assert.equal(f.module, '[vdso]');
      assert.match(f.function ?? '', /clock_gettime/, `vdso symbol near ${name}`);
    }
  });

  test('a library loaded after the capture (dlopen) is found by re-reading the maps', async () => {
    const sym = newSym();
    const image = sym.captureProcess(child!.pid!);
    child!.stdin!.write('load\n');
    const deadline = Date.now() + 10_000;
    while (!/^cos 0x/m.test(output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const cos = parsePrinted(output()).cos;
    assert.ok(cos, `fixture printed the address of cos: ${output()}`);
    const [f] = await sym.symbolizeUser(image, [cos + 1n]);
    assert.match(f.module, /\/libm\.so\.6$/);
    assert.match(f.function ?? '', /cos/);
  });

  test('after the process exits and its binary is deleted, the capture still symbolizes', async () => {
    const pid = child!.pid!;
    child!.stdin!.end();
    await exited(child!);
    fs.rmSync(bin);
    assert.ok(!fs.existsSync(`/proc/${pid}`), 'process is gone');
    const frames = await sym2.symbolizeUser(image2, expected.addrs, { returnAddresses: expected.returns });
    assert.deepEqual(frames.map(pick), expected.frames);
    assert.throws(
      () => sym2.captureProcess(pid),
      (e: unknown) => e instanceof StudioError && e.kind === 'input' && /no process with pid/.test(e.message),
    );
  });
});

describe('kernel frames from /proc/kallsyms', { skip }, () => {
  test('known kernel text symbols resolve by address and inside their body', async () => {
    const text = fs.readFileSync('/proc/kallsyms', 'utf8');
    const find = (name: string) => {
      const m = new RegExp(`^([0-9a-f]+) [Tt] ${name}$`, 'm').exec(text);
      return m ? BigInt('0x' + m[1]) : undefined;
    };
    const names = ['schedule', 'do_sys_openat2', 'vfs_read'].filter((n) => find(n) !== undefined);
    assert.ok(names.length >= 2, 'kallsyms lists schedule and vfs_read');
    const sym = new Symbolizer();
    try {
      const frames = await sym.symbolizeKernel(names.flatMap((n) => [find(n)!, find(n)! + 3n]));
      assert.deepEqual(
        frames.map((f) => [f.function, f.module, f.kind]),
        names.flatMap((n) => [
          [n, '[kernel]', 'kernel'],
          [n, '[kernel]', 'kernel'],
        ]),
      );
      assert.deepEqual(sym.warnings(), []);
    } finally {
      sym.dispose();
    }
  });
});

describe('JIT frames of a real JVM through Compiler.perfmap', { skip: skip ?? (haveJava() ? undefined : 'no java/jcmd on PATH') }, () => {
  test('the perf map HotSpot writes names compiled methods and the interpreter', { timeout: 60_000 }, async () => {
    const src = path.resolve(__dirname, '../fixtures/java/SymfixJit.java');
    const { child } = await startFixture('java', ['-XX:+PreserveFramePointer', src, '30']);
    const sym = new Symbolizer();
    try {
      const pid = child.pid!;
      const r = spawnSync('jcmd', [String(pid), 'Compiler.perfmap'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, `jcmd Compiler.perfmap: ${r.stdout}${r.stderr}`);
      const image = sym.captureProcess(pid);
      const entries = fs
        .readFileSync(`/tmp/perf-${pid}.map`, 'utf8')
        .split('\n')
        .map((l) => /^(?:0x)?([0-9a-f]+) (?:0x)?([0-9a-f]+) (.*)$/.exec(l))
        .filter((m) => m !== null);
      const interp = entries.find((m) => m[3] === 'Interpreter');
      const spin = entries.filter((m) => /SymfixJit\.spin\(long\)/.test(m[3])).pop();
      assert.ok(interp && spin, 'perf map lists the interpreter and the compiled spin method');
      const addrs = [interp, spin].map((m) => BigInt('0x' + m[1]) + BigInt('0x' + m[2]) / 2n);
      const frames = await sym.symbolizeUser(image, addrs);
      assert.deepEqual(
        frames.map((f) => [f.module, f.kind]),
        [
          ['[jit]', 'interpreted'],
          ['[jit]', 'jit'],
        ],
      );
      assert.equal(frames[0].function, 'Interpreter');
      assert.equal(frames[1].function, 'SymfixJit.spin', 'named Class.method like the agent names Java frames');
      const libjvm = mapsOf(pid).find((m) => m.path.endsWith('/libjvm.so') && m.perms[2] === 'x');
      if (libjvm) {
        const [f] = await sym.symbolizeUser(image, [libjvm.start + 0x1000n]);
        assert.equal(f.module, libjvm.path);
        assert.ok(f.function, `libjvm frame named: ${JSON.stringify(f)}`);
      }
      fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
    } finally {
      child.kill('SIGKILL');
      await exited(child);
      sym.dispose();
    }
  });
});

function haveJava(): boolean {
  return spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0 && spawnSync('which', ['jcmd'], { stdio: 'ignore' }).status === 0;
}
