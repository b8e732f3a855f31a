// The reference for our CFI unwinding: `perf record --call-graph dwarf` (Debian linux-perf) on the
// same process in the same run, its stacks read back with `perf script`. Used by the kernel-tier
// unwinding test and the bench rows.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** One sampled stack, root first (as in folded output), with its count. */
export interface FoldedStack {
  frames: string[];
  count: number;
}

/** The perf binary, or undefined with nothing installed (Debian: linux-perf; its /usr/bin/perf wrapper needs the versioned binary). */
export function perfBinary(): string | undefined {
  const wrapper = spawnSync('perf', ['--version'], { encoding: 'utf8' });
  if (wrapper.status === 0) return 'perf';
  // Debian's /usr/bin/perf refuses kernels it has no matching binary for; any perf_* works for sampling.
  const dir = '/usr/bin';
  const found = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^perf_\d/.test(f)).sort() : [];
  return found.length ? path.join(dir, found[found.length - 1]) : undefined;
}

/** perf script's text: blank-line separated samples, a header line then one "addr sym (dso)" line per frame, leaf first. */
export function parsePerfScript(text: string, opts: { userOnly?: boolean } = {}): FoldedStack[] {
  const counts = new Map<string, number>();
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((l) => l.trim());
    if (lines.length < 2) continue;
    const frames = lines
      .slice(1)
      .filter((l) => !opts.userOnly || !/\(\[kernel\.kallsyms\]\)\s*$/.test(l))
      .map((l) => /^\s*[0-9a-f]+\s+(.+?)(?:\s+\(.*\))?\s*$/.exec(l)?.[1] ?? '[unknown]')
      .map((f) => f.replace(/\+0x[0-9a-f]+$/, '').replace(/ \(inlined\)$/, ''))
      .reverse();
    const key = frames.join(';');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, count]) => ({ frames: k.split(';'), count }));
}

export interface PerfRun {
  stacks: FoldedStack[];
  samples: number;
  /** wall time perf script took to unwind and print every sample */
  scriptMs: number;
}

/** Samples `pid` for `seconds` at `frequency` with DWARF call graphs (stack copy of `stackBytes`); userOnly drops kernel frames (samples in the kernel keep their user stack); noInline skips perf's inlined frames. */
export async function perfDwarf(pid: number, seconds: number, frequency: number, stackBytes = 16384, opts: { userOnly?: boolean; noInline?: boolean } = {}): Promise<PerfRun> {
  const perf = perfBinary();
  if (!perf) throw new Error('perf is not installed (Debian package linux-perf)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'perf-dwarf-'));
  const data = path.join(dir, 'perf.data');
  try {
    await new Promise<void>((resolve, reject) => {
      const p = spawn(perf, ['record', '-q', '-N', '-o', data, '-F', String(frequency), '--call-graph', `dwarf,${stackBytes}`, '-p', String(pid), '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d) => (err += d));
      p.on('error', reject);
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perf record exited ${code}: ${err.trim()}`))));
    });
    const t0 = Date.now();
    // --no-inline: perf resolves inlined frames with addr2line per address, minutes on a big binary (node)
    const s = spawnSync(perf, ['script', '-i', data, '-F', 'comm,tid,ip,sym,dso', ...(opts.noInline ? ['--no-inline'] : [])], { encoding: 'utf8', maxBuffer: 512 << 20, timeout: 120_000 });
    const scriptMs = Date.now() - t0;
    if (s.status !== 0) throw new Error(`perf script failed${s.error ? ` (${s.error.message})` : ''}: ${s.stderr}`);
    const stacks = parsePerfScript(s.stdout, opts);
    return { stacks, samples: stacks.reduce((n, x) => n + x.count, 0), scriptMs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Among samples whose leaf-most frame named `leaf` is directly called by one of `callers`, each
 * caller's share (0..1). Frames are root first.
 */
export function callerShares(stacks: FoldedStack[], leaf: string, callers: string[]): Record<string, number> {
  const n: Record<string, number> = Object.fromEntries(callers.map((c) => [c, 0]));
  let total = 0;
  for (const s of stacks) {
    const i = s.frames.lastIndexOf(leaf);
    if (i <= 0) continue;
    const caller = s.frames[i - 1];
    if (!(caller in n)) continue;
    n[caller] += s.count;
    total += s.count;
  }
  return Object.fromEntries(callers.map((c) => [c, total ? n[c] / total : 0]));
}

/** Folded text ("a;b;c 12" per line) → stacks. */
export function parseFolded(text: string): FoldedStack[] {
  const out: FoldedStack[] = [];
  for (const line of text.split('\n')) {
    const m = /^(.*) (\d+)$/.exec(line.trim());
    if (m) out.push({ frames: m[1].split(';'), count: Number(m[2]) });
  }
  return out;
}
