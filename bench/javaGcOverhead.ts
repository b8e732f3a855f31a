// `java-gc overhead`: a GC-heavy JVM (bench/workloads/GcHeavy.java, SerialGC, 32 MB young gen,
// several hundred young GCs a second) runs the same allocation rounds untraced, traced by our
// CLI (`java-gc --pid`), and traced by bpftrace on the same four hotspot USDT probes. One JVM
// serves all three (separate JVMs differ by several percent from JIT decisions alone); each
// tracer attaches for its round and detaches after it; rounds alternate.
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
  const rounds = ctx.quick ? 4 : 9;
  const mb = ctx.quick ? '3000' : '6000';
  const j = new LineProcess(path.join(JAVA_HOME, 'bin', 'java'), [...JVM_FLAGS, '-cp', ctx.buildDir, 'GcHeavy']);
  try {
    await j.next('ready');
    // Warm the JIT before anything is measured.
    for (let i = 0; i < 3; i++) await j.ask(mb, 'ms');
    let gcs = 0;
    const round1 = async () => {
      j.send(mb);
      const [, ms, , n] = (await j.next('ms')).split(/\s+/);
      gcs = Number(n);
      return Number(ms);
    };
    const traced = (start: () => Promise<Attached>) => async () => {
      const t = await start();
      try {
        return await round1();
      } finally {
        await t.stop();
      }
    };
    const r = await interleave(
      rounds,
      {
        untraced: round1,
        ours: traced(() => startCli(['java-gc', '--pid', String(j.pid)])),
        bpftrace: traced(() => startBpftrace(bpftraceProgram(libjvm()), ['-p', String(j.pid)])),
      },
      ctx.log,
    );
    const ms = median(r.untraced);
    const perGcUs = (k: string) => round(((median(r[k]) - ms) / gcs) * 1000, 1);
    const detail =
      `one JVM (SerialGC, -Xmx128m -Xmn32m); each round allocates ${mb} MB: ~${gcs} young GCs (~${Math.round((gcs / ms) * 1000)} GCs/s, each reporting 8 memory pools, so 18 probe hits per GC); ` +
      `median round untraced ${round(ms, 1)} ms, ours ${round(median(r.ours), 1)} ms, bpftrace ${round(median(r.bpftrace), 1)} ms ` +
      `(≈ ${perGcUs('ours')} µs per GC for ours, ${perGcUs('bpftrace')} µs for bpftrace); ${rounds} rounds, tracer attached for its round only, rounds interleaved`;
    return [
      {
        name: 'java-gc overhead (traced / untraced runtime)',
        value: round(ratioOfRounds(r.ours, r.untraced), 4),
        unit: '×',
        target: 1.01,
        better: 'lower',
        peer: { name: 'bpftrace, same 4 USDT probes', value: round(ratioOfRounds(r.bpftrace, r.untraced), 4) },
        detail,
        limit: `the probes fire 18 times per GC and this workload collects ~${Math.round((gcs / ms) * 1000)} times a second; at the kernel's ~1-1.7 µs per uprobe hit that alone is ~${round((((gcs / ms) * 1000 * 18 * 1.3) / 1e6) * 100, 1)}% of a CPU before any BPF logic runs (bpftrace pays the same); a program collecting a few times a second would see ~0.01%`,
      },
    ];
  } finally {
    await j.close();
  }
}
