// User stacks walked in the kernel by unwind tables (bpf/cfi_walk.bpf.h, --unwind cfi) against a
// -O2 program without frame pointers (test/fixtures/c/cfisleep.c): main calls long_wait() and
// short_wait(), which sleep 30 ms and 10 ms through libc's nanosleep (a PLT call). Frame pointers
// give one stack, clock_nanosleep in libc; the table walk must give both functions with main above
// them, 3:1, as `perf record -e sched:sched_switch --call-graph dwarf` does on the same process in
// the same run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { kernelSkipReason, repoRoot, runCli, startCli, waitFor } from '../helpers';
import { parsePerfScript, perfBinary, type FoldedStack } from '../peers/perfDwarf';

const skip = kernelSkipReason();
const SRC = path.join(repoRoot, 'test/fixtures/c/cfisleep.c');
const DURATION_S = 5;

let work = '';
let child: ChildProcess | undefined;
let pid = 0;

const fns = (s: ProfileStack) => s.frames.filter((f) => f.kind !== 'kernel').map((f) => f.function ?? '?');
const sumUs = (stacks: ProfileStack[]) => stacks.reduce((a, s) => a + (s.value ?? 0), 0);
const OURS = ['main', 'long_wait', 'short_wait'];

/** The fixture's own functions of a stack, root first: what both unwinders must agree on. */
const fixturePath = (frames: string[]) => frames.filter((f) => OURS.includes(f)).join(';');

/** perf's stacks at each switch-out of pid, unwound by perf from a copy of the user stack (DWARF). */
async function perfSwitches(p: number, seconds: number): Promise<FoldedStack[]> {
  const perf = perfBinary()!;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'perf-switch-'));
  const data = path.join(dir, 'perf.data');
  try {
    await new Promise<void>((resolve, reject) => {
      const r = spawn(perf, ['record', '-q', '-N', '-o', data, '-e', 'sched:sched_switch', '--call-graph', 'dwarf,16384', '-p', String(p), '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      r.stderr.on('data', (d) => (err += d));
      r.on('error', reject);
      r.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perf record exited ${code}: ${err.trim()}`))));
    });
    const s = spawnSync(perf, ['script', '-i', data, '-F', 'comm,tid,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 256 << 20 });
    return parsePerfScript(s.stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('in-kernel CFI unwinding (--unwind cfi)', { skip, timeout: 120_000 }, () => {
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-cfi-'));
    const bin = path.join(work, 'cfisleep');
    const cc = spawnSync('gcc', ['-O2', '-g', '-fomit-frame-pointer', SRC, '-o', bin], { encoding: 'utf8' });
    assert.equal(cc.status, 0, `gcc failed: ${cc.stderr}`);
    child = spawn(bin, [], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 10_000), 'the fixture did not start');
    pid = child.pid!;
  });
  after(() => {
    child?.kill('SIGKILL');
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('off-CPU: long_wait and short_wait 3:1 with main above, as perf --call-graph dwarf sees them', async (t) => {
    const ours = startCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--unwind', 'cfi', '--duration', String(DURATION_S), '--json', '--verbose']);
    assert.ok(await waitFor(() => /attached via/.test(ours.stderr()), 20_000), `not attached: ${ours.stderr()}`);
    const perf = perfBinary() ? await perfSwitches(pid, DURATION_S - 2) : undefined;
    const r = await ours.done;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.unwind?.mode, 'cfi');
    const sleeping = doc.stacks.filter((s) => s.state === 'sleep' && fns(s).includes('clock_nanosleep'));
    const long = sleeping.filter((s) => fns(s).includes('long_wait'));
    const short = sleeping.filter((s) => fns(s).includes('short_wait'));
    const share = sumUs(long) / (sumUs(long) + sumUs(short));
    const reachMain = sumUs(sleeping.filter((s) => fns(s).includes('main'))) / sumUs(sleeping);
    t.diagnostic(`ours: long_wait ${(100 * share).toFixed(1)} % (truth 75 %), ${(100 * reachMain).toFixed(1)} % of sleeping time reaches main, ${doc.stacks.length} stacks`);
    t.diagnostic(/cfi: .*/.exec(r.stderr)?.[0] ?? 'no cfi summary');
    assert.ok(Math.abs(share - 0.75) <= 0.05, `long_wait share ${share}`);
    assert.ok(reachMain > 0.95, `main above ${reachMain} of the sleeping time`);
    // root first: main, then the waiting function (frames are leaf first)
    for (const s of [...long, ...short]) {
      const root = fns(s).reverse();
      assert.deepEqual(root.slice(root.indexOf('main'), root.indexOf('main') + 2), ['main', root.includes('long_wait') ? 'long_wait' : 'short_wait']);
    }
    assert.ok(doc.unwind?.cfiTables && doc.unwind.cfiTables.files >= 2, 'tables for the executable and libc at least');
    if (!perf) return t.diagnostic('perf is not installed (linux-perf): the same-run comparison is skipped');
    const perfSleeping = perf.filter((s) => s.frames.some((f) => /clock_nanosleep/.test(f)));
    const n = perfSleeping.reduce((a, s) => a + s.count, 0);
    const perfMain = perfSleeping.filter((s) => s.frames.includes('main')).reduce((a, s) => a + s.count, 0);
    const perfPaths = new Set(perfSleeping.map((s) => fixturePath(s.frames)));
    const ourPaths = new Set(sleeping.map((s) => fixturePath(fns(s).reverse())));
    t.diagnostic(`perf --call-graph dwarf: ${n} switch-outs in clock_nanosleep, ${((100 * perfMain) / n).toFixed(1)} % reach main; paths ${[...perfPaths].join(' | ')}; ours ${[...ourPaths].join(' | ')}`);
    assert.ok(n > 20, `perf saw ${n} switch-outs`);
    assert.ok(reachMain >= perfMain / n - 0.02, 'we reach main at least as often as perf');
    assert.deepEqual([...ourPaths].sort(), [...perfPaths].filter((p) => p).sort(), 'the same call paths as perf');
  });

  test('frame pointers (the default) on the same program: one stack at clock_nanosleep, no caller', () => {
    const r = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--duration', '2', '--json'], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(doc.unwind?.mode, 'fp');
    assert.ok(!doc.stacks.some((s) => fns(s).includes('long_wait') || fns(s).includes('main')), 'no frame above libc without frame pointers');
  });

  test('bad input: --unwind cfi without --pid, --unwind dwarf with offcpu', () => {
    const a = runCli(['profile', '--all', '--event', 'offcpu', '--unwind', 'cfi', '--duration', '1']);
    assert.notEqual(a.code, 0);
    assert.match(a.stderr, /--unwind cfi needs --pid/);
    const b = runCli(['profile', '--pid', String(pid), '--event', 'offcpu', '--unwind', 'dwarf', '--duration', '1']);
    assert.notEqual(b.code, 0);
    assert.match(b.stderr, /--unwind takes fp or cfi with --event offcpu/);
    assert.doesNotMatch(a.stderr + b.stderr, /\n\s+at /, 'no stack trace');
  });
});
