// cpudist against Debian's libbpf-tools cpudist (/usr/sbin/cpudist) in the same run, both filtered
// to one workload's pid: a C program (compiled here) whose threads burn CPU for a known slice
// (measured on the thread's own CPU clock) and then sleep a known time, or burn without a pause
// on more threads than there are CPUs. libbpf-tools counts an on-CPU run only when it ended in
// preemption, so `--preempted` is compared with plain `cpudist` and `--offcpu` with `cpudist -O`;
// each bucket's share of the runs must agree within 2 points. Every run (ours by default) is
// checked against the workload's own slice length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Bucket, HistResult } from '../../extension/protocol/histogram';
import { kernelSkipReason, loadedPrograms, startCli, waitFor } from '../helpers';

const PEER = '/usr/sbin/cpudist';
const skip = kernelSkipReason() ?? (fs.existsSync(PEER) ? undefined : `${PEER} is missing (apt-get install libbpf-tools)`);

// argv: threads, burn µs (thread CPU time), sleep µs, rounds. Waits for a byte on stdin before it
// starts (the tracers attach to its pid first), says "done" and then waits for stdin to close.
const WORKLOAD_C = String.raw`
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long burn_us, sleep_us, rounds;
static long long cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    long long until = cpu_ns() + burn_us * 1000LL;
    while (cpu_ns() < until) {}
    if (sleep_us) {
      struct timespec s = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
      nanosleep(&s, NULL);
    }
  }
  return NULL;
}
int main(int argc, char **argv) {
  pthread_t t[16];
  char c;
  int n = argc > 4 ? atoi(argv[1]) : 0;
  if (n < 1 || n > 16) return 2;
  burn_us = atol(argv[2]); sleep_us = atol(argv[3]); rounds = atol(argv[4]);
  if (read(0, &c, 1) != 1) return 1;
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("done\n");
  fflush(stdout);
  while (read(0, &c, 1) > 0) {}
  return 0;
}
`;

let binary = '';
function compile(): string {
  if (binary) return binary;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-cpudist-'));
  fs.writeFileSync(path.join(dir, 'w.c'), WORKLOAD_C);
  const r = spawnSync('gcc', ['-O1', '-pthread', '-o', path.join(dir, 'w'), path.join(dir, 'w.c')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  binary = path.join(dir, 'w');
  return binary;
}

/** Rows "low -> high : count" of libbpf-tools' text histogram, or of several (per -P/-L) summed. */
function peerRows(text: string): Map<number, number> {
  const rows = new Map<number, number>();
  for (const m of text.matchAll(/^\s*(\d+) -> (\d+)\s*: (\d+)/gm)) rows.set(Number(m[1]), (rows.get(Number(m[1])) ?? 0) + Number(m[3]));
  return rows;
}

/** Percent of all runs per log2 bucket, by its low bound; their first row (0 -> 1) takes our 0 and 1. */
function percentByLow(rows: [number, number][]): Map<number, number> {
  const sum = rows.reduce((a, [, n]) => a + n, 0) || 1;
  const out = new Map<number, number>();
  for (const [low, n] of rows) out.set(low <= 1 ? 0 : low, (out.get(low <= 1 ? 0 : low) ?? 0) + (100 * n) / sum);
  return out;
}

function ourRows(buckets: Bucket[]): [number, number][] {
  return buckets.map((b) => [b.low, b.count]);
}

/** The largest difference of bucket shares; throws with both shown. */
function compareShares(what: string, ours: [number, number][], theirs: Map<number, number>): void {
  const a = percentByLow(ours);
  const b = percentByLow([...theirs]);
  const lows = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
  const worst = Math.max(...lows.map((l) => Math.abs((a.get(l) ?? 0) - (b.get(l) ?? 0))));
  const nOurs = ours.reduce((s, [, n]) => s + n, 0);
  const nTheirs = [...theirs.values()].reduce((s, n) => s + n, 0);
  const table = lows.map((l) => `${l}: ${(a.get(l) ?? 0).toFixed(1)} / ${(b.get(l) ?? 0).toFixed(1)}`).join(', ');
  assert.ok(worst <= 2, `${what}: shares (ours / libbpf-tools) differ by up to ${worst.toFixed(2)} points; ${table}`);
  assert.ok(nOurs > 100 && Math.abs(nOurs - nTheirs) <= 0.02 * nTheirs + 5, `${what}: runs ours ${nOurs}, libbpf-tools ${nTheirs}`);
  console.log(`${what}: ours ${nOurs} runs, libbpf-tools ${nTheirs}; largest bucket-share difference ${worst.toFixed(2)} points`);
}

interface Workload {
  child: ChildProcessWithoutNullStreams;
  go(): Promise<void>;
  end(): Promise<void>;
}

function startWorkload(args: number[]): Workload {
  const child = spawn(compile(), args.map(String), { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return {
    child,
    async go() {
      child.stdin.write('g');
      assert.ok(await waitFor(() => out.includes('done'), 60_000), 'the workload finished');
    },
    async end() {
      child.stdin.end();
      await exited;
    },
  };
}

/** Ours on a pid, once its sched_switch program is loaded (--json prints no banner) and attached. */
async function startOurs(pid: number, args: string[]) {
  const before = new Set(loadedPrograms().map((p) => p.id));
  const run = startCli(['cpudist', '--json', '--pid', String(pid), ...args]);
  assert.ok(await waitFor(() => loadedPrograms().some((p) => !before.has(p.id) && /^cpu_switch_/.test(p.name)), 20_000), `ours loaded: ${run.stderr()}`);
  await new Promise((r) => setTimeout(r, 300));
  return run;
}

/** Ours and libbpf-tools on one workload's pid; both stop before the workload exits. */
async function sideBySide(ours: string[], theirs: string[], workload: number[]) {
  const w = startWorkload(workload);
  const pid = w.child.pid!;
  const peer = spawn('stdbuf', ['-oL', PEER, '-p', String(pid), ...theirs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let peerOut = '';
  peer.stdout.on('data', (d) => (peerOut += d));
  const peerDone = new Promise<void>((r) => peer.on('exit', () => r()));
  const run = await startOurs(pid, ours);
  try {
    assert.ok(await waitFor(() => /Tracing/.test(peerOut), 20_000), `${PEER} attached: ${peerOut}`);
    await w.go();
  } finally {
    peer.kill('SIGINT');
    run.child.kill('SIGINT');
    await peerDone;
    await w.end();
  }
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  return { ours: JSON.parse(r.stdout) as HistResult<'cpudist'>, theirs: peerRows(peerOut) };
}

test('cpudist --offcpu matches libbpf-tools cpudist -O on threads that burn 0.7 ms and sleep 1.4 ms', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const { ours, theirs } = await sideBySide(['--offcpu'], ['-O'], [2, 700, 1400, 1000]);
  assert.equal(ours.histograms.length, 1);
  compareShares('off-CPU', ourRows(ours.histograms[0].buckets), theirs);
});

test('cpudist --preempted matches libbpf-tools cpudist on 4 threads burning 2 CPUs', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const { ours, theirs } = await sideBySide(['--preempted'], [], [4, 1_500_000, 0, 1]);
  assert.equal(ours.histograms.length, 1);
  compareShares('on-CPU, preempted runs', ourRows(ours.histograms[0].buckets), theirs);
});

test('cpudist --per-thread counts every run of each thread, none longer than its slice', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const rounds = 1000;
  const w = startWorkload([2, 700, 1400, rounds]);
  const run = await startOurs(w.child.pid!, ['--per-thread']);
  try {
    await w.go();
  } finally {
    run.child.kill('SIGINT');
    await w.end();
  }
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout) as HistResult<'cpudist'>;
  const workers = result.histograms.filter((h) => h.count >= rounds * 0.9);
  assert.equal(workers.length, 2, `two worker threads with ~${rounds} runs each: ${result.histograms.map((h) => `${h.key} ${h.comm} ${h.count}`).join(', ')}`);
  for (const h of workers) {
    assert.equal(h.comm, path.basename(compile()).slice(0, 15));
    // Each 700 µs slice of CPU ends in a sleep: one run in 512-1023 µs, or pieces when something
    // preempted it (a busy machine), but never a run much longer than the slice.
    const count = (from: number, to: number) => h.buckets.filter((b) => b.low >= from && b.low <= to).reduce((a, b) => a + b.count, 0);
    const inSlice = count(512, 512);
    const longer = count(1024, Infinity);
    assert.ok(inSlice >= rounds * 0.5, `thread ${h.key}: ${inSlice} runs of ${rounds} slices in 512-1023 µs`);
    assert.ok(longer <= h.count * 0.05, `thread ${h.key}: ${longer} of ${h.count} runs over 1023 µs`);
    console.log(`thread ${h.key}: ${h.count} runs, ${inSlice} in 512-1023 µs, ${longer} longer`);
  }
});
