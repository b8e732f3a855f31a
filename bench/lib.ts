// What every benchmark group shares: the row shape, medians and interleaved rounds, line-driven
// workload processes, the CLI and bpftrace started until "attached", and the workload build.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { loadAddon } from '../extension/sys/addon';
import type { TracerEnv } from '../extension/tracers/tracer';

export const root = path.resolve(__dirname, '..');
export const cli = path.join(root, 'dist', 'cli.js');
export const JAVA_HOME = '/usr/lib/jvm/java-17-openjdk-amd64';

/** What a group that loads a BPF object itself (a floor, an event generator) gives the tracers' loaders: the built addon and objects under dist/. */
export function benchTracerEnv(log: (m: string) => void): TracerEnv {
  const assetDir = path.join(root, 'dist');
  return { addon: loadAddon(assetDir), assetDir, log };
}

export interface Row {
  name: string;
  value: number;
  unit: string;
  /** null where the issue sets none (the row is context for another) */
  target: number | null;
  better: 'lower' | 'higher';
  /** null where no peer tool does the same job */
  peer: { name: string; value: number } | null;
  /** RESULTS.md only: absolute figures, run counts, caveats */
  detail?: string;
  /** RESULTS.md only: what limits the figure, said when it misses its target */
  limit?: string;
}

export interface BenchContext {
  quick: boolean;
  /** compiled workloads (C binaries and Java classes) */
  buildDir: string;
  log(message: string): void;
}

export function median(xs: number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/**
 * Runs the variants in turn, A B C A B C ..., `rounds` times: the machine's drift (other
 * tenants, thermal, page cache) hits every variant alike. Returns each variant's measurements.
 */
export async function interleave(rounds: number, variants: Record<string, () => Promise<number>>, log: (m: string) => void): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    const line: string[] = [];
    for (const [name, run] of Object.entries(variants)) {
      const v = await run();
      out[name].push(v);
      line.push(`${name} ${round(v, 2)}`);
    }
    log(`  round ${r + 1}/${rounds}: ${line.join(', ')}`);
  }
  return out;
}

/** Median of the per-round ratios a[i]/b[i] (robust to slow drift across rounds). */
export function ratioOfRounds(a: number[], b: number[]): number {
  return median(a.map((x, i) => x / b[i]));
}

/** A child process driven by lines: send a line, await the next stdout line with a prefix. */
export class LineProcess {
  readonly child: ChildProcess;
  private lines: string[] = [];
  private waiters: (() => void)[] = [];
  private exited = false;
  private stderrTail = '';

  constructor(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
    this.child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    readline.createInterface({ input: this.child.stdout! }).on('line', (l) => {
      this.lines.push(l);
      this.wake();
    });
    this.child.stderr!.on('data', (d) => (this.stderrTail = (this.stderrTail + d).slice(-2000)));
    this.child.on('exit', () => {
      this.exited = true;
      this.wake();
    });
    this.child.on('error', (e) => {
      this.stderrTail += String(e);
      this.exited = true;
      this.wake();
    });
    this.child.stdin!.on('error', () => undefined);
  }

  get pid(): number {
    return this.child.pid!;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  async next(prefix: string, timeoutMs = 120_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return this.lines.splice(0, i + 1)[i];
      if (this.exited) throw new Error(`${this.child.spawnfile} exited before printing "${prefix}": ${this.stderrTail.trim()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.child.spawnfile} printed no "${prefix}" within ${timeoutMs} ms: ${this.stderrTail.trim()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Sends `line` and returns the number after `prefix` in the answer. */
  async ask(line: string, prefix: string): Promise<number> {
    this.send(line);
    const l = await this.next(prefix);
    return Number(l.slice(prefix.length).trim().split(/\s+/)[0]);
  }

  async close(): Promise<void> {
    if (this.exited) return;
    this.child.stdin!.end();
    const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await new Promise<void>((resolve) => (this.exited ? resolve() : this.child.once('exit', () => resolve())));
    clearTimeout(t);
  }
}

/** A tracer (our CLI or bpftrace) running in the background until stop(). */
export interface Attached {
  child: ChildProcess;
  /** ms from spawn to the "attached" signal */
  attachMs: number;
  stop(): Promise<void>;
  /** the last 64 KiB the process printed (stdout and stderr) */
  output(): string;
}

export function startUntil(cmd: string, args: string[], stream: 'stdout' | 'stderr', ready: RegExp, timeoutMs = 60_000): Promise<Attached> {
  const t0 = performance.now();
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  // SIGINT, as a user's Ctrl-C; repeated, because bpftrace 0.17 now and then misses one that
  // comes right after its BEGIN probe ran; SIGKILL if a tracer still hangs.
  const stop = async () => {
    let n = 0;
    const nudge = () => {
      if (exited) return;
      child.kill(++n > 10 ? 'SIGKILL' : 'SIGINT');
      t = setTimeout(nudge, 3000);
    };
    let t: NodeJS.Timeout | undefined;
    nudge();
    await exit;
    clearTimeout(t);
  };
  return new Promise((resolve, reject) => {
    let attached = false;
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${path.basename(cmd)} ${args.slice(0, 2).join(' ')} did not attach within ${timeoutMs} ms: ${text.trim().slice(-500)}`));
    }, timeoutMs);
    // Both pipes stay read to the end (a tracer blocked on a full pipe would never exit);
    // only the text before "attached" and a short tail are kept.
    const onData = (from: 'stdout' | 'stderr') => (d: Buffer) => {
      text = (text + d).slice(-64 * 1024);
      if (!attached && from === stream && ready.test(text)) {
        attached = true;
        clearTimeout(timer);
        resolve({ child, attachMs: performance.now() - t0, stop, output: () => text });
      }
    };
    child.stdout!.on('data', onData('stdout'));
    child.stderr!.on('data', onData('stderr'));
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!attached) reject(new Error(`${path.basename(cmd)} ${args.slice(0, 2).join(' ')} exited (${code}) before attaching: ${text.trim().slice(-800)}`));
    });
  });
}

/**
 * Our CLI in text mode: it prints its banner on stderr once every probe is attached (runTracer
 * calls the banner after tracer.start() returned), so spawn → banner is start → attached.
 */
/** cpus: a taskset CPU list to run the CLI on (kept off the workload's CPU). */
export function startCli(args: string[], cpus?: string): Promise<Attached> {
  if (cpus) return startUntil('taskset', ['-c', cpus, process.execPath, cli, ...args], 'stderr', /Ctrl-C to end/);
  return startUntil(process.execPath, [cli, ...args], 'stderr', /Ctrl-C to end/);
}

/** bpftrace: BEGIN fires after every probe is attached, so its output marks "attached". */
export function startBpftrace(program: string, extra: string[] = []): Promise<Attached> {
  return startUntil('bpftrace', ['-B', 'none', ...extra, '-e', `BEGIN { printf("bench-attached\\n"); } ${program}`], 'stdout', /bench-attached/);
}

function newer(out: string, src: string): boolean {
  return fs.existsSync(out) && fs.statSync(out).mtimeMs >= fs.statSync(src).mtimeMs;
}

/** Compiles bench/workloads/ into a build folder outside the repo (cached by mtime). */
export function buildWorkloads(): string {
  const dir = path.join(os.tmpdir(), 'ebpf-studio-bench');
  fs.mkdirSync(dir, { recursive: true });
  const src = path.join(root, 'bench', 'workloads');
  for (const f of fs.readdirSync(src)) {
    const file = path.join(src, f);
    if (f.endsWith('.c')) {
      const out = path.join(dir, f.slice(0, -2));
      if (newer(out, file)) continue;
      const r = spawnSync('gcc', ['-O2', '-g', '-fno-omit-frame-pointer', '-Wall', file, '-o', out], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`compiling ${f} failed (is gcc installed?): ${r.stderr || r.error}`);
    } else if (f.endsWith('.java')) {
      const out = path.join(dir, f.replace(/\.java$/, '.class'));
      if (newer(out, file)) continue;
      const r = spawnSync(path.join(JAVA_HOME, 'bin', 'javac'), ['-d', dir, file], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`compiling ${f} failed (needs openjdk-17-jdk-headless): ${r.stderr || r.error}`);
    }
  }
  return dir;
}

export function libjvm(): string {
  return path.join(JAVA_HOME, 'lib', 'server', 'libjvm.so');
}

export function libc(): string {
  const f = ['/usr/lib/x86_64-linux-gnu/libc.so.6', '/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib64/libc.so.6'].find((p) => fs.existsSync(p));
  if (!f) throw new Error('libc.so.6 not found');
  return fs.realpathSync(f);
}

export function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** run_time_ns and run_cnt of every BPF program the process holds (fdinfo, with kernel.bpf_stats_enabled = 1). */
export function progStats(pid: number): { ns: number; runs: number } {
  let ns = 0;
  let runs = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let link = '';
    try {
      link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (link !== 'anon_inode:bpf-prog') continue;
    const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    ns += Number(/^run_time_ns:\s*(\d+)/m.exec(info)?.[1] ?? 0);
    runs += Number(/^run_cnt:\s*(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return { ns, runs };
}

/**
 * ns of BPF run time per event that `start`'s tracer costs while `work` runs (the overhead rows
 * beside a libbpf-tools peer): the tracer is attached for this round only, and
 * kernel.bpf_stats_enabled gives the run time of every program its process holds, over `events`
 * (the workload's own count) or, without it, over those programs' run count.
 */
export async function bpfNsPerEvent(start: () => Promise<Attached>, work: () => void, events?: number): Promise<number> {
  const knob = '/proc/sys/kernel/bpf_stats_enabled';
  const was = fs.readFileSync(knob, 'utf8').trim();
  const t = await start();
  try {
    fs.writeFileSync(knob, '1');
    const before = progStats(t.child.pid ?? 0);
    work();
    const after = progStats(t.child.pid ?? 0);
    return (after.ns - before.ns) / Math.max(1, events ?? after.runs - before.runs);
  } finally {
    fs.writeFileSync(knob, was);
    await t.stop();
  }
}
