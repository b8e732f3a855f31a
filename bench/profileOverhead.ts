// `profile overhead`: a CPU-bound loop (bench/workloads/cpuloop.c, built with frame pointers)
// reports its throughput over rounds of fixed wall time, alternately unprofiled and sampled by our
// CLI at 99 Hz (`profile --pid --unwind fp`, the path kept where frame pointers are enough,
// attached for that round only; one process for both, so nothing but the profiler differs). The
// row is the slowdown: unprofiled / profiled throughput. The CFI path has its own row
// (./profileUnwind.ts).
import path from 'node:path';
import { interleave, LineProcess, median, ratioOfRounds, round, startCli, type Attached, type BenchContext, type Row } from './lib';

export async function benchProfile(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 5 : 11;
  const seconds = ctx.quick ? '1' : '2';
  const p = new LineProcess(path.join(ctx.buildDir, 'cpuloop'), []);
  try {
    await p.next('ready');
    await p.ask('0.5', 'ops_per_sec');
    const run = () => p.ask(seconds, 'ops_per_sec');
    const profiled = async () => {
      const t: Attached = await startCli(['profile', '--pid', String(p.pid), '--frequency', '99', '--unwind', 'fp']);
      try {
        return await run();
      } finally {
        await t.stop();
      }
    };
    const r = await interleave(rounds, { unprofiled: run, profiled }, ctx.log);
    return [
      {
        name: 'profile overhead (99 Hz, frame pointers, unprofiled / profiled throughput)',
        value: round(ratioOfRounds(r.unprofiled, r.profiled), 4),
        unit: '×',
        target: 1.01,
        better: 'lower',
        peer: null,
        limit: 'at 99 Hz the sampling itself costs ~0.1% (a stack walk per 10 ms); a larger figure is this shared VM\'s noise (see the per-round throughputs in the log)',
        detail: `one CPU-bound process, ${rounds} interleaved rounds of ${seconds} s (the profiler attached for its rounds only); median throughput unprofiled ${Math.round(median(r.unprofiled)).toLocaleString('en-US')} ops/s, profiled ${Math.round(median(r.profiled)).toLocaleString('en-US')} ops/s`,
      },
    ];
  } finally {
    await p.close();
  }
}
