// Off-CPU profile against a program whose threads wait for known times: a sleeper and a pipe
// reader block 90 ms in wait_long() for every 30 ms in wait_short() (3:1), and a waiter blocks
// on a mutex a holder keeps ~20 ms of every ~22 ms. The split is held to the program's own
// measure of each thread's time in the two calls over the same window (its counters file): on a
// loaded machine every wait also holds the wakeup latency, which moves the split below 3:1 for
// the program and the profiler alike. Checked: that share, the futex wait seen
// as "lock", the total off-CPU time against wall × threads minus CPU time, and both against
// bpftrace's off-CPU script (sched_switch tracepoint, the same definition) run at the same time.
// Then wall clock: on-CPU samples and off-CPU time in one document, and the pprof round trip.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { kernelSkipReason, repoRoot, runCli, startCli, waitFor } from '../helpers';

const skip = kernelSkipReason();
const SRC = path.join(repoRoot, 'test/fixtures/c/offcpuwait.c');
const THREADS = 7; // sleeper, reader, feeder, holder, waiter, spinner, and main (paused throughout)
const DURATION_S = 6;

let work = '';
let child: ChildProcess | undefined;
let pid = 0;
let counters = '';

/** The fixture's own ns in wait_long and wait_short so far: sleeper and reader. */
interface Spent {
  sleeper: { long: number; short: number };
  reader: { long: number; short: number };
}
function spent(): Spent {
  const b = fs.readFileSync(counters);
  const n = (i: number) => Number(b.readBigUInt64LE(8 * i));
  return { sleeper: { long: n(0), short: n(1) }, reader: { long: n(2), short: n(3) } };
}
function spentSince(a: Spent, b: Spent): Spent {
  const d = (x: { long: number; short: number }, y: { long: number; short: number }) => ({ long: y.long - x.long, short: y.short - x.short });
  return { sleeper: d(a.sleeper, b.sleeper), reader: d(a.reader, b.reader) };
}
const longShare = (x: { long: number; short: number }) => x.long / (x.long + x.short);

/** On-CPU nanoseconds of every thread of pid (first field of /proc/P/task/T/schedstat). */
function cpuNs(p: number): number {
  let n = 0;
  for (const t of fs.readdirSync(`/proc/${p}/task`)) {
    try {
      n += Number(fs.readFileSync(`/proc/${p}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread gone */
    }
  }
  return n;
}

const has = (s: ProfileStack, fn: string) => s.frames.some((f) => f.function === fn);
const sumUs = (stacks: ProfileStack[]) => stacks.reduce((a, s) => a + (s.value ?? 0), 0);

/**
 * bpftrace's off-CPU script: switch-out time and user stack per thread of pid, summed at switch-in;
 * @window: the time it counted, measured (on a loaded machine its timer fires late).
 */
const BT = `BEGIN { @begin = nsecs; }
tracepoint:sched:sched_switch {
  if (pid == $1) { @start[tid] = nsecs; @stk[tid] = ustack; }
  $s = @start[args->next_pid];
  if ($s) {
    @total = sum(nsecs - $s);
    @bystack[@stk[args->next_pid]] = sum(nsecs - $s);
    delete(@start[args->next_pid]);
    delete(@stk[args->next_pid]);
  }
}
interval:s:$2 { @window = nsecs - @begin; exit(); }
END { clear(@start); clear(@stk); clear(@begin); }`;

/** Runs BT for pid over `seconds` without blocking the event loop (the window's timer runs meanwhile). */
function runBpftrace(pidArg: string, seconds: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn('bpftrace', ['-e', BT, pidArg, seconds], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('close', (status) => {
      clearTimeout(t);
      resolve({ status, stdout, stderr });
    });
  });
}

/** bpftrace's map output → total ns and ns per function name appearing in a stack. */
function parseBpftrace(text: string): { totalNs: number; windowNs: number; byFn: Map<string, number> } {
  const total = /@total: (\d+)/.exec(text);
  const window = /@window: (\d+)/.exec(text);
  const byFn = new Map<string, number>();
  for (const m of text.matchAll(/@bystack\[\n([\s\S]*?)\]: (\d+)/g)) {
    const fns = new Set(m[1].split('\n').map((l) => l.trim().replace(/\+\d+$/, '')).filter(Boolean));
    for (const f of fns) byFn.set(f, (byFn.get(f) ?? 0) + Number(m[2]));
  }
  return { totalNs: total ? Number(total[1]) : 0, windowNs: window ? Number(window[1]) : 0, byFn };
}

describe('off-CPU profile', { skip, timeout: 120_000 }, () => {
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-offcpu-'));
    const bin = path.join(work, 'offcpuwait');
    const cc = spawnSync('gcc', ['-g', '-O1', '-fno-omit-frame-pointer', '-pthread', SRC, '-o', bin], { encoding: 'utf8' });
    assert.equal(cc.status, 0, `gcc failed: ${cc.stderr}`);
    counters = path.join(work, 'spent');
    child = spawn(bin, [counters], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 10_000), 'the fixture did not start');
    pid = child.pid!;
  });
  after(() => {
    child?.kill('SIGKILL');
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('3:1 split, futex wait as lock, total = wall × threads − CPU, and bpftrace agrees', async (t) => {
    const hasBpftrace = spawnSync('bpftrace', ['--version']).status === 0;
    const pprof = path.join(work, 'off.pb.gz');
    // frame pointers, as bpftrace walks them: the same stacks to compare (the table walk: cfiUnwind.test.ts)
    const ours = startCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--unwind', 'fp', '--min-block-us', '0', '--duration', String(DURATION_S), '--json', '--verbose', '--pprof', pprof]);
    assert.ok(await waitFor(() => /attached via/.test(ours.stderr()), 20_000), `not attached: ${ours.stderr()}`);
    // the program's own split and its CPU time over the profile's window (from the attach, DURATION_S long)
    const [spent0, cpu0] = [spent(), cpuNs(pid)];
    const window = new Promise<{ spent: Spent; cpuNsPerS: number }>((resolve) => setTimeout(() => resolve({ spent: spentSince(spent0, spent()), cpuNsPerS: (cpuNs(pid) - cpu0) / DURATION_S }), DURATION_S * 1000));
    const bt = hasBpftrace ? await runBpftrace(String(pid), String(DURATION_S - 2)) : undefined;
    const r = await ours.done;
    const measured = await window;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.unit, 'us');
    assert.equal(doc.event, 'offcpu');
    for (const s of doc.stacks) assert.ok(s.state && typeof s.value === 'number', 'every stack has a state and a value');
    // the stack cache: threads that block where they blocked before reuse the stack ids, and the
    // walks that check the reuses found the same stacks
    const cache = /(\d+) switch-outs: stacks walked (\d+) \((\d+) of them.*?reused (\d+).*?(\d+) reuses checked by a walk, (\d+) found other stacks/.exec(r.stderr);
    assert.ok(cache, `no stack-cache figures in: ${r.stderr}`);
    const [outs, walked, uncached, reused, checked, mismatched] = cache.slice(1).map(Number);
    t.diagnostic(`stack cache: ${outs} switch-outs, ${walked} walked (${uncached} not cacheable: the spinner's preemptions, more under load), ${reused} reused, ${checked} checked, ${mismatched} mismatched`);
    // of the switch-outs the cache takes (blocks in a system call), most reuse a place's stacks:
    // the blocking threads wait at four places each, again and again
    assert.ok(reused > 2 * (walked - uncached), `most cacheable switch-outs reuse a place's stacks (${reused} reused, ${walked - uncached} cacheable walked)`);
    assert.ok(checked > 0, 'reuses are checked by real walks');
    // While bpftrace's own sched_switch program runs beside ours (this run), some checks find other
    // stacks (8-10 of ~18 here, on the code before this change too): the checks catch it and start
    // again at every 64th reuse. The cache alone is held to exact below, where nothing else traces.
    if (mismatched) t.diagnostic(`${mismatched} of ${checked} checked reuses found other stacks while bpftrace traced sched_switch too`);

    // 3:1 in the sleeper and the pipe reader together, and in each alone, against the program's
    // own measure of the same window (3:1 plus each wait's wakeup latency)
    const truth = measured.spent;
    const both = { long: truth.sleeper.long + truth.reader.long, short: truth.sleeper.short + truth.reader.short };
    const long = doc.stacks.filter((s) => has(s, 'wait_long'));
    const short = doc.stacks.filter((s) => has(s, 'wait_short'));
    const share = sumUs(long) / (sumUs(long) + sumUs(short));
    const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
    t.diagnostic(`wait_long share ${pct(share)}, the program's own ${pct(longShare(both))} (sleeper ${pct(longShare(truth.sleeper))}, reader ${pct(longShare(truth.reader))}; 75 % on an idle machine); wait_long ${(sumUs(long) / 1e3).toFixed(0)} ms, wait_short ${(sumUs(short) / 1e3).toFixed(0)} ms`);
    assert.ok(longShare(both) > 0.6 && longShare(both) < 0.8, `the program spent ${pct(longShare(both))} of its waits in wait_long: not the 3:1 workload`);
    assert.ok(Math.abs(share - longShare(both)) <= 0.03, `wait_long share ${pct(share)} vs the program's own ${pct(longShare(both))}`);
    for (const [via, own] of [['block_sleep', truth.sleeper], ['clock_nanosleep', truth.sleeper], ['__libc_read', truth.reader], ['__GI___libc_read', truth.reader], ['__read', truth.reader]] as const) {
      const l = sumUs(long.filter((s) => has(s, via)));
      const sh = sumUs(short.filter((s) => has(s, via)));
      if (l + sh > 0) assert.ok(Math.abs(l / (l + sh) - longShare(own)) <= 0.03, `share through ${via}: ${pct(l / (l + sh))} vs the program's own ${pct(longShare(own))}`);
    }
    // the mutex waiter blocks in futex: state lock, most of its time
    const lock = doc.stacks.filter((s) => has(s, 'lock_wait') && s.state === 'lock');
    const waiterAll = doc.stacks.filter((s) => has(s, 'lock_wait'));
    t.diagnostic(`lock_wait: ${(sumUs(lock) / 1e3).toFixed(0)} ms as lock of ${(sumUs(waiterAll) / 1e3).toFixed(0)} ms off CPU`);
    assert.ok(sumUs(lock) > 0.6 * sumUs(waiterAll), 'the mutex wait is a futex (lock) wait');
    assert.ok(doc.stacks.filter((s) => s.state === 'lock').every((s) => s.frames.some((f) => /futex/.test(f.function ?? ''))), 'lock stacks go through futex');
    assert.ok((doc.states?.sleep ?? 0) > 0 && (doc.states?.lock ?? 0) > 0);

    // main, paused since before tracing began: counted for the whole window from /proc, so its
    // time is the window the profile traced (a loaded machine stretches it past --duration)
    const SINCE = '[off CPU since before tracing began: user stack not seen]';
    const throughout = doc.stacks.filter((s) => has(s, SINCE));
    assert.deepEqual(throughout.map((s) => s.tid), [pid], 'the paused main thread is the one blocked throughout');
    assert.ok(throughout[0].frames.some((f) => /pause/.test(f.function ?? '')), `main's kernel stack: ${throughout[0].frames.map((f) => f.function).join(';')}`);
    const windowUs = throughout[0].value!;
    assert.ok(windowUs >= 0.98 * DURATION_S * 1e6 && windowUs <= (DURATION_S + 3) * 1e6, `the profile traced ${windowUs} µs for --duration ${DURATION_S}`);

    // total against wall × threads − CPU, over that window
    const totalUs = sumUs(doc.stacks);
    const truthUs = THREADS * windowUs - (measured.cpuNsPerS * windowUs) / 1e9 / 1e3;
    t.diagnostic(`total off-CPU ${(totalUs / 1e6).toFixed(3)} s in a ${(windowUs / 1e6).toFixed(3)} s window; wall × ${THREADS} threads − CPU = ${(truthUs / 1e6).toFixed(3)} s (${((100 * (totalUs - truthUs)) / truthUs).toFixed(1)} %)`);
    assert.ok(Math.abs(totalUs - truthUs) <= 0.05 * truthUs, `total ${totalUs} µs vs ${truthUs} µs`);

    // pprof carries the same weights
    const loaded = loadProfileBytes(fs.readFileSync(pprof), 'off');
    assert.equal(loaded.result?.unit, 'us');
    assert.ok(Math.abs(sumUs(loaded.result!.stacks) - totalUs) <= doc.stacks.length, 'pprof holds the same µs');

    if (!bt) return t.diagnostic('bpftrace is not installed: no peer comparison');
    assert.equal(bt.status, 0, `bpftrace failed: ${bt.stderr}`);
    const peer = parseBpftrace(bt.stdout);
    assert.ok(peer.windowNs > 0, `bpftrace measured its window: ${bt.stdout.slice(-300)}`);
    const peerRate = peer.totalNs / peer.windowNs;
    // bpftrace sees intervals that end while it runs: compare those (ours less main's window)
    const ourRate = sumUs(doc.stacks.filter((s) => !has(s, SINCE))) / windowUs;
    const pl = peer.byFn.get('wait_long') ?? 0;
    const ps = peer.byFn.get('wait_short') ?? 0;
    t.diagnostic(`bpftrace: ${peerRate.toFixed(3)} off-CPU s per s over its ${(peer.windowNs / 1e9).toFixed(2)} s (ours ${ourRate.toFixed(3)}), wait_long share ${((100 * pl) / (pl + ps)).toFixed(1)} %`);
    assert.ok(Math.abs(ourRate - peerRate) <= 0.05 * peerRate, `off-CPU rate ours ${ourRate} vs bpftrace ${peerRate}`);
    assert.ok(Math.abs(pl / (pl + ps) - share) <= 0.05, 'bpftrace sees the same split');
  });

  test("wall clock: every thread's on-CPU samples plus off-CPU time add up to the wall time; folded in µs", (t) => {
    const cpu0 = cpuNs(pid);
    const r = runCli(['profile', '--pid', String(pid), '--event', 'wall', '--frequency', '499', '--duration', '4', '--json'], { timeoutMs: 60_000 });
    const cpuS = (cpuNs(pid) - cpu0) / 1e9;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.event, 'wall');
    const byTid = new Map<number, number>();
    for (const s of doc.stacks) byTid.set(s.tid, (byTid.get(s.tid) ?? 0) + (s.value ?? 0));
    t.diagnostic(`per thread (s): ${[...byTid.values()].map((v) => (v / 1e6).toFixed(2)).join(', ')}; on CPU ${((doc.states?.oncpu ?? 0) / 1e6).toFixed(2)} s sampled vs ${cpuS.toFixed(2)} s CPU time`);
    assert.equal(byTid.size, THREADS, 'every thread is in the wall profile');
    for (const [tid, us] of byTid) assert.ok(Math.abs(us - 4e6) <= 0.15 * 4e6, `thread ${tid}: ${us} µs of a 4 s run`);
    const spin = doc.stacks.filter((s) => has(s, 'spin_some') && s.state === 'oncpu');
    assert.ok(sumUs(spin) > 0.05 * 4e6, `the spinner shows on CPU: ${sumUs(spin)} µs`);
    // a sample is lost when the CPU is inside another BPF program (other tracers on a shared machine)
    const onS = (doc.states?.oncpu ?? 0) / 1e6;
    assert.ok(onS >= 0.5 * cpuS && onS <= 1.3 * cpuS + 0.1, `on-CPU samples × period ${onS} s vs CPU time ${cpuS} s`);
    const folded = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--duration', '2', '--folded'], { timeoutMs: 60_000 });
    assert.equal(folded.code, 0, folded.stderr);
    const lines = folded.stdout.trim().split('\n');
    assert.ok(lines.every((l) => /^\[off-CPU: [^\]]+\];.* \d+$/.test(l)), 'folded lines start at the state and weigh µs');
    const sum = lines.reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    assert.ok(sum > 0.8 * THREADS * 2e6, `folded µs ${sum}`);
  });

  test('the stack cache alone: every checked reuse has the stacks a walk finds', async (t) => {
    const ours = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--unwind', 'fp', '--min-block-us', '0', '--duration', '4', '--json', '--verbose']);
    assert.equal(ours.code, 0, ours.stderr);
    const cache = /(\d+) reuses checked by a walk, (\d+) found other stacks/.exec(ours.stderr);
    assert.ok(cache, `no stack-cache figures in: ${ours.stderr}`);
    const [checked, mismatched] = cache.slice(1).map(Number);
    t.diagnostic(`stack cache alone: ${checked} checked, ${mismatched} mismatched`);
    assert.ok(checked > 0, 'reuses are checked by real walks');
    assert.equal(mismatched, 0, 'every checked reuse had the stacks a walk finds');
  });

  test('bad input: unknown event, --min-block-us with cpu, --frequency with offcpu', () => {
    const a = runCli(['profile', '--pid', String(pid), '--event', 'nope']);
    assert.equal(a.code, 2);
    assert.match(a.stderr, /--event takes cpu, offcpu, wall, alloc, lock or vthread, not "nope"/);
    const b = runCli(['profile', '--pid', String(pid), '--min-block-us', '10']);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /--min-block-us applies to --event offcpu or wall/);
    const c = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--frequency', '99']);
    assert.equal(c.code, 2);
    const d = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--min-block-us', '-1']);
    assert.equal(d.code, 2);
    assert.match(d.stderr, /--min-block-us/);
  });
});
