// `biolatency overhead per I/O`: the BPF run time each block request costs under our biolatency
// and under Debian's libbpf-tools biolatency (the bcc tool), on the same workload: O_DIRECT 4 KiB
// writes then reads of a file on the disk backing / (each its own request). Rounds alternate,
// each tracer attached for its rounds only; kernel.bpf_stats_enabled counts the run time of every
// program the tracer's process holds (insert, issue, complete), divided by the workload's I/Os
// (the machine's other I/O in the same rounds is counted by both alike).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bpfNsPerEvent, median, round, startCli, startUntil, type BenchContext, type Row } from './lib';

const BCC = '/usr/sbin/biolatency';

function workload(file: string, ios: number): void {
  const half = String(ios / 2);
  spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4k', `count=${half}`, 'oflag=direct', 'status=none']);
  spawnSync('dd', [`if=${file}`, 'of=/dev/null', 'bs=4k', 'iflag=direct', 'status=none']);
}

export async function benchBiolatency(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const ios = ctx.quick ? 2000 : 6000;
  const file = path.join(os.tmpdir(), `ebpf-studio-bench-bio-${process.pid}.dat`);
  const ours: number[] = [];
  const bcc: number[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      ours.push(await bpfNsPerEvent(() => startCli(['biolatency']), () => workload(file, ios), ios));
      bcc.push(await bpfNsPerEvent(() => startUntil('stdbuf', ['-oL', BCC], 'stdout', /Tracing block device I\/O/), () => workload(file, ios), ios));
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
  const ns = (xs: number[]) => xs.map((x) => Math.round(x)).join(' ');
  ctx.log(`  biolatency: BPF ns per I/O ours ${ns(ours)}, libbpf-tools ${ns(bcc)}`);
  return [
    {
      name: 'biolatency overhead per I/O (BPF run time per block request)',
      value: round(median(ours), 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: 'libbpf-tools biolatency', value: round(median(bcc), 0) },
      detail: `${ios} O_DIRECT 4 KiB I/Os (writes, then reads) of a file in ${os.tmpdir()} per round, median of ${rounds} alternating rounds; kernel.bpf_stats_enabled run time of every program each tool holds, over the workload's I/Os`,
    },
  ];
}
