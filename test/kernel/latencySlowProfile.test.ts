// latency --profile-slow (the wall-clock profile of only the calls slower than the threshold)
// against a C program that times its own calls (test/fixtures/c/slowprof: every tenth call of
// sp_work sleeps 20 ms in sp_sleep, the others spin 0.5 ms on CPU in sp_spin; it prints how many
// calls took at least 10 ms and how long they took, by its own CLOCK_MONOTONIC). The slow calls
// counted are the program's, the profile's time is theirs, it is the sleep helper's off-CPU time
// under the function, and the fast calls' CPU time (kept in the kernel, then dropped) is absent.
// Then --by-caller: the same function called from two functions, each one's calls counted as
// the program counts them, named, with its own durations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LatencyResult } from '../../extension/protocol/latency';
import type { ProfileStack } from '../../extension/protocol/profile';
import * as proto from '../../extension/protocol/protocol';
import { kernelSkipReason, loadedPrograms, repoRoot, runCli, startCli, waitFor } from '../helpers';
import { AttackBed, attackSkipReason, makeUser, removeUser, spawnAsUser } from './attackKit';

const skip = kernelSkipReason() ?? (spawnSync('gcc', ['--version']).status === 0 ? undefined : 'gcc is missing');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-slowprof-'));

/** -O2 -g as users build (no frame pointers: the profile walks the program's unwind tables). */
function fixture(): string {
  const out = path.join(dir, 'slowprof');
  if (fs.existsSync(out)) return out;
  const src = path.join(repoRoot, 'test/fixtures/c/slowprof');
  const r = spawnSync('gcc', ['-O2', '-g', '-o', out, path.join(src, 'main.c'), path.join(src, 'work.c')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

/**
 * Runs the fixture with `args` and `latency --pid` on it with `flags` (plus --json) from before its
 * calls start to after its "result" line: the program's own figures and our result document.
 */
async function measure(args: string[], flags: string[]): Promise<{ own: Record<string, number>; r: LatencyResult }> {
  const child = spawn(fixture(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  try {
    assert.ok(await waitFor(() => out.includes('ready'), 10_000), out);
    const cli = startCli(['latency', '--pid', String(child.pid), ...flags, '--json', '--verbose']);
    assert.ok(await waitFor(() => /latency: attached/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), cli.stderr());
    child.stdin.write('g');
    assert.ok(await waitFor(() => /^result .*$/m.test(out), 90_000), `no result: ${out}`);
    const own = Object.fromEntries(/^result (.*)$/m.exec(out)![1].split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    cli.child.kill('SIGINT');
    const done = await cli.done;
    assert.equal(done.code, 0, done.stderr);
    return { own, r: JSON.parse(done.stdout) as LatencyResult };
  } finally {
    child.stdin.end();
    child.kill();
  }
}

/** The µs of the stacks that hold `fn` (leaf first: a frame nearer the leaf is a callee). */
function under(stacks: ProfileStack[], fn: string, caller?: string): number {
  let us = 0;
  for (const s of stacks) {
    const i = s.frames.findIndex((f) => f.function === fn);
    if (i < 0) continue;
    if (caller && !s.frames.slice(i + 1).some((f) => f.function === caller)) continue;
    us += s.value ?? 0;
  }
  return us;
}

test('latency --profile-slow: the slow calls counted as the program counts them, their time under the sleep helper, the fast spin left out', { skip }, async () => {
  const { own, r } = await measure(['300'], ['sp_work', '--threshold-ms', '10', '--profile-slow', '--frequency', '999']);
  const s = r.stats;
  const p = r.profile;
  assert.ok(p, 'no profile in the result');
  const total = p.stacks.reduce((n, st) => n + (st.value ?? 0), 0);
  const sleepUs = under(p.stacks, 'sp_sleep', 'sp_work');
  // whole stacks: the function's callers above it too (its returns caught at its ret instructions)
  const wholeUs = under(p.stacks, 'sp_sleep', 'main');
  const spinUs = under(p.stacks, 'sp_spin');
  const sleepState = p.stacks.filter((st) => st.frames.some((f) => f.function === 'sp_sleep') && st.state === 'sleep').reduce((n, st) => n + (st.value ?? 0), 0);
  // the share of the slow calls' time the program spent in the sleeping calls (1 on a quiet machine)
  const sleepPart = own.slow_ns ? own.slow_sleep_ns / own.slow_ns : 0;
  console.log(
    `program: ${own.count} calls, ${own.slow} >= 10 ms (${own.edge} within 100 µs of it) totalling ${(own.slow_ns / 1e6).toFixed(1)} ms (asleep ${(own.slow_sleep_ns / 1e6).toFixed(1)}, fast calls preempted past 10 ms ${(own.slow_spin_ns / 1e6).toFixed(1)}) | ` +
      `ours: ${s.count} calls, ${s.slowCalls} slow, profiled ${s.profiledSlow} kept / ${s.profiledFast} dropped, ${s.profileLost} lost; profile ${(total / 1000).toFixed(1)} ms: ` +
      `under sp_work>sp_sleep ${((100 * sleepUs) / total).toFixed(1)} % (sleeping ${((100 * sleepState) / total).toFixed(1)} %), under sp_spin ${(spinUs / 1000).toFixed(1)} ms; states ${JSON.stringify(p.states)}`,
  );
  assert.equal(s.count, own.count);
  assert.ok(Math.abs((s.slowCalls ?? -1) - own.slow) <= own.edge, `slow calls: ours ${s.slowCalls}, program ${own.slow} (${own.edge} at the line)`);
  assert.equal(s.profiledSlow, s.slowCalls, 'every slow call is profiled');
  assert.equal((s.profiledSlow ?? 0) + (s.profiledFast ?? 0), s.count);
  assert.equal(s.profileLost, 0);
  assert.equal(p.event, 'wall');
  // the profile holds the slow calls' time: their wall time, within 10 % (and the 1/999 s a sample weighs)
  assert.ok(Math.abs(total - own.slow_ns / 1000) <= 0.1 * (own.slow_ns / 1000) + 5000, `profile ${total} µs, slow calls ${own.slow_ns / 1000} µs`);
  assert.ok(own.slow_sleep_ns > 0);
  // ≥ 90 % of what the sleeping calls took is the sleep helper's, under the function, asleep
  assert.ok(sleepUs >= 0.9 * sleepPart * total, `under sp_sleep ${sleepUs} of ${total} µs, expected >= ${(0.9 * sleepPart * total).toFixed(0)}`);
  assert.ok(sleepState >= 0.9 * sleepUs, `asleep ${sleepState} of ${sleepUs} µs under sp_sleep`);
  assert.ok(wholeUs >= 0.9 * sleepUs, `main above sp_sleep in ${wholeUs} of ${sleepUs} µs`);
  assert.equal(p.unwind?.mode, 'cfi');
  // the fast calls spun ~135 ms on CPU: none of it is here beyond the fast calls that took 10 ms anyway
  assert.ok(spinUs <= 1.1 * (own.slow_spin_ns / 1000) + 3000, `under sp_spin ${spinUs} µs; the program's slow spins ${own.slow_spin_ns / 1000} µs`);
});

test('latency --by-caller: calls from two functions counted apart as the program counts them, each named with its own durations', { skip }, async () => {
  const { own, r } = await measure(['120', 'callers'], ['sp_work', '--by-caller']);
  const rows = r.callers ?? [];
  const a = rows.find((c) => c.caller === 'sp_from_a');
  const b = rows.find((c) => c.caller === 'sp_from_b');
  console.log(`program: from_a ${own.from_a}, from_b ${own.from_b} (${own.b_slow} slow) | ours: ${rows.map((c) => `${c.caller} ${c.count} calls mean ${(c.totalNs / c.count / 1e6).toFixed(2)} ms max ${(c.maxNs / 1e6).toFixed(1)} ms (${c.file}:${c.line})`).join(', ')}`);
  assert.ok(a && b, JSON.stringify(rows));
  assert.equal(a.count, own.from_a);
  assert.equal(b.count, own.from_b);
  assert.equal(rows.reduce((n, c) => n + c.count, 0), r.stats.count);
  assert.match(a.file ?? '', /slowprof\/main\.c$/);
  // from_b's calls: every other one sleeps 20 ms; from_a's never do
  assert.ok(b.maxNs >= 20e6 && b.totalNs >= own.b_slow * 20e6, `from_b max ${b.maxNs}, total ${b.totalNs}`);
  assert.ok(a.totalNs / a.count < 0.5 * (b.totalNs / b.count), `means: a ${a.totalNs / a.count}, b ${b.totalNs / b.count}`);
  assert.equal(b.buckets.reduce((n, k) => n + k.count, 0), b.count);
});

test('latency --profile-slow: refused without a threshold, and --folded without --profile-slow, each with a clear error', { skip }, async () => {
  const bin = fixture();
  const child = spawn(bin, ['1'], { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    for (const [args, want] of [
      [['--profile-slow'], /--profile-slow needs --threshold-ms/],
      [['--profile-slow', '--threshold-ms', '0'], /--profile-slow needs --threshold-ms/],
      [['--folded', '--threshold-ms', '5'], /--folded applies to --profile-slow only/],
      [['--profile-slow', '--threshold-ms', '5', '--frequency', '0'], /--frequency/],
    ] as const) {
      const r = runCli(['latency', '--pid', String(child.pid), 'sp_work', ...args], { timeoutMs: 20_000 });
      assert.notEqual(r.code, 0, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, want, args.join(' '));
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'a stack trace');
    }
  } finally {
    child.stdin.end();
    child.kill();
  }
});

test('attack: a user profiling the slow calls of root’s process (or splitting them by caller) through the helper is refused; its own works', { skip: attackSkipReason() ?? skip }, async () => {
  const bed = new AttackBed('latency-slowprof');
  const user = makeUser(`ebpfS${process.pid % 100000}`);
  try {
    const rootBin = path.join(bed.base, 'root-only', 'slowprof');
    fs.copyFileSync(fixture(), rootBin);
    bed.watch(rootBin);
    const before = bed.fingerprint();
    const victim = spawn(rootBin, ['20'], { stdio: ['pipe', 'pipe', 'ignore'] });
    bed.children.push(victim);
    let vout = '';
    victim.stdout.on('data', (d) => (vout += d));
    assert.ok(await waitFor(() => vout.includes('ready'), 10_000));
    const h = bed.helperFor(user);
    const programsBefore = loadedPrograms().filter((p) => p.name.startsWith('lat_')).length;
    for (const extra of [{ profileSlow: true, thresholdMs: 10 }, { byCaller: true }, { profileSlow: true, thresholdMs: 10, byCaller: true, unwind: 'fp' }]) {
      await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: victim.pid, target: 'sp_work', ...extra } } as never), /refused: measuring a function of pid \d+, a process of uid 0, not yours/);
    }
    assert.equal(loadedPrograms().filter((p) => p.name.startsWith('lat_')).length, programsBefore, 'a refused request left programs loaded');
    victim.stdin.write('g');
    assert.ok(await waitFor(() => /result count=20 /.test(vout), 30_000), vout);
    victim.stdin.end();
    assert.deepEqual(bed.fingerprint(), before);
    // the legitimate owner, in the same test
    const mine = path.join(bed.userDir(user, 'bin'), 'slowprof');
    fs.copyFileSync(fixture(), mine);
    fs.chmodSync(mine, 0o755);
    const child = spawnAsUser(user, [mine, '30'], {}, bed.children);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 10_000));
    const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: child.pid, target: 'sp_work', thresholdMs: 10, profileSlow: true, byCaller: true } } as never)) as proto.SessionStartResult;
    child.stdin!.write('g');
    assert.ok(await waitFor(() => out.includes('result'), 30_000), out);
    const own = Object.fromEntries(/^result (.*)$/m.exec(out)![1].split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    const r = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId } as never)) as proto.SessionResult<'latency'>;
    const p = r.result.profile;
    const sleepUs = p ? under(p.stacks, 'sp_sleep', 'sp_work') : 0;
    console.log(`attack: refused 3 requests on root's pid; the owner's own session: ${r.result.stats.count} of 30 calls, ${r.result.stats.profiledSlow} slow profiled (program ${own.slow}), ${sleepUs} µs under sp_sleep, callers ${r.result.callers?.map((c) => c.caller).join(', ')}`);
    assert.equal(r.result.stats.count, 30);
    assert.ok(Math.abs((r.result.stats.profiledSlow ?? -1) - own.slow) <= own.edge);
    assert.ok(sleepUs > 0, 'the owner got no slow-call profile');
    assert.equal(r.result.callers?.[0]?.caller, 'main');
    child.stdin!.end();
    await h.close();
  } finally {
    bed.dispose();
    removeUser(user);
  }
});
