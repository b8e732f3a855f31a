// Symbolizer benchmark: 10k libc text addresses + 10k addresses in a C++ -O2 -g test binary,
// taken from a live process. Cold = a fresh Symbolizer (llvm-symbolizer start, DWARF loading);
// warm = the same addresses again (our cache); baselines = a bare long-lived llvm-symbolizer and
// addr2line (one process per binary) on the same module+vaddr pairs.
// Standalone: node --import tsx bench/symbolize.ts
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Symbolizer } from '../extension/sys/symbolize';
import { ElfFile, PT_LOAD } from '../extension/sys/elf/elf';
import { readMaps, type Mapping } from '../extension/sys/proc/maps';

export interface SymbolizeBench {
  coldPerSec: number;
  warmPerSec: number;
  llvmSymbolizerPerSec: number;
  addr2linePerSec: number;
  addresses: number;
  /** share of addresses that got a function name / a file:line (cold run) */
  namedShare: number;
  lineShare: number;
}

const PER_MODULE = 10_000;
const WARM_ROUNDS = 5;
/** each timing is the best of this many runs: CI machines are shared and wall time is noisy */
const REPEATS = 3;
const root = path.resolve(__dirname, '..');
const SRC = path.join(root, 'test/fixtures/cpp/symbench.cpp');

function buildFixture(): string {
  const out = path.join(root, 'build/fixtures/symbench');
  if (fs.existsSync(out) && fs.statSync(out).mtimeMs > fs.statSync(SRC).mtimeMs) return out;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('g++', ['-std=c++17', '-g', '-O2', '-fno-omit-frame-pointer', SRC, '-o', out], { stdio: 'inherit' });
  return out;
}

/** n addresses spread evenly over a module's executable mapping, with their link-time vaddrs. */
function spread(m: Mapping, n: number): { addrs: bigint[]; vaddrs: bigint[] } {
  const elf = new ElfFile(m.path);
  try {
    // The mapping is page-rounded; only the PT_LOAD's file bytes hold code.
    const seg = elf.segments.find((x) => x.type === PT_LOAD && m.offset >= x.offset && m.offset < x.offset + x.filesz);
    if (!seg) throw new Error(`${m.path}: no PT_LOAD at offset 0x${m.offset.toString(16)}`);
    const codeEnd = m.start + seg.offset + seg.filesz - m.offset;
    const end = codeEnd < m.end ? codeEnd : m.end;
    const step = (end - m.start) / BigInt(n);
    const addrs: bigint[] = [];
    const vaddrs: bigint[] = [];
    for (let i = 0; i < n; i++) {
      const a = m.start + BigInt(i) * step + 1n;
      addrs.push(a);
      vaddrs.push(elf.offsetToVaddr(a - m.start + m.offset)!);
    }
    return { addrs, vaddrs };
  } finally {
    elf.close();
  }
}

/** Runs a line-in/line-out tool over stdin and resolves when `expected` output lines arrived. */
function timeTool(cmd: string, args: string[], input: string, done: (lines: number) => boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let lines = 0;
    let finished = false;
    readline.createInterface({ input: child.stdout }).on('line', () => {
      if (!finished && done(++lines)) {
        finished = true;
        resolve(performance.now() - t0);
        child.kill();
      }
    });
    child.on('error', reject);
    child.on('exit', () => {
      if (!finished) resolve(performance.now() - t0);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

export async function benchSymbolize(): Promise<SymbolizeBench> {
  const bin = buildFixture();
  const child = spawn(bin, ['wait'], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        if (out.includes('ready')) resolve();
      });
      child.on('error', reject);
      child.on('exit', () => reject(new Error(`${bin} exited early: ${out}`)));
    });
    const maps = readMaps(child.pid!).filter((m) => m.perms[2] === 'x');
    const libcMap = maps.find((m) => /\/libc[.-][^/]*$/.test(m.path));
    const binMap = maps.find((m) => m.path === bin);
    if (!libcMap || !binMap) throw new Error('libc or the fixture is not mapped executable');
    const sets = [
      { path: libcMap.path, ...spread(libcMap, PER_MODULE) },
      { path: bin, ...spread(binMap, PER_MODULE) },
    ];
    const addrs = sets.flatMap((s) => s.addrs);
    const n = addrs.length;

    let cold = Infinity;
    let warm = Infinity;
    let named = 0;
    let withLine = 0;
    for (let r = 0; r < REPEATS; r++) {
      const sym = new Symbolizer();
      try {
        const image = sym.captureProcess(child.pid!);
        let t0 = performance.now();
        const frames = await sym.symbolizeUser(image, addrs);
        cold = Math.min(cold, performance.now() - t0);
        named = frames.filter((f) => f.function).length;
        withLine = frames.filter((f) => f.line).length;
        t0 = performance.now();
        for (let i = 0; i < WARM_ROUNDS; i++) await sym.symbolizeUser(image, addrs);
        warm = Math.min(warm, (performance.now() - t0) / WARM_ROUNDS);
      } finally {
        sym.dispose();
      }
    }

    const llvmInput = sets.flatMap((s) => s.vaddrs.map((v) => `"${s.path}" 0x${v.toString(16)}\n`)).join('');
    let llvmMs = Infinity;
    let a2lMs = Infinity;
    for (let r = 0; r < REPEATS; r++) {
      llvmMs = Math.min(llvmMs, await timeTool('llvm-symbolizer', ['--output-style=JSON', '--inlining', '--demangle'], llvmInput, (l) => l >= n));
      // addr2line prints a variable number of lines per address (inlining): time it to its exit.
      let ms = 0;
      for (const s of sets) {
        ms += await timeTool('addr2line', ['-f', '-C', '-i', '-e', s.path], s.vaddrs.map((v) => `0x${v.toString(16)}\n`).join(''), () => false);
      }
      a2lMs = Math.min(a2lMs, ms);
    }
    const perSec = (ms: number) => Math.round((n / ms) * 1000);
    return {
      coldPerSec: perSec(cold),
      warmPerSec: perSec(warm),
      llvmSymbolizerPerSec: perSec(llvmMs),
      addr2linePerSec: perSec(a2lMs),
      addresses: n,
      namedShare: named / n,
      lineShare: withLine / n,
    };
  } finally {
    child.stdin!.end();
    child.kill();
  }
}

if (require.main === module) {
  benchSymbolize().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
