// `latency cost per call`: what measuring a function costs each call of it, from the program's
// own rate: a C program calls a small function (its own file, so it is not inlined) N times per
// round and prints ns per call; rounds alternate untraced, under ours (`ebpf-studio latency`: a
// uprobe at the entry, a uretprobe for a C program, histogram in the kernel), ours with
// --returns ret (a uprobe on the ret instruction), ours with --profile-slow (the slow-call
// profile's buffer begun and dropped at each call, a sampler and the scheduler hook live), and
// bpftrace's uprobe/uretprobe histogram (the reference). The figure is traced minus untraced.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { median, round, startBpftrace, startCli, type Attached, type BenchContext, type Row } from './lib';

const WORK_C = 'long lat_step(long x) { return x * 7 + 3; }\n';
const MAIN_C = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
long lat_step(long x);
int main(int argc, char **argv) {
  long n = atol(argv[1]), sink = 0;
  char c;
  printf("ready\n"); fflush(stdout);
  while (read(0, &c, 1) == 1) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) sink += lat_step(i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("ns_per_call %.1f %ld\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n, sink & 1); fflush(stdout);
  }
  return 0;
}
`;

function build(dir: string): string {
  const bin = path.join(dir, 'latcost');
  fs.writeFileSync(path.join(dir, 'latcost_main.c'), MAIN_C);
  fs.writeFileSync(path.join(dir, 'latcost_work.c'), WORK_C);
  const r = spawnSync('gcc', ['-O2', '-g', '-o', bin, path.join(dir, 'latcost_main.c'), path.join(dir, 'latcost_work.c')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return bin;
}

export async function benchLatency(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 7;
  const calls = ctx.quick ? 200_000 : 1_000_000;
  const bin = build(ctx.buildDir);
  const w = spawn(bin, [String(calls)], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  w.stdout.on('data', (d) => (out += d));
  const next = async (): Promise<number> => {
    const seen = out.length;
    w.stdin.write('g');
    while (!/ns_per_call ([\d.]+)/.test(out.slice(seen))) await new Promise((r) => setTimeout(r, 20));
    return Number(/ns_per_call ([\d.]+)/.exec(out.slice(seen))![1]);
  };
  const under = async (start: () => Promise<Attached>): Promise<number> => {
    const a = await start();
    try {
      return await next();
    } finally {
      await a.stop();
    }
  };
  const base: number[] = [];
  const ours: number[] = [];
  const peer: number[] = [];
  const atRet: number[] = [];
  const prof: number[] = [];
  try {
    while (!out.includes('ready')) await new Promise((r) => setTimeout(r, 20));
    const pid = String(w.pid);
    for (let r = 0; r < rounds; r++) {
      base.push(await next());
      ours.push(await under(() => startCli(['latency', '--pid', pid, 'lat_step'])));
      atRet.push(await under(() => startCli(['latency', '--pid', pid, 'lat_step', '--returns', 'ret'])));
      prof.push(await under(() => startCli(['latency', '--pid', pid, 'lat_step', '--threshold-ms', '10', '--profile-slow'])));
      peer.push(await under(() => startBpftrace(`uprobe:${bin}:lat_step /pid == ${pid}/ { @s[tid] = nsecs; } uretprobe:${bin}:lat_step /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }`)));
    }
  } finally {
    w.kill();
  }
  const list = (xs: number[]) => xs.map((x) => Math.round(x)).join(' ');
  ctx.log(`  latency: ns per call untraced ${list(base)}, ours ${list(ours)}, ours --returns ret ${list(atRet)}, ours --profile-slow ${list(prof)}, bpftrace ${list(peer)}`);
  const b = median(base);
  return [
    {
      name: 'latency cost per call of the measured function',
      value: round(median(ours) - b, 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: 'bpftrace uprobe+uretprobe hist()', value: round(median(peer) - b, 0) },
      detail: `ours as chosen for a C program (a uretprobe); at its ret instruction (--returns ret, chosen where C++ exceptions may pass) ${round(median(atRet) - b, 0)} ns. The program's own ns per call traced minus untraced (${round(b, 1)} ns); ${calls} calls of a 2-instruction function per round, median of ${rounds} alternating rounds (untraced, ours, ours --returns ret, ours --profile-slow, bpftrace)`,
    },
    {
      name: 'latency cost per call with --profile-slow',
      value: round(median(prof) - b, 0),
      unit: 'ns',
      target: null,
      better: 'lower',
      peer: { name: 'bpftrace uprobe+uretprobe hist()', value: round(median(peer) - b, 0) },
      detail: `ours with --threshold-ms 10 --profile-slow (every call fast: the per-thread profile buffer begun at the entry and dropped at the return, the cpu-clock sampler at 99 Hz and the sched_switch hook attached; returns caught at the ret instruction, which the profile's unwind-table walk needs) against ours --returns ret without it, ${round(median(atRet) - b, 0)} ns; same rounds as the row above`,
    },
  ];
}
