// `profile overhead`: a CPU-bound loop (bench/workloads/cpuloop.c) reports its throughput over
// rounds of fixed wall time in two processes side by side, one sampled by our CLI at 99 Hz
// (`profile --pid`), one not; rounds alternate. The row is the slowdown: unprofiled / profiled.
import path from 'node:path';
import { interleave, LineProcess, median, ratioOfRounds, round, startCli, type Attached, type BenchContext, type Row } from './lib';

export async function benchProfile(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 5 : 11;
  const seconds = ctx.quick ? '1' : '2';
  const bin = path.join(ctx.buildDir, 'cpuloop');
  const plain = new LineProcess(bin, []);
  const profiled = new LineProcess(bin, []);
  let tracer: Attached | undefined;
  try {
    await plain.next('ready');
    await profiled.next('ready');
    tracer = await startCli(['profile', '--pid', String(profiled.pid), '--frequency', '99']);
    const run = (p: LineProcess) => () => p.ask(seconds, 'ops_per_sec');
    const r = await interleave(rounds, { unprofiled: run(plain), profiled: run(profiled) }, ctx.log);
    return [
      {
        name: 'profile overhead (99 Hz, unprofiled / profiled throughput)',
        value: round(ratioOfRounds(r.unprofiled, r.profiled), 4),
        unit: '×',
        target: 1.01,
        better: 'lower',
        peer: null,
        detail: `CPU-bound loop, ${rounds} interleaved rounds of ${seconds} s; median throughput unprofiled ${Math.round(median(r.unprofiled)).toLocaleString('en-US')} ops/s, profiled ${Math.round(median(r.profiled)).toLocaleString('en-US')} ops/s`,
      },
    ];
  } finally {
    await tracer?.stop();
    await plain.close();
    await profiled.close();
  }
}
