// CFI unwinding of user stacks against real programs built the way users build them:
// -O2 without frame pointers, a PIE, leaf functions, recursion, a call back from libc's qsort and
// our own shared library. Stacks must reach main, and the caller split of the shared leaf must
// match both the known 3:1 work split and perf --call-graph dwarf on the same process.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProfileResult } from '../../extension/protocol/profile';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { kernelSkipReason, repoRoot, runCli, sleep } from '../helpers';
import { callerShares, parseFolded, perfBinary, perfDwarf, type FoldedStack } from '../peers/perfDwarf';
import { buildUnwindFixture } from '../peers/unwindFixture';

const skip = kernelSkipReason();
const children: ChildProcess[] = [];
let work = '';
let bin = '';

async function start(mode: string, seconds: number): Promise<ChildProcess> {
  const child = spawn(bin, [mode, String(seconds)], { stdio: 'ignore' });
  children.push(child);
  await sleep(300);
  return child;
}

/** A profile of pid by user-space CFI (`--unwind dwarf`) unless `extra` names another unwind: the kernel's walk (the default) is cfiUnwind.test.ts's. */
function profile(pid: number, extra: string[]): ProfileResult {
  const unwind = extra.includes('--unwind') ? [] : ['--unwind', 'dwarf'];
  const r = runCli(['profile', '--pid', String(pid), '--frequency', '499', '--json', ...unwind, ...extra], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as ProfileResult;
}

/** Our stacks, root first, named by function (inlined frames included), as perf prints them. */
function folded(r: ProfileResult): FoldedStack[] {
  return r.stacks.map((s) => ({ frames: s.frames.filter((f) => f.kind !== 'kernel').map((f) => f.function ?? '[unknown]').reverse(), count: s.count }));
}

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'unwind-test-'));
});

after(() => {
  for (const c of children) c.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('CFI unwinding (kernel)', { skip }, () => {
  test('-O2 without frame pointers: both callers of the leaf with their 3:1 shares, as perf --call-graph dwarf sees them', async (t) => {
    const reason = buildUnwindFixture(work);
    if (reason) return t.skip(reason);
    bin = path.join(work, 'unwindfix');
    const child = await start('split', 40);
    const ours = profile(child.pid!, ['--duration', '5']);
    assert.equal(ours.unwind?.mode, 'dwarf', 'unwound by CFI in user space');
    const mine = callerShares(folded(ours), 'leaf', ['caller_a', 'caller_b']);
    const leafSamples = folded(ours).filter((s) => s.frames[s.frames.length - 1] === 'leaf').reduce((n, s) => n + s.count, 0);
    t.diagnostic(`ours: caller_a ${(100 * mine.caller_a).toFixed(1)}%, caller_b ${(100 * mine.caller_b).toFixed(1)}% of ${leafSamples} leaf samples; ${ours.unwind?.unwindNsPerSample} ns/sample to unwind`);
    assert.ok(Math.abs(mine.caller_a - 0.75) <= 0.05, `caller_a has ${(100 * mine.caller_a).toFixed(1)}% of the leaf, expected 75 ± 5`);
    const reaching = folded(ours).filter((s) => s.frames.includes('main')).reduce((n, s) => n + s.count, 0);
    assert.ok(reaching >= 0.99 * ours.samples, `${reaching} of ${ours.samples} samples reach main`);
    const mod = ours.unwind?.modules?.find((m) => m.module.endsWith('/unwindfix'));
    assert.equal(mod?.cfi, 'eh_frame', 'the view can say the executable is unwound by its .eh_frame');
    assert.ok((mod?.framePointers ?? 1) < 0.5, 'and that it has no frame pointers');

    // The frame-pointer walk on the same process: the loss this issue is about.
    const fp = profile(child.pid!, ['--duration', '2', '--unwind', 'fp']);
    assert.equal(fp.unwind?.mode, 'fp');
    const fpReaching = folded(fp).filter((s) => s.frames.includes('caller_a') || s.frames.includes('caller_b')).reduce((n, s) => n + s.count, 0);
    t.diagnostic(`frame pointers: ${fpReaching} of ${fp.samples} samples show caller_a or caller_b`);
    assert.ok(fpReaching < 0.5 * fp.samples, 'the fixture really has no usable frame pointers');

    if (!perfBinary()) return t.diagnostic('perf is not installed (linux-perf): the same-run comparison is skipped');
    const perf = await perfDwarf(child.pid!, 4, 499);
    const theirs = callerShares(perf.stacks, 'leaf', ['caller_a', 'caller_b']);
    t.diagnostic(`perf --call-graph dwarf: caller_a ${(100 * theirs.caller_a).toFixed(1)}% of ${perf.samples} samples`);
    assert.ok(perf.samples > 100, `perf took only ${perf.samples} samples`);
    assert.ok(Math.abs(mine.caller_a - theirs.caller_a) <= 0.05, `ours ${(100 * mine.caller_a).toFixed(1)}% vs perf ${(100 * theirs.caller_a).toFixed(1)}%: more than 5 points apart`);
    child.kill('SIGKILL');
  });

  test('recursion, a qsort callback through libc, our own shared library: every stack reaches main', async (t) => {
    if (!bin) {
      const reason = buildUnwindFixture(work);
      if (reason) return t.skip(reason);
      bin = path.join(work, 'unwindfix');
    }
    const child = await start('all', 40);
    const r = profile(child.pid!, ['--duration', '5']);
    const stacks = folded(r);
    const user = stacks.filter((s) => s.frames.length > 0);
    const total = user.reduce((n, s) => n + s.count, 0);
    const toMain = user.filter((s) => s.frames.includes('main')).reduce((n, s) => n + s.count, 0);
    t.diagnostic(`${toMain} of ${total} samples reach main`);
    assert.ok(toMain >= 0.98 * total, `only ${toMain} of ${total} samples reach main`);
    const chain = (needle: string[]) => user.some((s) => s.frames.join(';').includes(needle.join(';')));
    assert.ok(
      user.some((s) => s.frames.filter((f) => f === 'recurse').length === 21 && s.frames[s.frames.length - 1] === 'leaf'),
      'recurse(20) shows 21 recurse frames above the leaf',
    );
    assert.ok(user.some((s) => s.frames.includes('sort_work') && s.frames[s.frames.length - 1] === 'by_value' && s.frames.some((f) => /qsort|msort/.test(f))), 'by_value is called back from libc qsort, under sort_work');
    assert.ok(chain(['main', 'lib_caller', 'lib_spin', 'lib_leaf']), 'our shared library: main → lib_caller → lib_spin → lib_leaf');
    assert.ok(chain(['main', 'caller_a', 'leaf']) && chain(['main', 'caller_b', 'leaf']), 'both leaf callers');
    const lib = r.unwind?.modules?.find((m) => m.module.endsWith('/libunwlib.so'));
    assert.equal(lib?.cfi, 'eh_frame', 'the shared library is unwound by its CFI');
    child.kill('SIGKILL');
  });

  test('folded output of a dwarf profile is whole too (the format users take to flamegraph.pl)', async (t) => {
    if (!bin) return t.skip('fixture not built');
    const child = await start('split', 20);
    const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '299', '--duration', '2', '--folded'], { timeoutMs: 40_000 });
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    const stacks = parseFolded(r.stdout);
    assert.ok(stacks.some((s) => s.frames.join(';').endsWith('main;caller_a;leaf')), r.stdout.slice(0, 500));
  });

  test('memleak: leak stacks of an -O2 program without frame pointers keep each caller, up to main', async (t) => {
    const exe = path.join(work, 'leakfix');
    const cc = spawnSync('gcc', ['-O2', '-g', '-fomit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/unwind/leakfix.c'), '-o', exe], { encoding: 'utf8' });
    if (cc.error) return t.skip(`gcc is not installed: ${cc.error.message}`);
    assert.equal(cc.status, 0, cc.stderr);
    // uprobe mode: the kernel copies the stack (dwarf) or walks frame pointers (fp); preload mode
    // unwinds in the process and is checked against the same figures below.
    const run = (unwind: string, mode = 'uprobe') => {
      const r = runCli(['memleak', '--json', '--mode', mode, '--unwind', unwind, '--', exe], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as MemleakResult;
    };
    const names = (s: MemleakResult['stacks'][number]) => s.frames.map((f) => f.function ?? '?');
    const dwarf = run('dwarf');
    const mine = dwarf.stacks.filter((s) => names(s)[0] === 'grab');
    const via = (caller: string) => mine.filter((s) => names(s)[1] === caller);
    const sum = (xs: typeof mine) => ({ bytes: xs.reduce((n, s) => n + s.bytes, 0), allocations: xs.reduce((n, s) => n + s.allocations, 0) });
    t.diagnostic(mine.map((s) => `${s.bytes} B in ${s.allocations}: ${names(s).join(' <- ')}`).join('\n'));
    assert.deepEqual(sum(via('from_a')), { bytes: 3000, allocations: 30 }, 'from_a leaked 30 x 100 bytes');
    assert.deepEqual(sum(via('from_b')), { bytes: 18000, allocations: 60 }, 'from_b leaked 60 x 300 bytes');
    for (const s of mine) assert.equal(names(s)[2], 'main', `a leak stack stops short of main: ${names(s).join(' <- ')}`);
    const line = (s: (typeof mine)[number]) => s.frames[0].line;
    assert.ok(mine.every((s) => line(s) === line(mine[0])), 'the allocating line is the same exact line in every stack');

    // auto picks the stack copy for a program without frame pointers.
    const auto = run('auto').stacks.filter((s) => names(s)[0] === 'grab');
    assert.deepEqual(sum(auto.filter((s) => names(s)[1] === 'from_a')), sum(via('from_a')), 'auto unwinds by CFI here');

    // Preload mode (the default for a launched program) agrees: same callers, bytes and counts.
    const pre = run('auto', 'preload').stacks.filter((s) => names(s)[0] === 'grab');
    const preVia = (caller: string) => sum(pre.filter((s) => names(s)[1] === caller));
    assert.deepEqual(preVia('from_a'), sum(via('from_a')), 'preload and uprobe modes agree on from_a');
    assert.deepEqual(preVia('from_b'), sum(via('from_b')), 'preload and uprobe modes agree on from_b');

    // The frame-pointer walk: the callers are lost and all leaks fall on one stack.
    const fp = run('fp');
    const fpGrab = fp.stacks.filter((s) => names(s)[0] === 'grab');
    assert.ok(!fpGrab.some((s) => names(s).includes('from_a')), 'frame pointers do not see from_a in this build');
    assert.equal(fpGrab.reduce((n, s) => n + s.bytes, 0), 21000, 'bytes are exact in both modes');
  });

  test('bad --unwind and --stack-copy-kb values are usage errors', () => {
    const a = runCli(['profile', '--pid', String(process.pid), '--unwind', 'lbr', '--duration', '1']);
    assert.equal(a.code, 2);
    assert.match(a.stderr, /--unwind must be one of auto, fp, dwarf/);
    const b = runCli(['profile', '--pid', String(process.pid), '--stack-copy-kb', '64', '--duration', '1']);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /--stack-copy-kb/);
    const c = runCli(['profile', '--pid', String(process.pid), '--unwind', 'fp', '--stack-copy-kb', '8', '--duration', '1']);
    assert.equal(c.code, 2);
    assert.match(c.stderr, /applies to --unwind dwarf/);
  });
});

// A process that execs replaces all its modules. The unwinder's register backend must not be
// one of theirs: libdw frees a module's backend with the module, and an unwind after the
// refresh read the register count from freed memory and aborted on "dwfl_frame.c: state_alloc:
// nregs" (the agent had turned CFI off for it). The children below run with glibc's freed
// memory poisoned (MALLOC_PERTURB_, no tcache), so such a read aborts every time, not only when
// the allocator happened to reuse the block.
const POISON = { ...process.env, GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0', MALLOC_PERTURB_: '165' };

describe('CFI unwinding across exec (kernel)', { skip }, () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-unwind-exec-'));
    // Alternates between dash and bash in one pid, ~0.8 s of CPU each: each exec swaps every
    // module the unwinder knew (the pool re-reads the mappings at most every 500 ms, so the first
    // samples after an exec may stop at the leaf).
    fs.writeFileSync(
      path.join(dir, 'flip.sh'),
      'n=${1:-0}\nspin=${SPIN:-350000}; [ -z "$BASH_VERSION" ] && spin=$((spin * 3))\ni=0; while [ $i -lt $spin ]; do i=$((i+1)); done\n[ "$n" -ge "${ROUNDS:-1000}" ] && exit 0\nif [ -n "$BASH_VERSION" ]; then exec /bin/dash "$0" $((n+1)); else exec /bin/bash "$0" $((n+1)); fi\n',
    );
  });
  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('an unwinder whose process exec\'d unwinds after refresh() (freed memory poisoned)', { timeout: 60_000 }, (t) => {
    // One Unwinder, made while the pid runs dash; the pid execs sleep; refresh(); unwind.
    const script = `
      const { spawn } = require('node:child_process');
      const fs = require('node:fs');
      const addon = require(${JSON.stringify(path.join(repoRoot, 'dist', 'ebpf_studio.node'))});
      const sh = spawn('/bin/dash', ['-c', 'read x; exec /bin/sleep 30'], { stdio: ['pipe', 'ignore', 'ignore'] });
      const u = new addon.Unwinder(sh.pid);
      const before = u.modules()[0].name;
      sh.stdin.write('go\\n');
      const t0 = Date.now();
      const mapped = () => fs.readFileSync('/proc/' + sh.pid + '/maps', 'utf8').split('\\n').find((l) => l.includes('r-xp') && l.endsWith('/sleep'));
      while (!mapped() || !fs.readFileSync('/proc/' + sh.pid + '/maps', 'utf8').includes('libc.so')) if (Date.now() - t0 > 20000) throw new Error('the shell did not exec sleep');
      if (!u.refresh()) throw new Error('refresh failed');
      const regs = Buffer.alloc(17 * 8);
      regs.writeBigUInt64LE(BigInt('0x' + mapped().split('-')[0]) + 16n, 16 * 8);
      regs.writeBigUInt64LE(0x7ff000000000n, 7 * 8);
      const r = u.unwind(sh.pid, regs, Buffer.alloc(256));
      sh.kill('SIGKILL');
      console.log(JSON.stringify({ before, frames: r.frames.length }));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { env: POISON, encoding: 'utf8', timeout: 50_000 });
    t.diagnostic(r.stdout.trim());
    assert.equal(r.signal, null, `the unwinder aborted after its process exec'd: ${r.stderr.split('\n').slice(0, 3).join(' ')}`);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { before: string; frames: number };
    assert.match(out.before, /dash$/);
    assert.ok(out.frames >= 1);
  });

  test('two CFI profile sessions in one process (pid and system-wide) while the pid execs back and forth: both unwind, nothing aborts', { timeout: 90_000 }, async (t) => {
    const flip = spawn('/bin/dash', [path.join(dir, 'flip.sh')], { stdio: 'ignore', cwd: dir });
    children.push(flip);
    try {
      const r = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((resolve) => {
        const c = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'test/fixtures/twoCfiSessions.ts'), String(flip.pid), '6'], { env: POISON, stdio: ['ignore', 'pipe', 'pipe'] });
        children.push(c);
        let out = '';
        let err = '';
        c.stdout.on('data', (d) => (out += d));
        c.stderr.on('data', (d) => (err += d));
        c.on('exit', (code, signal) => resolve({ code, signal, out, err }));
      });
      assert.equal(r.signal, null, `the process holding two CFI sessions aborted: ${r.err.split('\n').slice(-4).join(' ')}`);
      assert.equal(r.code, 0, r.err);
      const res = JSON.parse(r.out.trim().split('\n').pop()!) as Record<'pid' | 'system', { byComm: Record<string, number>; deep: number; samples: number }>;
      t.diagnostic(`samples of the flipping pid: --pid session ${JSON.stringify(res.pid.byComm)} (${res.pid.deep} unwound past the leaf), system-wide session ${JSON.stringify(res.system.byComm)} (${res.system.deep})`);
      // Both shells ran in that pid while sampled, each after the other's exec, and were unwound
      // (the system-wide session, at 99 Hz over every CPU, may miss a short phase on a busy machine).
      assert.ok((res.pid.byComm.dash ?? 0) > 0 && (res.pid.byComm.bash ?? 0) > 0, `not both shells sampled: ${JSON.stringify(res.pid.byComm)}`);
      for (const s of [res.pid, res.system]) {
        assert.ok(s.samples > 0, 'no sample of the flipping pid');
        assert.ok(s.deep > s.samples / 3, `too many samples stopped at the leaf: ${s.deep} of ${s.samples} unwound past it`);
      }
    } finally {
      flip.kill('SIGKILL');
    }
  });
});
