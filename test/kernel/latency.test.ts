// latency (ebpf-studio latency --pid P FUNCTION|FILE:LINE) against a C program that times its own
// calls (test/fixtures/c/latency: 90 % of the calls take 1 ms, 10 % 20 ms, each timed with
// CLOCK_MONOTONIC by its caller), built -O2 -g as users build and -O0: the count is exact, p50 and
// p99 within 5 % of the program's own, the slow calls' stacks hold the caller; bpftrace's
// uprobe/uretprobe histogram runs in the same run as the peer. Then recursion, a C++ exception
// thrown through the function (bpftrace's uretprobe aborts that program; ours must not), a thread
// that exits mid-call, FILE:LINE, and a function that is only ever inlined (refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LatencyResult } from '../../extension/protocol/latency';
import * as proto from '../../extension/protocol/protocol';
import { kernelSkipReason, loadedPrograms, repoRoot, runCli, startCli, waitFor } from '../helpers';
import { AttackBed, attackSkipReason, makeUser, removeUser, spawnAsUser } from './attackKit';

const skip = kernelSkipReason() ?? (spawnSync('gcc', ['--version']).status === 0 ? undefined : 'gcc is missing');
const fixtures = path.join(repoRoot, 'test/fixtures');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-latency-'));

function build(name: string, compiler: string, flags: string[], sources: string[]): string {
  const out = path.join(dir, name);
  if (fs.existsSync(out)) return out;
  const r = spawnSync(compiler, [...flags, '-pthread', '-o', out, ...sources.map((s) => path.join(fixtures, s))], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}
const cFixture = (opt: string) => build(`lat${opt}`, 'gcc', [opt, '-g'], ['c/latency/main.c', 'c/latency/work.c']);

interface Workload {
  child: ChildProcessWithoutNullStreams;
  go(): void;
  result(): Promise<Record<string, number>>;
  end(): Promise<number | null>;
}

function start(bin: string, args: string[]): Promise<Workload> {
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code, signal) => r(signal ? -1 : code)));
  const w: Workload = {
    child,
    go: () => child.stdin.write('g'),
    async result() {
      assert.ok(await waitFor(() => /^result .*$/m.test(out), 60_000), `no result from ${bin}: ${out}`);
      const line = /^result (.*)$/m.exec(out)![1];
      return Object.fromEntries(line.split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    },
    async end() {
      child.stdin.end();
      return exited;
    },
  };
  return waitFor(() => out.includes('ready'), 10_000).then(() => w);
}

/** Ours on `target` until the workload's result, stopped with SIGINT: the --json document. */
async function ours(pid: number, target: string, extra: string[] = []) {
  const cli = startCli(['latency', '--pid', String(pid), target, '--json', '--verbose', ...extra]);
  assert.ok(await waitFor(() => /latency: attached/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), cli.stderr());
  return {
    async stop(): Promise<LatencyResult> {
      cli.child.kill('SIGINT');
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as LatencyResult;
    },
  };
}

/** bpftrace's uprobe/uretprobe histogram of the same function: its count. */
async function bpftrace(bin: string, fn: string, pid: number) {
  const prog = `uprobe:${bin}:${fn} /pid == ${pid}/ { @s[tid] = nsecs; } uretprobe:${bin}:${fn} /@s[tid]/ { @h = hist(nsecs - @s[tid]); @n = count(); delete(@s[tid]); } BEGIN { printf("go\\n"); }`;
  const child = spawn('bpftrace', ['-e', prog], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const done = new Promise<void>((r) => child.on('exit', () => r()));
  assert.ok(await waitFor(() => out.includes('go'), 30_000), out);
  return {
    async stop(): Promise<{ count: number; text: string }> {
      child.kill('SIGINT');
      await done;
      return { count: Number(/@n: (\d+)/.exec(out)?.[1] ?? -1), text: out };
    },
  };
}

const pct = (a: number, b: number) => (100 * Math.abs(a - b)) / b;

// -O2 as chosen (a C program: the uretprobe), -O0 at its ret instructions
for (const [opt, returns] of [['-O2', 'auto'], ['-O0', 'ret']] as const) {
  test(`latency ${opt} --returns ${returns}: count exact, p50/p99 within 5 % of the program's own, slow stacks hold the caller; bpftrace beside`, { skip }, async () => {
    const bin = cFixture(opt);
    const w = await start(bin, ['calls', '300']);
    const o = await ours(w.child.pid!, 'lat_work', ['--threshold-ms', '10', '--returns', returns]);
    const b = await bpftrace(bin, 'lat_work', w.child.pid!);
    w.go();
    const own = await w.result();
    const r = await o.stop();
    const peer = await b.stop();
    await w.end();
    const s = r.stats;
    console.log(`${opt} ${r.probe.returns}: program count ${own.count} p50 ${own.p50_ns} p99 ${own.p99_ns} ns, ${own.slow10ms} >= 10 ms | ours count ${s.count} p50 ${s.p50Ns} (${pct(s.p50Ns, own.p50_ns).toFixed(2)} %) p99 ${s.p99Ns} (${pct(s.p99Ns, own.p99_ns).toFixed(2)} %), ${r.slow.length} slow | bpftrace count ${peer.count}`);
    assert.equal(s.count, own.count);
    assert.equal(r.histograms[0].count, own.count);
    assert.ok(pct(s.p50Ns, own.p50_ns) <= 5, `p50 ${s.p50Ns} vs ${own.p50_ns}`);
    assert.ok(pct(s.p99Ns, own.p99_ns) <= 5, `p99 ${s.p99Ns} vs ${own.p99_ns}`);
    assert.equal(peer.count, own.count, peer.text);
    // as many slow calls as the program saw (one near the 10 ms line may fall either side)
    assert.ok(Math.abs(r.slow.length - own.slow10ms) <= 1 && r.slow.length >= 30, `slow calls: ours ${r.slow.length}, program ${own.slow10ms}`);
    assert.equal(s.slowLost, 0);
    const callerless = r.slow.filter((c) => !c.stack.slice(1).some((f) => f.function === 'main'));
    assert.deepEqual(callerless.map((c) => c.stack), [], `${callerless.length} of ${r.slow.length} slow stacks lack main`);
    for (const c of r.slow) {
      assert.ok(c.durationNs >= 10e6);
      assert.equal(c.stack[0]?.function, 'lat_work');
    }
    assert.equal(r.probe.returns, returns === 'ret' ? 'ret-instructions' : 'uretprobe');
  });
}

test('latency: a recursive function is timed at every depth', { skip }, async () => {
  const bin = cFixture('-O0');
  const w = await start(bin, ['recurse', '40', '3']);
  const o = await ours(w.child.pid!, 'lat_recurse');
  w.go();
  const own = await w.result();
  const r = await o.stop();
  await w.end();
  console.log(`recursion: ${own.count} top-level calls of depth 3, ours ${r.stats.count} calls, p50 ${r.stats.p50Ns} ns, abandoned ${r.stats.abandoned}`);
  assert.equal(r.stats.count, own.count * 4);
  assert.equal(r.stats.abandoned, 0);
  // the outermost call takes the whole top-level time: the max is close to the program's p99
  assert.ok(r.stats.maxNs <= own.p99_ns * 1.05 + 200_000, `max ${r.stats.maxNs}, program p99 ${own.p99_ns}`);
});

test('latency: a C++ exception thrown through the function drops its entry (counted), the program lives', { skip }, async () => {
  const bin = build('latthrow', 'g++', ['-O2', '-g'], ['cpp/latency_throw.cpp']);
  const w = await start(bin, ['52']);
  const o = await ours(w.child.pid!, 'lat_parse');
  w.go();
  const own = await w.result();
  const r = await o.stop();
  const code = await w.end();
  console.log(`exceptions: ${own.count} calls, ${own.thrown} thrown; ours timed ${r.stats.count}, abandoned ${r.stats.abandoned}; exit ${code}`);
  assert.equal(code, 0);
  // chosen because the program maps the C++ runtime
  assert.equal(r.probe.returns, 'ret-instructions');
  assert.equal(own.thrown, 10);
  assert.equal(r.stats.count, own.count - own.thrown);
  assert.equal(r.stats.abandoned, own.thrown);
  // the peer: bpftrace's uretprobe swaps the return address for its trampoline, which the C++
  // unwinder cannot step past; the program dies in std::terminate at its first throw
  const w2 = await start(bin, ['52']);
  const b = await bpftrace(bin, '_Z9lat_parsei', w2.child.pid!);
  w2.go();
  const peerExit = await new Promise<number | null>((res) => w2.child.on('exit', (c, sig) => res(sig ? -1 : c)));
  await b.stop();
  console.log(`exceptions under bpftrace's uretprobe: the program ended with ${peerExit === -1 ? 'a signal (std::terminate)' : `exit ${peerExit}`}`);
  assert.notEqual(peerExit, 0);
});

test('latency: threads that exit mid-call are dropped (counted)', { skip }, async () => {
  const bin = cFixture('-O2');
  const w = await start(bin, ['exit', '5']);
  const o = await ours(w.child.pid!, 'lat_work');
  w.go();
  const own = await w.result();
  const r = await o.stop();
  await w.end();
  console.log(`thread exit: ours timed ${r.stats.count}, exited ${r.stats.exited}`);
  assert.equal(r.stats.count, own.count);
  assert.equal(r.stats.exited, 5);
  assert.equal(r.stats.abandoned, 0);
});

test('latency: FILE:LINE names the function; an only-inlined function is refused with the reason', { skip }, async () => {
  const bin = cFixture('-O2');
  const w = await start(bin, ['calls', '20']);
  const o = await ours(w.child.pid!, 'latency/work.c:21');
  w.go();
  const own = await w.result();
  const r = await o.stop();
  assert.equal(r.probe.function, 'lat_work');
  assert.equal(r.stats.count, own.count);
  const inl = runCli(['latency', '--pid', String(w.child.pid), 'scale', '--duration', '1']);
  assert.notEqual(inl.code, 0);
  assert.match(inl.stderr, /scale is inlined into its callers everywhere/);
  assert.doesNotMatch(inl.stderr, /\n\s+at /);
  const none = runCli(['latency', '--pid', String(w.child.pid), 'no_such_fn', '--duration', '1']);
  assert.notEqual(none.code, 0);
  assert.match(none.stderr, /no function no_such_fn/);
  await w.end();
});

// An unprivileged user asks the installed helper to measure a function of root's program (kept in
// a root-only folder): refused before any of root's files is read or any probe set, by name and by
// FILE:LINE; root's program runs on unprobed and unchanged. The same user measures its own copy.
test('attack: a user measuring root’s process through the helper is refused; its own works', { skip: attackSkipReason() }, async () => {
  const bed = new AttackBed('latency');
  const user = makeUser(`ebpfL${process.pid % 100000}`);
  try {
    const rootBin = path.join(bed.base, 'root-only', 'lat');
    fs.copyFileSync(cFixture('-O2'), rootBin);
    bed.watch(rootBin);
    const before = bed.fingerprint();
    const victim = await start(rootBin, ['calls', '30']);
    const h = bed.helperFor(user);
    const programsBefore = loadedPrograms().filter((p) => p.name.startsWith('lat_')).length;
    for (const target of ['lat_work', 'root-only/work.c:21', 'scale']) {
      await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: victim.child.pid, target } } as never), /refused: measuring a function of pid \d+, a process of uid 0, not yours/);
    }
    assert.equal(loadedPrograms().filter((p) => p.name.startsWith('lat_')).length, programsBefore);
    victim.go();
    const own = await victim.result();
    assert.equal(own.count, 30);
    assert.equal(await victim.end(), 0);
    assert.deepEqual(bed.fingerprint(), before);
    // the legitimate owner, in the same test
    const mine = path.join(bed.userDir(user, 'bin'), 'lat');
    fs.copyFileSync(cFixture('-O2'), mine);
    fs.chmodSync(mine, 0o755);
    const child = spawnAsUser(user, [mine, 'calls', '20'], {}, bed.children);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 10_000));
    const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'latency', options: { pid: child.pid, target: 'lat_work', thresholdMs: 10 } } as never)) as proto.SessionStartResult;
    child.stdin!.write('g');
    assert.ok(await waitFor(() => out.includes('result'), 30_000), out);
    const r = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId } as never)) as proto.SessionResult<'latency'>;
    console.log(`attack: refused 3 requests on root's pid; the owner's own session counted ${r.result.stats.count} of 20 calls, ${r.result.slow.length} slow`);
    assert.equal(r.result.stats.count, 20);
    assert.equal(r.result.slow.length >= 2, true);
    assert.equal(r.result.slow[0].stack[0].function, 'lat_work');
    child.stdin!.end();
    await h.close();
  } finally {
    bed.dispose();
    removeUser(user);
  }
});
