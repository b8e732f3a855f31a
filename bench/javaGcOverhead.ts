// `java-gc overhead`: a GC-heavy JVM (bench/workloads/GcHeavy.java, SerialGC, 32 MB young gen,
// several hundred young GCs a second) runs the same allocation rounds untraced, traced by our
// CLI (`java-gc --pid`), and traced by bpftrace on the same four hotspot USDT probes. One JVM
// serves all three (separate JVMs differ by several percent from JIT decisions alone); each
// tracer attaches for its round and detaches after it; rounds alternate.
import fs from 'node:fs';
import path from 'node:path';
import { interleave, JAVA_HOME, libjvm, LineProcess, median, ratioOfRounds, round, startBpftrace, startCli, type Attached, type BenchContext, type Row } from './lib';

const JVM_FLAGS = ['-XX:+UseSerialGC', '-Xmx128m', '-Xmn32m'];

function bpftraceProgram(lib: string): string {
  // The same work as bpf/java-gc.bpf.c in spirit: time each pause, keep pool usage before/after.
  const u = (p: string) => `usdt:${lib}:hotspot:${p}`;
  return [
    `${u('gc__begin')} { @start[tid] = nsecs; @full[tid] = arg0; }`,
    `${u('gc__end')} /@start[tid]/ { @pause_us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); delete(@full[tid]); }`,
    `${u('mem__pool__gc__begin')} { @before[arg2] = arg5; }`,
    `${u('mem__pool__gc__end')} { @after[arg2] = arg5; }`,
  ].join(' ');
}

export async function benchJavaGc(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 4 : 11;
  const mb = ctx.quick ? '3000' : '6000';
  const j = new LineProcess(path.join(JAVA_HOME, 'bin', 'java'), [...JVM_FLAGS, '-cp', ctx.buildDir, 'GcHeavy']);
  try {
    await j.next('ready');
    // Warm the JIT before anything is measured.
    for (let i = 0; i < 3; i++) await j.ask(mb, 'ms');
    let gcs = 0;
    const wall: Record<string, number[]> = { untraced: [], ours: [], bpftrace: [] };
    // The value of a round is the JVM's CPU time (all threads): uprobe handling runs in the
    // traced thread and is charged there, while time spent waiting for a CPU that another
    // tenant holds is not. Wall time is kept too and reported next to it.
    const round1 = (k: string) => async () => {
      const c0 = cpuNs(j.pid);
      j.send(mb);
      const [, ms, , n] = (await j.next('ms')).split(/\s+/);
      const cpu = (cpuNs(j.pid) - c0) / 1e6;
      gcs = Number(n);
      wall[k].push(Number(ms));
      return cpu;
    };
    const traced = (k: string, start: () => Promise<Attached>) => async () => {
      const t = await start();
      try {
        return await round1(k)();
      } finally {
        await t.stop();
      }
    };
    const r = await interleave(
      rounds,
      {
        untraced: round1('untraced'),
        ours: traced('ours', () => startCli(['java-gc', '--pid', String(j.pid)])),
        bpftrace: traced('bpftrace', () => startBpftrace(bpftraceProgram(libjvm()), ['-p', String(j.pid)])),
      },
      ctx.log,
    );
    const ms = median(wall.untraced);
    const gcPerSec = Math.round((gcs / ms) * 1000);
    // extra CPU per GC, from the per-round differences against the untraced round before it
    const perGcUs = (k: string) => round(median(r[k].map((x, i) => ((x - r.untraced[i]) / gcs) * 1000)), 1);
    const detail =
      `one JVM (SerialGC, -Xmx128m -Xmn32m); each round allocates ${mb} MB: ~${gcs} young GCs (~${gcPerSec} GCs/s, each reporting 8 memory pools, so 18 probe hits per GC); ` +
      `value = JVM CPU time (all threads, /proc/PID/task/*/schedstat) traced / untraced, median of ${rounds} interleaved rounds, each tracer attached for its round only; ` +
      `median round CPU untraced ${round(median(r.untraced), 1)} ms, ours ${round(median(r.ours), 1)} ms, bpftrace ${round(median(r.bpftrace), 1)} ms ` +
      `(≈ ${perGcUs('ours')} µs more per GC for ours, ${perGcUs('bpftrace')} µs for bpftrace); ` +
      `wall-time ratios: ours ${round(ratioOfRounds(wall.ours, wall.untraced), 4)}, bpftrace ${round(ratioOfRounds(wall.bpftrace, wall.untraced), 4)}`;
    return [
      {
        name: 'java-gc overhead (traced / untraced runtime)',
        value: round(ratioOfRounds(r.ours, r.untraced), 4),
        unit: '×',
        target: 1.01,
        better: 'lower',
        peer: { name: 'bpftrace, same 4 USDT probes', value: round(ratioOfRounds(r.bpftrace, r.untraced), 4) },
        detail,
        limit: `the probes fire 18 times per GC and this workload collects ~${gcPerSec} times a second; at the kernel's ~1-1.7 µs per uprobe hit that alone is ~${round(((gcPerSec * 18 * 1.3) / 1e6) * 100, 1)}% of a CPU before any BPF logic runs (bpftrace pays the same); a program collecting a few times a second would see ~0.01%`,
      },
    ];
  } finally {
    await j.close();
  }
}

/** CPU time of every thread of a process so far, in ns (schedstat's first field). */
function cpuNs(pid: number): number {
  let sum = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread exited */
    }
  }
  return sum;
}
