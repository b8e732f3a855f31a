// `cfi`: user stacks walked in the kernel by unwind tables (--unwind cfi, bpf/cfi_walk.bpf.h).
// Rows:
//  - BPF time per walk (the program's own clock around the walk, summed in cfi_stats) and per
//    CPU-profile sample on the -O2 no-frame-pointer unwinding fixture
//    (test/fixtures/c/unwind, `all` mode: a leaf, recursion 21 deep, qsort through libc, a shared
//    library) with --unwind cfi, the frame-pointer walk (--unwind fp) on the same process beside it
//    (kernel.bpf_stats_enabled: the program's run time over the samples the target's CPU time
//    implies; the program's early exits on other processes' samples are included, so both are
//    upper bounds and their difference is the table walk's own cost), and the user-space CFI
//    unwind (--unwind dwarf, ns per sample as the tracer reports it) in the same run.
//  - Off-CPU BPF time per program run (nearly all switch-outs and -ins of the pair) on the
//    pingpong pair pinned to one CPU (bench/workloads/pingpong.c, ~150k switches a second here),
//    --unwind cfi against --unwind fp in alternating sessions, with the stack cache's walks and
//    the walk's own ns from --verbose.
//  - Table memory for real processes (node, python3, a JVM): rows the tables of their executable
//    mappings take in the kernel (12 bytes each), files, compile time; OpenTelemetry's stated
//    ceiling for its tables is 250 MB.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, JAVA_HOME, round, sleep, type BenchContext, type Row } from './lib';
import { buildUnwindFixture } from '../test/peers/unwindFixture';
import type { ProfileResult } from '../extension/protocol/profile';
import { CfiTables } from '../extension/tracers/cfiTables';

function progStat(pid: number): { ns: number; runs: number } {
  let ns = 0;
  let runs = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:bpf-prog') continue;
      const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
      ns += Number(/^run_time_ns:\s*(\d+)/m.exec(info)?.[1] ?? 0);
      runs += Number(/^run_cnt:\s*(\d+)/m.exec(info)?.[1] ?? 0);
    } catch {
      /* closed meanwhile */
    }
  }
  return { ns, runs };
}

const progNs = (pid: number) => progStat(pid).ns;

function cpuNs(pid: number): number {
  let n = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) n += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  return n;
}

const HZ = 499;

/** BPF ns per target sample over `seconds` of a profile session (see the header). */
async function nsPerSample(target: number, unwind: string, seconds: number): Promise<{ ns: number; doc: ProfileResult }> {
  const child = spawn(process.execPath, [cli, 'profile', '--pid', String(target), '--frequency', String(HZ), '--unwind', unwind, '--duration', String(seconds + 3), '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; i < 300 && progNs(child.pid!) === 0; i++) await sleep(50);
  await sleep(1000);
  const a = progNs(child.pid!);
  const ca = cpuNs(target);
  await sleep(seconds * 1000);
  const ns = progNs(child.pid!) - a;
  const samples = ((cpuNs(target) - ca) / 1e9) * HZ;
  await done;
  return { ns: ns / Math.max(1, samples), doc: JSON.parse(out) as ProfileResult };
}

async function walkCost(ctx: BenchContext): Promise<Row> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cfi-'));
  let fixture: ChildProcess | undefined;
  const stats = fs.readFileSync('/proc/sys/kernel/bpf_stats_enabled', 'utf8').trim();
  try {
    const reason = buildUnwindFixture(dir);
    if (reason) throw new Error(reason);
    fixture = spawn(path.join(dir, 'unwindfix'), ['all', '120'], { stdio: 'ignore' });
    await sleep(300);
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '1');
    const seconds = ctx.quick ? 3 : 8;
    const cfi = await nsPerSample(fixture.pid!, 'cfi', seconds);
    const fp = await nsPerSample(fixture.pid!, 'fp', seconds);
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', stats);
    const dwarf = spawnSync(process.execPath, [cli, 'profile', '--pid', String(fixture.pid), '--frequency', String(HZ), '--unwind', 'dwarf', '--duration', String(seconds), '--json'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const dw = JSON.parse(dwarf.stdout) as ProfileResult;
    const frames = cfi.doc.stacks.reduce((n, s) => n + s.count * s.frames.filter((f) => f.kind !== 'kernel').length, 0) / Math.max(1, cfi.doc.samples);
    const walkNs = cfi.doc.unwind?.cfiTables?.nsPerWalk ?? NaN;
    return {
      name: 'cfi: BPF time per user-stack walk by unwind tables (CPU samples)',
      value: round(walkNs / 1000, 2),
      unit: 'µs',
      target: 3,
      better: 'lower',
      peer: { name: '--unwind dwarf (user-space CFI per sample)', value: round((dw.unwind?.unwindNsPerSample ?? 0) / 1000, 1) },
      detail: `the walk as the program clocks it (bpf_ktime_get_ns around it); unwinding fixture (-O2, no frame pointers), ${HZ} Hz, ~${round(frames, 1)} user frames a sample; the whole program per sample from bpf_stats (an upper bound) (kernel stack, counts, walk): --unwind cfi ${round(cfi.ns)} ns, --unwind fp ${round(fp.ns)} ns (walk's own cost ≈ ${round(cfi.ns - fp.ns)} ns); the peer's cost is in the helper, after a 16 KiB stack copy per sample; load ${round(os.loadavg()[0], 1)}`,
    };
  } finally {
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', stats);
    fixture?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Long-running real programs to read the mappings of. */
function realPrograms(dir: string): { name: string; cmd: string; args: string[] }[] {
  const out = [
    { name: 'node', cmd: process.execPath, args: ['-e', 'setTimeout(() => {}, 120000)'] },
    { name: 'python3', cmd: 'python3', args: ['-c', 'import time, json, ssl, sqlite3; time.sleep(120)'] },
  ];
  const java = path.join(JAVA_HOME, 'bin', 'java');
  if (fs.existsSync(java)) {
    fs.writeFileSync(path.join(dir, 'Sleep.java'), 'public class Sleep { public static void main(String[] a) throws Exception { Thread.sleep(120000); } }');
    out.push({ name: 'java', cmd: java, args: [path.join(dir, 'Sleep.java')] });
  }
  return out;
}

async function tableMemory(ctx: BenchContext): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cfi-mem-'));
  const rows: Row[] = [];
  try {
    for (const p of realPrograms(dir)) {
      const child = spawn(p.cmd, p.args, { stdio: 'ignore' });
      try {
        await sleep(p.name === 'java' ? 4000 : 1500);
        const t = new CfiTables(ctx.log);
        const t0 = performance.now();
        t.plan(child.pid!);
        const ms = performance.now() - t0;
        const files = new Set(fs.readFileSync(`/proc/${child.pid}/maps`, 'utf8').split('\n').filter((l) => / ..x. /.test(l) && l.includes('/')).map((l) => l.slice(l.indexOf('/')))).size;
        const kib = (t.plannedRows * 12) / 1024;
        rows.push({
          name: `cfi: unwind table memory, ${p.name}`,
          value: round(kib / 1024, 2),
          unit: 'MiB',
          target: 250,
          better: 'lower',
          peer: null,
          detail: `${t.plannedRows} rows (12 B each) for ${files} executable files, ${t.fpMappings} mappings by frame pointers (no file or no .eh_frame: JIT code, vdso); compiled in ${round(ms)} ms; target: OpenTelemetry's stated ceiling for all tables (250 MB)`,
        });
      } finally {
        child.kill('SIGKILL');
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** One off-CPU session on pid: BPF ns per program run over 4 s, and its --verbose figures. */
async function offcpuSession(pid: number, unwind: string): Promise<{ ns: number; perS: number; log: string }> {
  const cli = spawn(process.execPath, [cliPath(), 'profile', '--pid', String(pid), '--event', 'offcpu', '--unwind', unwind, '--duration', '8', '--verbose', '--json'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  cli.stderr.on('data', (d) => (log += d));
  const done = new Promise<void>((r) => cli.once('exit', () => r()));
  for (let i = 0; i < 400 && progStat(cli.pid!).runs === 0; i++) await sleep(50);
  await sleep(1000);
  const a = progStat(cli.pid!);
  await sleep(4000);
  const b = progStat(cli.pid!);
  await done;
  return { ns: (b.ns - a.ns) / Math.max(1, b.runs - a.runs), perS: (b.runs - a.runs) / 4, log };
}

const cliPath = () => cli;

async function offcpuCost(ctx: BenchContext): Promise<Row> {
  const pp = spawn(path.join(ctx.buildDir, 'pingpong'), ['3000'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const stats = fs.readFileSync('/proc/sys/kernel/bpf_stats_enabled', 'utf8').trim();
  try {
    await sleep(500);
    pp.stdin.write('pin 0 0\n');
    await sleep(300);
    pp.stdin.write('120\n');
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '1');
    const runs: Record<string, { ns: number; perS: number; log: string }[]> = { fp: [], cfi: [] };
    for (let i = 0; i < (ctx.quick ? 1 : 3); i++) for (const m of ['fp', 'cfi']) runs[m].push(await offcpuSession(pp.pid!, m));
    const med = (m: string) => [...runs[m].map((r) => r.ns)].sort((x, y) => x - y)[Math.floor(runs[m].length / 2)];
    const last = runs.cfi[runs.cfi.length - 1].log;
    const walks = /stacks walked (\d+).*?reused (\d+)/.exec(last);
    return {
      name: 'cfi: off-CPU BPF time per switch, --unwind cfi (pingpong on one CPU)',
      value: round(med('cfi')),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: '--unwind fp', value: round(med('fp')) },
      detail: `${round(runs.cfi[0].perS)} program runs/s; ${runs.cfi.length} alternating sessions each; last cfi session: ${walks ? `${walks[1]} walks, ${walks[2]} reuses` : 'no cache figures'}, ${/(\d+) ns a walk/.exec(last)?.[1] ?? '?'} ns a walk; load ${round(os.loadavg()[0], 1)}`,
    };
  } finally {
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', stats);
    pp.kill('SIGKILL');
  }
}

export async function benchCfi(ctx: BenchContext): Promise<Row[]> {
  return [await walkCost(ctx), await offcpuCost(ctx), ...(await tableMemory(ctx))];
}
