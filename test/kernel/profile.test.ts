// The CPU profiler against real workloads: a C program whose CPU split between two functions is
// known (3:1 by loop iterations) must show that split within a few percent with file:line on
// both functions; a JVM with a hot method run with -XX:+PreserveFramePointer must show the
// method's name (its perf map fetched through our attach protocol, no jcmd involved).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { kernelSkipReason, repoRoot, runCli, sleep } from '../helpers';

const skip = kernelSkipReason();
const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const children: ChildProcess[] = [];
let work = '';

function hasFunction(s: ProfileStack, name: RegExp): boolean {
  return s.frames.some((f) => f.function !== null && name.test(f.function));
}

function samplesWith(r: ProfileResult, name: RegExp): number {
  return r.stacks.filter((s) => hasFunction(s, name)).reduce((n, s) => n + s.count, 0);
}

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-test-'));
});

after(() => {
  for (const c of children) c.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Compiles the 3:1 CPU-split fixture as `name` and starts it for 30 s; the skip reason without gcc. */
const CPUSPLIT_C = path.join(repoRoot, 'test/fixtures/c/cpusplit.c');

async function startCpusplit(name: string): Promise<ChildProcess | string> {
  const bin = path.join(work, name);
  const cc = spawnSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', CPUSPLIT_C, '-o', bin], { encoding: 'utf8' });
  if (cc.error) return `gcc is not installed: ${cc.error.message}`;
  assert.equal(cc.status, 0, cc.stderr);
  const child = spawn(bin, ['30'], { stdio: 'ignore' });
  children.push(child);
  await sleep(200);
  return child;
}

describe('profile (kernel)', { skip }, () => {
  test('C fixture: 3:1 CPU split between hot_a and hot_b, both with file:line', async (t) => {
    const child = await startCpusplit('cpusplit');
    if (typeof child === 'string') return t.skip(child);
    const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '499', '--duration', '5', '--json'], { timeoutMs: 40_000 });
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(result.tracer, 'profile');
    assert.equal(result.frequency, 499);
    assert.ok(result.samples >= 300, `only ${result.samples} samples in 5 s at 499 Hz`);
    assert.ok(result.lost <= result.samples * 0.01, `${result.lost} samples lost`);
    for (const s of result.stacks) {
      assert.equal(s.pid, child.pid, 'only the target process is sampled');
      assert.equal(s.comm, 'cpusplit');
      for (const f of s.frames) assert.ok(['kernel', 'native', 'jit', 'interpreted'].includes(f.kind));
    }
    const a = samplesWith(result, /^hot_a$/);
    const b = samplesWith(result, /^hot_b$/);
    const share = a / (a + b);
    t.diagnostic(`hot_a ${a}, hot_b ${b}: share ${(100 * share).toFixed(1)}% (expected 75%), ${result.samples} samples, ${result.lost} lost`);
    assert.ok(a + b >= 0.9 * result.samples, 'nearly all samples are in the two functions');
    assert.ok(Math.abs(share - 0.75) <= 0.05, `hot_a's share is ${(100 * share).toFixed(1)}%, expected 75% ± 5`);
    for (const [fn, lines] of [
      ['hot_a', [11, 12, 13]],
      ['hot_b', [17, 18, 19]],
    ] as const) {
      const leaf = result.stacks.find((s) => s.frames[0]?.function === fn)!.frames[0];
      assert.equal(leaf.file, CPUSPLIT_C, `${fn} carries its source file`);
      assert.ok((lines as readonly number[]).includes(leaf.line!), `${fn} is at line ${leaf.line}, expected one of ${lines.join(', ')}`);
      assert.equal(leaf.kind, 'native');
      assert.match(leaf.address, /^0x[0-9a-f]+$/);
    }
    // Callers are there too: frame pointers give main above each hot function.
    const top = result.stacks.find((s) => s.frames[0]?.function === 'hot_a')!;
    assert.equal(top.frames[1].function, 'main');
  });

  test('Java fixture: the hot method is named through the JVM perf map', async (t) => {
    if (!fs.existsSync(`${JDK}/bin/javac`)) return t.skip(`no JDK 17 at ${JDK} (apt-get install openjdk-17-jdk-headless)`);
    const classes = path.join(work, 'classes');
    const jc = spawnSync(`${JDK}/bin/javac`, ['-d', classes, path.join(repoRoot, 'test/fixtures/java/HotMethod.java')], { encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
    // Runs in `work` so the attach trigger file (.attach_pidN) lands in a folder we remove.
    const jvm = spawn(`${JDK}/bin/java`, ['-XX:+PreserveFramePointer', '-XX:CompileCommand=quiet', '-XX:CompileCommand=dontinline,HotMethod::hotLoop', '-cp', classes, 'HotMethod', '40'], { cwd: work, stdio: 'ignore' });
    children.push(jvm);
    await sleep(1500); // let hotLoop get compiled
    const r = runCli(['profile', '--pid', String(jvm.pid), '--frequency', '199', '--duration', '4', '--json'], { timeoutMs: 45_000 });
    jvm.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as ProfileResult;
    assert.ok(result.samples > 50, `only ${result.samples} samples`);
    const hot = samplesWith(result, /HotMethod\.hotLoop/);
    t.diagnostic(`${hot} of ${result.samples} samples in HotMethod.hotLoop`);
    assert.ok(hot >= 0.5 * result.samples, `hotLoop has ${hot} of ${result.samples} samples`);
    const frame = result.stacks.flatMap((s) => s.frames).find((f) => f.function && /HotMethod\.hotLoop/.test(f.function))!;
    assert.equal(frame.kind, 'jit');
    assert.doesNotMatch(r.stderr, /PreserveFramePointer/, 'no truncation warning when the flag is on');
    // A JVM killed with SIGKILL leaves its perf map and attach socket behind.
    fs.rmSync(`/tmp/perf-${jvm.pid}.map`, { force: true });
    fs.rmSync(`/tmp/.java_pid${jvm.pid}`, { force: true });
  });

  test('a JVM without -XX:+PreserveFramePointer gets the warning with the fix', async (t) => {
    if (!fs.existsSync(`${JDK}/bin/javac`)) return t.skip(`no JDK 17 at ${JDK}`);
    const classes = path.join(work, 'classes');
    const jvm = spawn(`${JDK}/bin/java`, ['-cp', classes, 'HotMethod', '20'], { cwd: work, stdio: 'ignore' });
    children.push(jvm);
    await sleep(800);
    const r = runCli(['profile', '--pid', String(jvm.pid), '--duration', '1', '--no-java'], { timeoutMs: 30_000 });
    jvm.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /without -XX:\+PreserveFramePointer: Java stacks will be truncated/);
    assert.match(r.stderr, /-XX:\+PreserveFramePointer -cp/);
  });

  test('bad targets get exit codes and reasons', () => {
    const none = runCli(['profile', '--pid', '4194000', '--duration', '1']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no process with pid 4194000/);
    const neither = runCli(['profile', '--duration', '1']);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /--pid P for one process or --all/);
    const freq = runCli(['profile', '--all', '--frequency', '0']);
    assert.equal(freq.code, 2);
    assert.match(freq.stderr, /--frequency 0 is out of range/);
  });

  test('a full stack map loses samples, and the loss is counted and explained (--stack-storage-size, frame-pointer mode where user stacks use the map too)', async (t) => {
    // hot_a and hot_b are two distinct user stacks; one slot can hold only one of them.
    const child = await startCpusplit('cpusplit-lost');
    if (typeof child === 'string') return t.skip(child);
    const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '499', '--duration', '1', '--stack-storage-size', '1', '--unwind', 'fp', '--json'], { timeoutMs: 30_000 });
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as ProfileResult;
    assert.ok(result.samples >= 100, `only ${result.samples} samples`);
    assert.ok(result.lost > 0 && result.lost < result.samples, `lost ${result.lost} of ${result.samples}`);
    assert.match(r.stderr, new RegExp(`${result.lost} samples lost \\(their stacks found no room in the kernel stack map\\).*--stack-storage-size`));
    t.diagnostic(`${result.lost} of ${result.samples} samples lost with one stack slot`);
  });

  test('--all --folded prints folded stacks with a process root', async (t) => {
    // An idle machine may offer no samples at all in a second (idle is excluded): run a busy
    // program of our own so the system-wide profile has something it must find.
    const child = await startCpusplit('cpusplit-all');
    if (typeof child === 'string') return t.skip(child);
    const r = runCli(['profile', '--all', '--duration', '1', '--folded', '--no-java'], { timeoutMs: 30_000 });
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n').filter(Boolean);
    assert.ok(lines.length > 0, `no stacks at all in 1 s of system-wide profiling; stderr: ${r.stderr}`);
    for (const l of lines) assert.match(l, /^[^;\n]+ \[\d+\](;[^;\n]+)* \d+$/, `folded line: ${l}`);
    const ours = lines.filter((l) => l.startsWith(`cpusplit-all [${child.pid}];`));
    assert.ok(ours.length > 0, `the busy fixture (pid ${child.pid}) is missing from the system-wide profile`);
    assert.ok(ours.some((l) => /;hot_a[ ;]/.test(l)), `hot_a is not named in the fixture's stacks: ${ours.slice(0, 3).join(' | ')}`);
  });
});
