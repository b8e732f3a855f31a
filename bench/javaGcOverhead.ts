// `java-gc overhead`: a GC-heavy JVM (bench/workloads/GcHeavy.java, SerialGC, 32 MB young gen,
// several hundred young GCs a second) runs the same allocation rounds untraced, traced by our
// CLI (`java-gc --pid`), and traced by bpftrace on the same four hotspot USDT probes. Three
// JVMs live side by side; rounds alternate between them, so drift hits all three alike.
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
  const rounds = ctx.quick ? 3 : 9;
  const mb = ctx.quick ? '3000' : '6000';
  const java = path.join(JAVA_HOME, 'bin', 'java');
  const jvm = () => new LineProcess(java, [...JVM_FLAGS, '-cp', ctx.buildDir, 'GcHeavy']);
  const jvms = { untraced: jvm(), ours: jvm(), bpftrace: jvm() };
  const tracers: Attached[] = [];
  try {
    for (const j of Object.values(jvms)) await j.next('ready');
    // Warm the JIT before anything is measured.
    for (const j of Object.values(jvms)) for (let i = 0; i < 2; i++) await j.ask(mb, 'ms');
    tracers.push(await startCli(['java-gc', '--pid', String(jvms.ours.pid)]));
    tracers.push(await startBpftrace(bpftraceProgram(libjvm()), ['-p', String(jvms.bpftrace.pid)]));
    let gcs = 0;
    const run = (j: LineProcess) => async () => {
      j.send(mb);
      const [, ms, , n] = (await j.next('ms')).split(/\s+/);
      gcs = Number(n);
      return Number(ms);
    };
    const r = await interleave(rounds, { untraced: run(jvms.untraced), ours: run(jvms.ours), bpftrace: run(jvms.bpftrace) }, ctx.log);
    const ms = median(r.untraced);
    const detail = `${mb} MB allocation rounds, ~${gcs} young GCs each (~${Math.round((gcs / ms) * 1000)} GCs/s, 8 pools reported per GC); median round untraced ${round(ms, 1)} ms, ours ${round(median(r.ours), 1)} ms, bpftrace ${round(median(r.bpftrace), 1)} ms; ${rounds} interleaved rounds`;
    return [
      {
        name: 'java-gc overhead (traced / untraced runtime)',
        value: round(ratioOfRounds(r.ours, r.untraced), 4),
        unit: '×',
        target: 1.01,
        better: 'lower',
        peer: { name: 'bpftrace, same 4 USDT probes', value: round(ratioOfRounds(r.bpftrace, r.untraced), 4) },
        detail,
      },
    ];
  } finally {
    for (const t of tracers) await t.stop();
    for (const j of Object.values(jvms)) await j.close();
  }
}
