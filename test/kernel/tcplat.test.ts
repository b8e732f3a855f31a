// tcplat against bpftrace on the same tracepoints in the same run. Debian's libbpf-tools
// tcpconnlat and tcprtt do not run on this kernel (they attach kprobes/fentry to tcp_v4_connect
// and tcp_rcv_established, and this kernel has neither), so the reference is bpftrace timing
// SYN_SENT -> ESTABLISHED on sock:inet_sock_set_state and reading srtt from tcp:tcp_probe,
// filtered to the workload's port. The workload (a C program compiled here) connects from
// 127.0.0.1 to its own server on a loopback address of its own, timing each connect() itself,
// and reads 64 KiB per connection so RTT samples arrive; each bucket's share must agree with
// bpftrace's within 2 points, and the handshake ours saw must fit inside the client's own
// connect() calls (connects within 300 ns of a bucket edge may land on either side: see
// agreeNearEdges). Only loopback addresses are used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Bucket, HistResult } from '../../extension/protocol/histogram';
import { statsOf } from '../../extension/model/log2hist';
import { kernelSkipReason, loadedPrograms, startCli, waitFor } from '../helpers';

const skip = kernelSkipReason() ?? (spawnSync('bpftrace', ['--version']).status === 0 ? undefined : 'bpftrace is missing (apt-get install bpftrace)');
const CONNECTS = 1000;
const ADDR = `127.${77 + (process.pid % 100)}.${(process.pid >> 8) & 255}.${1 + (process.pid % 250)}`;
const PORT = 20000 + (process.pid % 20000);

// argv: server address, port, connects, bytes per connection. Waits for a byte on stdin, prints
// each connect()'s duration in ns, then "done", then waits for stdin to close.
const WORKLOAD_C = String.raw`
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int listener;
static long bytes;
static void *serve(void *arg) {
  static char buf[65536];
  (void)arg;
  for (;;) {
    int c = accept(listener, NULL, NULL);
    if (c < 0) return NULL;
    for (long left = bytes; left > 0;) {
      ssize_t n = write(c, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
      if (n <= 0) break;
      left -= n;
    }
    close(c);
  }
}
static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv) {
  struct sockaddr_in srv = { .sin_family = AF_INET }, cli = { .sin_family = AF_INET };
  pthread_t t;
  char c, buf[65536];
  int one = 1;
  if (argc < 5 || inet_pton(AF_INET, argv[1], &srv.sin_addr) != 1) return 2;
  srv.sin_port = htons(atoi(argv[2]));
  bytes = atol(argv[4]);
  inet_pton(AF_INET, "127.0.0.1", &cli.sin_addr);
  listener = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listener, (struct sockaddr *)&srv, sizeof srv) || listen(listener, 512)) return 3;
  pthread_create(&t, NULL, serve, NULL);
  if (read(0, &c, 1) != 1) return 1;
  for (int i = 0, n = atoi(argv[3]); i < n; i++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    long long t0;
    /* from 127.0.0.1, so the server's side of each connection has another remote address */
    if (bind(s, (struct sockaddr *)&cli, sizeof cli)) return 4;
    t0 = now_ns();
    if (connect(s, (struct sockaddr *)&srv, sizeof srv)) return 5;
    printf("connect %lld\n", now_ns() - t0);
    while (read(s, buf, sizeof buf) > 0) {}
    close(s);
  }
  printf("done\n");
  fflush(stdout);
  while (read(0, &c, 1) > 0) {}
  return 0;
}
`;

function compile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-tcplat-'));
  fs.writeFileSync(path.join(dir, 'tcpw.c'), WORKLOAD_C);
  const r = spawnSync('gcc', ['-O1', '-pthread', '-o', path.join(dir, 'tcpw'), path.join(dir, 'tcpw.c')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return path.join(dir, 'tcpw');
}

/** bpftrace's hist() rows ("[4, 8)  68 |@@|", "[1K, 2K)", "[0]") per map, as low bound -> count. */
function bpftraceHists(text: string): Map<string, Map<number, number>> {
  const scale = (n: string, u: string) => Number(n) * (u === 'K' ? 1024 : u === 'M' ? 1 << 20 : 1);
  const maps = new Map<string, Map<number, number>>();
  let current = new Map<number, number>();
  for (const line of text.split('\n')) {
    const name = /^@(\w+):/.exec(line);
    if (name) maps.set(name[1], (current = new Map()));
    const row = /^\[(\d+)([KM]?)[,\]]/.exec(line);
    const count = /\s(\d+)\s+\|/.exec(line);
    if (row && count) current.set(scale(row[1], row[2]), Number(count[1]));
  }
  return maps;
}

function sharesOf(pairs: [number, number][]): Map<number, number> {
  const sum = pairs.reduce((a, [, n]) => a + n, 0) || 1;
  return new Map(pairs.map(([low, n]) => [low, (100 * n) / sum]));
}

/** Largest difference of bucket shares (percent of each side's total) over every low bound. */
function worstOf(ours: Bucket[], theirs: Map<number, number>): number {
  const a = sharesOf(ours.map((b) => [b.low, b.count]));
  const b = sharesOf([...theirs]);
  return Math.max(...[...new Set([...a.keys(), ...b.keys()])].map((l) => Math.abs((a.get(l) ?? 0) - (b.get(l) ?? 0))));
}

function agree(what: string, ours: Bucket[], theirs: Map<number, number> | undefined, quiet = false): void {
  assert.ok(theirs, `bpftrace printed a ${what} histogram`);
  const worst = worstOf(ours, theirs);
  const n = [ours.reduce((s, x) => s + x.count, 0), [...theirs.values()].reduce((s, x) => s + x, 0)];
  const a = sharesOf(ours.map((b) => [b.low, b.count]));
  const b = sharesOf([...theirs]);
  const table = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y).map((l) => `${l}: ${(a.get(l) ?? 0).toFixed(1)} / ${(b.get(l) ?? 0).toFixed(1)}`).join(', ');
  assert.ok(worst <= 2, `${what}: shares (ours / bpftrace) differ by up to ${worst.toFixed(2)} points; ${table}`);
  assert.ok(n[0] > 0 && Math.abs(n[0] - n[1]) <= 0.01 * n[1] + 2, `${what}: ours ${n[0]}, bpftrace ${n[1]}`);
  if (!quiet) console.log(`${what}: ours ${n[0]}, bpftrace ${n[1]}; largest bucket-share difference ${worst.toFixed(2)} points`);
}

/** Log2 µs buckets (by low bound) of ns durations, each `shiftNs` shorter. */
function bucketsOf(ns: number[], shiftNs: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const v of ns) {
    const us = Math.max(0, Math.floor((v - shiftNs) / 1000));
    const low = us < 2 ? us : 2 ** Math.floor(Math.log2(us));
    out.set(low, (out.get(low) ?? 0) + 1);
  }
  return out;
}

/**
 * Connect latency against bpftrace's per-connect durations (ns). Loopback handshakes here take
 * ~7-8 µs with a mode right at the 8 µs bucket edge, and the two tools read the clock a few
 * hundred ns apart (each runs after the other's work on the same tracepoint), so a connect within
 * that distance of an edge may land on either side. Shares must agree within 2 points plus the
 * share of bpftrace's durations within 300 ns of an edge, and that allowance is printed.
 */
function agreeNearEdges(ours: Bucket[], theirsNs: number[]): void {
  const nearEdge = theirsNs.filter((v) => [1, 2, 4, 8, 16, 32, 64, 128].some((us) => Math.abs(v - us * 1000) < 300)).length;
  const allowance = (100 * nearEdge) / Math.max(1, theirsNs.length);
  const worst = worstOf(ours, bucketsOf(theirsNs, 0));
  const n = ours.reduce((a, b) => a + b.count, 0);
  assert.equal(n, theirsNs.length, `connect latency: ours ${n} connects, bpftrace ${theirsNs.length}`);
  assert.ok(worst <= 2 + allowance, `connect latency: bucket shares differ by ${worst.toFixed(2)} points, more than 2 + ${allowance.toFixed(2)} (bpftrace's durations within 300 ns of an edge): ${JSON.stringify([...bucketsOf(theirsNs, 0)])} vs ${JSON.stringify(ours.filter((b) => b.count).map((b) => [b.low, b.count]))}`);
  console.log(`connect latency: ours ${n}, bpftrace ${theirsNs.length}; largest bucket-share difference ${worst.toFixed(2)} points, ${allowance.toFixed(2)} % of connects within 300 ns of a bucket edge`);
}

/** Ours, once its program is loaded (--json prints no banner; only the one its options need is loaded) and a moment later attached. */
async function startOurs(args: string[]) {
  const before = new Set(loadedPrograms().map((p) => p.id));
  const run = startCli(['tcplat', '--json', ...args]);
  assert.ok(await waitFor(() => loadedPrograms().some((p) => !before.has(p.id) && /^tcp_(state|probe)_/.test(p.name)), 20_000), `ours loaded: ${run.stderr()}`);
  await new Promise((r) => setTimeout(r, 300));
  return run;
}

function bpftrace(): { out: () => string; stop: () => Promise<void> } {
  // The clock first in each action, as ours does: a lookup before it would lengthen every handshake it times.
  const prog = [
    `tracepoint:sock:inet_sock_set_state /args->protocol == 6 && args->newstate == 2 && args->dport == ${PORT}/ { @start[args->skaddr] = nsecs; }`,
    `tracepoint:sock:inet_sock_set_state /args->oldstate == 2 && args->newstate == 1/ { $t = nsecs; $s = @start[args->skaddr]; if ($s) { $d = $t - $s; if ($d < 16000) { @connect_ns = lhist($d, 0, 16000, 20); } else { @connect_long_us = hist($d / 1000); } delete(@start[args->skaddr]); } }`,
    `tracepoint:tcp:tcp_probe /args->dport == ${PORT}/ { @rtt_us = hist(args->srtt); }`,
    'BEGIN { printf("attached\\n"); }',
    'END { clear(@start); }',
  ].join('\n');
  const child = spawn('bpftrace', ['-e', prog], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return { out: () => out, stop: () => (child.kill('SIGINT'), exited) };
}

function startWorkload(binary: string, connects = CONNECTS): { child: ChildProcessWithoutNullStreams; out: () => string; exited: Promise<void> } {
  const child = spawn(binary, [ADDR, String(PORT), String(connects), String(64 * 1024)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return { child, out: () => out, exited: new Promise((r) => child.on('exit', () => r())) };
}

test('tcplat connect latency and --rtt match bpftrace on the same tracepoints over loopback connects', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const w = startWorkload(compile());
  const ref = bpftrace();
  const runs: Awaited<ReturnType<typeof startOurs>>[] = [];
  try {
    // bpftrace first: a tracepoint runs its programs in the order they attached, so each tool's
    // clock reads come after the other's work at both ends; ours last keeps its own reads closest.
    assert.ok(await waitFor(() => ref.out().includes('attached'), 30_000), `bpftrace attached: ${ref.out()}`);
    runs.push(await startOurs(['--pid', String(w.child.pid), '--per-address']));
    runs.push(await startOurs(['--rtt', '--per-address']));
    await new Promise((r) => setTimeout(r, 300));
    w.child.stdin.write('g');
    assert.ok(await waitFor(() => w.out().includes('done'), 60_000), `the workload finished: ${w.out().slice(-200)}`);
  } finally {
    for (const r of runs) r.child.kill('SIGINT');
    await ref.stop();
    w.child.stdin.end();
    await w.exited;
  }
  const [conn, rtt] = await Promise.all(runs.map(async (r) => {
    const d = await r.done;
    assert.equal(d.code, 0, d.stderr);
    return JSON.parse(d.stdout) as HistResult<'tcplat'>;
  }));
  const theirs = bpftraceHists(ref.out());
  const mine = conn.histograms.find((h) => h.comm === ADDR);
  assert.ok(mine, `a histogram for ${ADDR}: ${conn.histograms.map((h) => `${h.comm} ${h.count}`).join(', ')}`);
  assert.equal(mine.count, CONNECTS);
  // 20 ns bins below 16 µs, each standing for its low bound (the µs buckets' edges are bin
  // edges); the rare longer ones in log2 µs buckets, by their low bound too
  const bins = [...(theirs.get('connect_ns') ?? [])].filter(([low]) => low < 16000);
  const long = [...(theirs.get('connect_long_us') ?? [])].map(([low, n]): [number, number] => [low * 1000, n]);
  assert.ok(bins.length, `bpftrace printed the connect durations: ${ref.out().slice(0, 300)}`);
  agreeNearEdges(mine.buckets, [...bins, ...long].flatMap(([low, n]) => Array<number>(n).fill(low)));
  const own = [...w.out().matchAll(/^connect (\d+)$/gm)].map((m) => Number(m[1]) / 1000).sort((a, b) => a - b);
  const p50 = statsOf(mine.buckets).p50;
  // The handshake happens inside connect(): its median cannot exceed the client's by more than a bucket's width.
  assert.ok(p50 <= 2 * own[own.length >> 1] + 1, `median handshake ${p50} µs, client's own connect() ${own[own.length >> 1]} µs`);
  console.log(`median connect: ours ~${p50.toFixed(1)} µs, the client's own connect() ${own[own.length >> 1].toFixed(1)} µs`);
  const rttMine = rtt.histograms.find((h) => h.comm === ADDR);
  assert.ok(rttMine, `an RTT histogram for ${ADDR}: ${rtt.histograms.map((h) => h.comm).join(', ')}`);
  agree('round-trip time', rttMine.buckets, theirs.get('rtt_us'));
});

test('tcplat --per-process counts the connects under the process that made them', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const w = startWorkload(compile(), 50);
  const run = await startOurs(['--per-process']);
  try {
    await new Promise((r) => setTimeout(r, 300));
    w.child.stdin.write('g');
    assert.ok(await waitFor(() => w.out().includes('done'), 60_000), 'the workload finished');
  } finally {
    run.child.kill('SIGINT');
    w.child.stdin.end();
    await w.exited;
  }
  const d = await run.done;
  assert.equal(d.code, 0, d.stderr);
  const result = JSON.parse(d.stdout) as HistResult<'tcplat'>;
  const client = result.histograms.find((h) => h.key === w.child.pid);
  assert.equal(client?.count, 50, `the workload's 50 connects under its pid: ${result.histograms.map((h) => `${h.key} ${h.comm} ${h.count}`).join(', ')}`);
  assert.equal(client.comm, 'tcpw');
});

test('tcplat --per-process names a process by the program it became by exec, not the shell it was', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const binary = compile();
  // bash connects once itself (its /dev/tcp) to a server of the test's, then becomes the workload
  const server = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => server.listen(PORT + 1, ADDR, r));
  const run = await startOurs(['--per-process']);
  const sh = spawn('bash', ['-c', `exec 3<>/dev/tcp/${ADDR}/${PORT + 1} && exec ${binary} ${ADDR} ${PORT} 20 0`], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  sh.stdout.on('data', (d) => (out += d));
  const exited = new Promise((r) => sh.on('exit', r));
  try {
    // the workload is listening once the shell's connect is through and the exec happened
    assert.ok(await waitFor(() => fs.readFileSync(`/proc/${sh.pid}/comm`, 'utf8').trim() === 'tcpw', 10_000), 'the shell became the workload');
    await new Promise((r) => setTimeout(r, 300));
    sh.stdin.write('g');
    assert.ok(await waitFor(() => out.includes('done'), 60_000), 'the workload finished');
  } finally {
    run.child.kill('SIGINT');
    sh.stdin.end();
    await exited;
    server.close();
  }
  const d = await run.done;
  assert.equal(d.code, 0, d.stderr);
  const result = JSON.parse(d.stdout) as HistResult<'tcplat'>;
  const mine = result.histograms.find((h) => h.key === sh.pid);
  const all = result.histograms.map((h) => `${h.key} ${h.comm} ${h.count}`).join(', ');
  assert.equal(mine?.count, 21, `the shell's connect and the workload's 20 under one pid: ${all}`);
  assert.equal(mine.comm, 'tcpw', `named by the program it became: ${all}`);
});

test('tcplat refuses --rtt with --pid or --per-process, with a reason', (t) => {
  if (skip) return t.skip(skip);
  for (const args of [['--rtt', '--pid', String(process.pid)], ['--rtt', '--per-process']]) {
    const r = spawnSync(process.execPath, [path.join(__dirname, '../../dist/cli.js'), 'tcplat', ...args, '--duration', '1'], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--rtt does not go with --pid or --per-process/);
    assert.doesNotMatch(r.stderr, /at .*\.js:\d+/);
  }
});
