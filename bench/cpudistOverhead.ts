// `cpudist overhead per context switch`: the BPF run time each sched_switch costs under our
// cpudist and under Debian's libbpf-tools cpudist (the bcc tool), both tracing the whole system
// while `perf bench sched pipe` bounces a token between two threads (two switches a round trip).
// Rounds alternate, each tracer attached for its rounds only; kernel.bpf_stats_enabled gives the
// run time and run count of the programs the tracer's process holds: the count is the number of
// switches the tool saw, the machine's own included, so the figure is ns per switch. The row's
// figure is ours with --preempted, which counts the runs libbpf-tools counts (most switches here
// end in a sleep, which it skips); ours by default counts every run, in the detail.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { median, progStats, round, startCli, startUntil, type Attached, type BenchContext, type Row } from './lib';

const PEER = '/usr/sbin/cpudist';
const KNOB = '/proc/sys/kernel/bpf_stats_enabled';

/** ns of BPF run time per sched_switch while `start`'s tracer is attached, over `loops` round trips. */
async function perSwitch(start: () => Promise<Attached>, loops: number): Promise<number> {
  const was = fs.readFileSync(KNOB, 'utf8').trim();
  const t = await start();
  try {
    fs.writeFileSync(KNOB, '1');
    const before = progStats(t.child.pid ?? 0);
    spawnSync('perf', ['bench', 'sched', 'pipe', '-l', String(loops)], { stdio: 'ignore' });
    const after = progStats(t.child.pid ?? 0);
    return (after.ns - before.ns) / Math.max(1, after.runs - before.runs);
  } finally {
    fs.writeFileSync(KNOB, was);
    await t.stop();
  }
}

export async function benchCpudist(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const loops = ctx.quick ? 50_000 : 200_000;
  const ours: number[] = [];
  const every: number[] = [];
  const peer: number[] = [];
  for (let r = 0; r < rounds; r++) {
    ours.push(await perSwitch(() => startCli(['cpudist', '--preempted']), loops));
    every.push(await perSwitch(() => startCli(['cpudist']), loops));
    peer.push(await perSwitch(() => startUntil('stdbuf', ['-oL', PEER], 'stdout', /Tracing on-CPU time/), loops));
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
