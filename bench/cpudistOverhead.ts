// `cpudist overhead per context switch`: the BPF run time each sched_switch costs under our
// cpudist and under Debian's libbpf-tools cpudist (the bcc tool), both tracing the whole system
// while `perf bench sched pipe` bounces a token between two threads (two switches a round trip).
// Rounds alternate, each tracer attached for its rounds only; kernel.bpf_stats_enabled gives the
// run time and run count of the programs the tracer's process holds: the count is the number of
// switches the tool saw, the machine's own included, so the figure is ns per switch. The row's
// figure is ours with --preempted, which counts the runs libbpf-tools counts (most switches here
// end in a sleep, which it skips); ours by default counts every run, in the detail.
import { spawnSync } from 'node:child_process';
import { bpfNsPerEvent, median, round, startCli, startUntil, type BenchContext, type Row } from './lib';

const PEER = '/usr/sbin/cpudist';

/** A whole-system workload of context switches: `loops` round trips of a token between two threads. */
function switches(loops: number): void {
  spawnSync('perf', ['bench', 'sched', 'pipe', '-l', String(loops)], { stdio: 'ignore' });
}

export async function benchCpudist(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const loops = ctx.quick ? 50_000 : 200_000;
  const ours: number[] = [];
  const every: number[] = [];
  const peer: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // per run of the programs: the switches each tool saw, the machine's own included
    ours.push(await bpfNsPerEvent(() => startCli(['cpudist', '--preempted']), () => switches(loops)));
    every.push(await bpfNsPerEvent(() => startCli(['cpudist']), () => switches(loops)));
    peer.push(await bpfNsPerEvent(() => startUntil('stdbuf', ['-oL', PEER], 'stdout', /Tracing on-CPU time/), () => switches(loops)));
  }
  const list = (xs: number[]) => xs.map((x) => Math.round(x)).join(' ');
  ctx.log(`  cpudist: BPF ns per switch ours --preempted ${list(ours)}, every run ${list(every)}, libbpf-tools ${list(peer)}`);
  return [
    {
      name: 'cpudist overhead per context switch (BPF run time per sched_switch)',
      value: round(median(ours), 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: 'libbpf-tools cpudist', value: round(median(peer), 0) },
      detail: `ours with --preempted (the runs libbpf-tools counts); counting every run (the default) ${round(median(every), 0)} ns. perf bench sched pipe -l ${loops} per round (whole system traced), median of ${rounds} alternating rounds; kernel.bpf_stats_enabled run time over run count of every program each tool holds`,
    },
  ];
}
