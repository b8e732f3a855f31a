// memleak in preload mode (dist/libebpf-studio-preload.so in LD_PRELOAD of a launched command)
// against real programs: the C and C++ leak fixtures give exactly what the uprobe mode gives
// (bytes, counts, file:line), an 8-thread stress of 1M allocator calls ends with exactly the
// outstanding bytes the program itself counted, fork and exec children leave the parent's
// report alone and run without the interposer (also while other threads allocate), the aligned
// allocators and an allocation before main are recorded, a library loaded with dlopen is
// symbolized, -O2 -fomit-frame-pointer stacks reach main with either unwinder, static and setuid
// programs fall back to uprobes with the reason, an --allocator-lib exporting malloc is forwarded
// to, and a user without root can trace. Comparisons with the uprobe mode need root.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MemleakResult, MemleakStack } from '../../extension/protocol/memleak';
import { spawn } from 'node:child_process';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import { cliJs, distDir, helperJs, kernelSkipReason, repoRoot, markerLines, runCli } from '../helpers';

const fx = (f: string) => path.join(repoRoot, 'test/fixtures', f);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-preload-test-'));
const lib = path.join(distDir, 'libebpf-studio-preload.so');

function missing(needUprobes: boolean): string | undefined {
  if (!fs.existsSync(cliJs) || !fs.existsSync(lib)) return 'not built: run node scripts/build.mjs';
  if (spawnSync('gcc', ['--version']).status !== 0 || spawnSync('g++', ['--version']).status !== 0) return 'gcc/g++ are missing (apt-get install build-essential)';
  // preload mode needs no privilege; comparisons with the uprobe mode and fallbacks do
  return needUprobes ? kernelSkipReason() : undefined;
}

function skip(t: TestContext, needUprobes = false): boolean {
  const r = missing(needUprobes);
  if (r) t.skip(r);
  return Boolean(r);
}

/** `libs` go after the source, where the linker still needs them. */
function cc(src: string, out: string, flags: string[], libs: string[] = []): string {
  const file = path.join(work, out);
  if (fs.existsSync(file)) return file;
  const compiler = src.endsWith('.cpp') ? 'g++' : 'gcc';
  const r = spawnSync(compiler, [...flags, '-o', file, src, ...libs], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${compiler} failed: ${r.stderr}`);
  return file;
}
const debugBuild = (src: string, out: string, libs: string[] = []) => cc(fx(src), out, ['-g', '-O0', '-fno-omit-frame-pointer'], libs);

/** Line numbers of the markers (LEAK-..., FREED-..., ...) in a fixture source. */
const markers = (src: string) => markerLines(src, /(?:\/\*|\/\/) ([A-Z][-A-Z0-9]+)/);

/** Stacks whose first frame (the allocating line) is in `src`, by line. */
function sitesIn(r: MemleakResult, src: string): Map<number, MemleakStack> {
  const out = new Map<number, MemleakStack>();
  for (const s of r.stacks) {
    const f = s.frames[0];
    if (f?.file && path.basename(f.file) === path.basename(src) && f.line) {
      const had = out.get(f.line);
      // stacks that differ further up (e.g. several callers) add up per line
      out.set(f.line, had ? { ...had, bytes: had.bytes + s.bytes, allocations: had.allocations + s.allocations } : s);
    }
  }
  return out;
}

function summary(r: MemleakResult, src: string): string[] {
  return [...sitesIn(r, src).entries()].sort((a, b) => a[0] - b[0]).map(([line, s]) => `${path.basename(src)}:${line} ${s.bytes} B in ${s.allocations}`);
}

/**
 * Same sites, bytes and counts; and each uprobe stack is where the preload one starts. CFI
 * unwinding goes on past frames without frame pointers (__libc_start_main, _start), where the
 * kernel's frame-pointer walk stops, so the preload stack may be longer.
 */
function sameAsUprobe(pre: MemleakResult, up: MemleakResult, src: string): void {
  assert.deepEqual(summary(pre, src), summary(up, src));
  const a = sitesIn(pre, src);
  for (const [line, s] of sitesIn(up, src)) {
    const names = (x: MemleakStack) => x.frames.map((f) => `${f.function ?? '?'}@${f.line ?? ''}`);
    const want = names(s);
    assert.deepEqual(names(a.get(line)!).slice(0, want.length), want, `line ${line}: the uprobe stack must begin the preload stack`);
  }
}

function memleak(args: string[], env?: NodeJS.ProcessEnv): { r: MemleakResult; stderr: string } {
  const run = runCli(['memleak', '--json', '--top', '0', ...args], { env: env ? { ...process.env, ...env } : undefined, timeoutMs: 90_000 });
  assert.equal(run.code, 0, `memleak ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return { r: JSON.parse(run.stdout) as MemleakResult, stderr: run.stderr };
}

test('C fixture: preload and uprobe modes report the same bytes, counts and file:line', { timeout: 120000 }, (t) => {
  if (skip(t, true)) return;
  const exe = debugBuild('c/leaky.c', 'leaky');
  const pre = memleak(['--mode', 'preload', '--', exe]).r;
  const up = memleak(['--mode', 'uprobe', '--', exe]).r;
  assert.equal(pre.mode, 'preload');
  assert.equal(up.mode, 'uprobe');
  const src = fx('c/leaky.c');
  const mk = markers(src);
  const sites = sitesIn(pre, src);
  assert.deepEqual([sites.get(mk.get('LEAK-MALLOC')!)?.bytes, sites.get(mk.get('LEAK-MALLOC')!)?.allocations], [10000, 10]);
  assert.deepEqual([sites.get(mk.get('LEAK-CALLOC')!)?.bytes, sites.get(mk.get('LEAK-CALLOC')!)?.allocations], [10000, 5]);
  assert.deepEqual([sites.get(mk.get('LEAK-REALLOC')!)?.bytes, sites.get(mk.get('LEAK-REALLOC')!)?.allocations], [3000, 1]);
  sameAsUprobe(pre, up, src);
  assert.equal(pre.dropped, 0);
  t.diagnostic(summary(pre, src).join('; '));
});

test('C++ fixture: new and new[] in preload mode match the uprobe mode, first frame at the `new` line', { timeout: 120000 }, (t) => {
  if (skip(t, true)) return;
  const exe = debugBuild('cpp/leaky.cpp', 'leakypp');
  const src = fx('cpp/leaky.cpp');
  const pre = memleak(['--', exe]).r; // auto = preload for a launched command
  const up = memleak(['--mode', 'uprobe', '--', exe]).r;
  assert.equal(pre.mode, 'preload');
  const mk = markers(src);
  const sites = sitesIn(pre, src);
  assert.deepEqual([sites.get(mk.get('LEAK-NEW')!)?.bytes, sites.get(mk.get('LEAK-NEW')!)?.allocations], [7 * 248, 7]);
  assert.deepEqual([sites.get(mk.get('LEAK-NEW-ARRAY')!)?.bytes, sites.get(mk.get('LEAK-NEW-ARRAY')!)?.allocations], [3 * 4000, 3]);
  assert.equal(sites.size, 2);
  sameAsUprobe(pre, up, src);
});

test('--min-size and --max-size: blocks outside the range are not recorded in preload mode', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  const exe = debugBuild('c/leaky.c', 'leaky');
  const src = fx('c/leaky.c');
  const mk = markers(src);
  const lines = (r: MemleakResult) => [...sitesIn(r, src).keys()].sort((a, b) => a - b);
  // leaky.c leaks 10 x 1000 B (malloc), 5 x 2000 B (calloc) and 1 x 3000 B (realloc)
  assert.deepEqual(lines(memleak(['--min-size', '1500', '--', exe]).r), [mk.get('LEAK-CALLOC'), mk.get('LEAK-REALLOC')]);
  assert.deepEqual(lines(memleak(['--max-size', '2500', '--', exe]).r), [mk.get('LEAK-MALLOC'), mk.get('LEAK-CALLOC')]);
});

test('8 threads, 1M allocator calls: exactly the outstanding bytes and count the program counted', { timeout: 120000 }, (t) => {
  if (skip(t)) return;
  const exe = cc(fx('c/leakstress.c'), 'leakstress', ['-g', '-O2', '-pthread']);
  const run = runCli(['memleak', '--json', '--top', '0', '--', exe], { timeoutMs: 90_000 });
  assert.equal(run.code, 0, run.stderr);
  const r = JSON.parse(run.stdout) as MemleakResult;
  // --json sends the program's stdout to stderr
  const m = /outstanding (\d+) (\d+)/.exec(run.stderr);
  assert.ok(m, `the program's count is missing from: ${run.stderr}`);
  let bytes = 0;
  let count = 0;
  for (const s of sitesIn(r, fx('c/leakstress.c')).values()) {
    bytes += s.bytes;
    count += s.allocations;
  }
  assert.deepEqual([bytes, count], [Number(m[1]), Number(m[2])]);
  assert.equal(r.dropped, 0);
  t.diagnostic(`${count} blocks, ${bytes} B outstanding after 1M calls on 8 threads`);
});

test('fork and exec: children do not touch the parent report, and exec drops the interposer', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  const exe = debugBuild('c/leakfork.c', 'leakfork');
  const src = fx('c/leakfork.c');
  const { r, stderr } = memleak(['--', exe]);
  const mk = markers(src);
  const sites = sitesIn(r, src);
  assert.deepEqual([sites.get(mk.get('PARENT-LEAK')!)?.bytes, sites.get(mk.get('PARENT-LEAK')!)?.allocations], [333, 3], summary(r, src).join('; '));
  assert.equal(sites.get(mk.get('FORK-CHILD-LEAK')!), undefined, 'the forked child is not traced');
  assert.equal(sites.get(mk.get('EXEC-CHILD-LEAK')!), undefined, 'the exec child is not traced');
  assert.match(stderr, /exec child LD_PRELOAD=\[\]/, 'the exec child must not inherit LD_PRELOAD');
  assert.match(stderr, /parent done/);
});

test('fork while threads allocate: no hang, children untraced, exact report', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  const exe = debugBuild('c/leakforkthreads.c', 'leakforkthreads', ['-pthread']);
  const src = fx('c/leakforkthreads.c');
  const { r, stderr } = memleak(['--', exe]);
  assert.match(stderr, /forked 40/);
  const sites = sitesIn(r, src);
  const leak = sites.get(markers(src).get('FORK-THREADS-LEAK')!);
  assert.deepEqual([leak?.bytes, leak?.allocations], [5 * 555, 5]);
  assert.equal(sites.size, 1, summary(r, src).join('; '));
});

test('posix_memalign, aligned_alloc, memalign, valloc, reallocarray, and an allocation before main: recorded, freed ones gone', { timeout: 120000 }, (t) => {
  if (skip(t, true)) return;
  const exe = debugBuild('c/leakalign.c', 'leakalign');
  const src = fx('c/leakalign.c');
  const pre = memleak(['--', exe]).r;
  const mk = markers(src);
  const sites = sitesIn(pre, src);
  const want: [string, number][] = [
    ['LEAK-POSIX-MEMALIGN', 1000],
    ['LEAK-ALIGNED-ALLOC', 2048],
    ['LEAK-MEMALIGN', 3000],
    ['LEAK-VALLOC', 5000],
    ['LEAK-REALLOCARRAY', 700],
    ['LEAK-BEFORE-MAIN', 4242],
  ];
  for (const [name, bytes] of want) assert.deepEqual([sites.get(mk.get(name)!)?.bytes, sites.get(mk.get(name)!)?.allocations], [bytes, 1], name);
  assert.equal(sites.size, want.length, summary(pre, src).join('; '));
  const up = memleak(['--mode', 'uprobe', '--', exe]).r;
  sameAsUprobe(pre, up, src);
});

test('dlopen: a leak in a library loaded at run time is placed on its source line', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  const so = cc(fx('c/leaklib.c'), 'libleaklib.so', ['-g', '-O0', '-shared', '-fPIC']);
  const exe = debugBuild('c/leakdlopen.c', 'leakdlopen', ['-ldl']);
  const { r } = memleak(['--', exe, so]);
  const src = fx('c/leaklib.c');
  const site = sitesIn(r, src).get(markers(src).get('DLOPEN-LEAK')!);
  assert.deepEqual([site?.bytes, site?.allocations], [4 * 4321, 4]);
  assert.equal(site!.frames[0].function, 'leaklib_leak');
  assert.equal(site!.frames[1]?.function, 'main');
});

for (const unwinder of ['libunwind', 'libgcc']) {
  test(`-O2 -fomit-frame-pointer: the leak's caller chain reaches main (${unwinder})`, { timeout: 60000 }, (t) => {
    if (skip(t)) return;
    const exe = cc(fx('c/leakdeep.c'), 'leakdeep', ['-g', '-O2', '-fomit-frame-pointer']);
    const src = fx('c/leakdeep.c');
    const { r, stderr } = memleak(['--verbose', '--', exe], unwinder === 'libgcc' ? { EBPF_STUDIO_PRELOAD_UNWINDER: 'libgcc' } : undefined);
    assert.match(stderr, new RegExp(`unwinder ${unwinder}`));
    const site = sitesIn(r, src).get(markers(src).get('DEEP-LEAK')!);
    assert.ok(site, summary(r, src).join('; '));
    assert.equal(site.allocations, 4);
    assert.equal(site.bytes, 64 * 4 + 0 + 1 + 2 + 3);
    assert.deepEqual(site.frames.slice(0, 4).map((f) => f.function), ['deep_leak', 'deep_middle', 'deep_outer', 'main']);
  });
}

test('a static program cannot be preloaded: falls back to uprobes, says why, same leaks', { timeout: 60000 }, (t) => {
  if (skip(t, true)) return;
  if (!fs.existsSync('/usr/lib/x86_64-linux-gnu/libc.a') && !fs.existsSync('/usr/lib/aarch64-linux-gnu/libc.a')) return t.skip('no static libc (apt-get install libc6-dev)');
  const exe = cc(fx('c/leaky.c'), 'leaky-static', ['-g', '-O0', '-fno-omit-frame-pointer', '-static']);
  const { r, stderr } = memleak(['--mode', 'preload', '--', exe]);
  assert.match(stderr, /statically linked: there is no dynamic loader to preload the leak tracer into it.*tracing with uprobes instead/);
  assert.equal(r.mode, 'uprobe');
  const src = fx('c/leaky.c');
  const mk = markers(src);
  const sites = sitesIn(r, src);
  assert.deepEqual([sites.get(mk.get('LEAK-MALLOC')!)?.bytes, sites.get(mk.get('LEAK-CALLOC')!)?.bytes, sites.get(mk.get('LEAK-REALLOC')!)?.bytes], [10000, 10000, 3000]);
});

test('a setuid program falls back to uprobes with the reason', { timeout: 60000 }, (t) => {
  if (skip(t, true)) return;
  const exe = path.join(work, 'leaky-setuid');
  fs.copyFileSync(debugBuild('c/leaky.c', 'leaky'), exe);
  fs.chmodSync(exe, 0o4755);
  const { r, stderr } = memleak(['--', exe]);
  assert.match(stderr, /is setuid: the dynamic loader ignores LD_PRELOAD for setuid programs.*tracing with uprobes instead/);
  assert.equal(r.mode, 'uprobe');
  assert.equal(sitesIn(r, fx('c/leaky.c')).size, 3);
});

test('--allocator-lib exporting malloc: preload mode forwards to that library and sees its leaks', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  const so = cc(fx('c/myalloc.c'), 'libmyalloc.so', ['-g', '-O0', '-shared', '-fPIC']);
  const exe = debugBuild('c/leakmyalloc.c', 'leakmyalloc', ['-L', work, '-lmyalloc', `-Wl,-rpath,${work}`]);
  const { r, stderr } = memleak(['--allocator-lib', so, '--', exe]);
  assert.equal(r.mode, 'preload');
  const src = fx('c/leakmyalloc.c');
  const sites = sitesIn(r, src);
  const leak = sites.get(markers(src).get('MYALLOC-LEAK')!);
  assert.deepEqual([leak?.bytes, leak?.allocations], [6 * 777, 6]);
  assert.equal(sites.size, 1, summary(r, src).join('; '));
  const served = /myalloc served (\d+)/.exec(stderr);
  assert.ok(served && Number(served[1]) >= 7, `the library's malloc was not used: ${stderr}`);
});

test('without root: preload mode traces a user\'s own program; a static one says why it needs root (exit 3)', { timeout: 60000 }, (t) => {
  if (skip(t)) return;
  if (process.geteuid?.() !== 0) return t.skip('switching to user nobody needs root');
  if (spawnSync('setpriv', ['--version']).status !== 0) return t.skip('setpriv is missing (util-linux)');
  // a folder user nobody can enter, with copies it can run
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-nobody-'));
  try {
    fs.chmodSync(dir, 0o755);
    const exe = path.join(dir, 'leaky');
    fs.copyFileSync(debugBuild('c/leaky.c', 'leaky'), exe);
    fs.chmodSync(exe, 0o755);
    const asNobody = (args: string[]) =>
      spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, cliJs, 'memleak', ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    const run = asNobody(['--json', '--top', '0', '--', exe]);
    if (run.status !== 0 && /EACCES|permission denied/i.test(run.stderr)) return t.skip(`user nobody cannot read the build (${run.stderr.trim().slice(0, 200)})`);
    assert.equal(run.status, 0, run.stderr);
    const r = JSON.parse(run.stdout) as MemleakResult;
    assert.equal(r.mode, 'preload');
    assert.equal(sitesIn(r, fx('c/leaky.c')).size, 3);
    if (fs.existsSync('/usr/lib/x86_64-linux-gnu/libc.a') || fs.existsSync('/usr/lib/aarch64-linux-gnu/libc.a')) {
      const stat = path.join(dir, 'leaky-static');
      fs.copyFileSync(cc(fx('c/leaky.c'), 'leaky-static', ['-g', '-O0', '-fno-omit-frame-pointer', '-static']), stat);
      fs.chmodSync(stat, 0o755);
      const st = asNobody(['--json', '--', stat]);
      assert.equal(st.status, 3, st.stderr);
      assert.match(st.stderr, /statically linked.*tracing with uprobes instead/);
      assert.match(st.stderr, /need root/);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('through the helper, as the editor runs it: preload by default, the program as another user, report folder removed', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  if (process.geteuid?.() !== 0) return t.skip('the helper runs the program as user nobody, which needs root');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-helper-'));
  const child = spawn(process.execPath, [helperJs], { stdio: ['pipe', 'pipe', 'pipe'] });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  const shmBefore = fs.existsSync('/dev/shm') ? fs.readdirSync('/dev/shm').filter((f) => f.startsWith('ebpf-studio-leak-')) : [];
  try {
    fs.chmodSync(dir, 0o755);
    const exe = path.join(dir, 'leaky');
    fs.copyFileSync(debugBuild('c/leaky.c', 'leaky'), exe);
    fs.chmodSync(exe, 0o755);
    const ended = new Promise<proto.SessionEndedParams>((resolve) => conn.onNotification(proto.sessionEnded, resolve));
    await conn.sendRequest(proto.sessionStart, {
      tracer: 'memleak',
      options: { launch: { command: [exe], cwd: dir, output: 'capture', uid: 65534, gid: 65534 }, kernel: false, minAgeMs: 0, sampleRate: 1, minSize: 0, maxSize: 0, top: 0, intervalS: 1 },
    });
    const end = await ended;
    const r = end.result as MemleakResult;
    assert.equal(end.reason, 'target-exited', JSON.stringify(end));
    assert.equal(r.mode, 'preload');
    assert.equal(sitesIn(r, fx('c/leaky.c')).size, 3);
    const shmAfter = fs.existsSync('/dev/shm') ? fs.readdirSync('/dev/shm').filter((f) => f.startsWith('ebpf-studio-leak-')) : [];
    assert.deepEqual(shmAfter.filter((f) => !shmBefore.includes(f)), [], 'the report folder is removed');
  } finally {
    conn.dispose();
    child.stdin.end();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bad input: --mode preload without a command, --mode inject with one, and an unknown mode, exit 2 with the reason', (t) => {
  if (skip(t)) return;
  const a = runCli(['memleak', '--mode', 'preload', '--pid', String(process.pid)]);
  assert.equal(a.code, 2);
  assert.match(a.stderr, /--mode preload traces a command it starts/);
  const b = runCli(['memleak', '--mode', 'ptrace', '--', '/bin/true']);
  assert.equal(b.code, 2);
  assert.match(b.stderr, /--mode must be preload, inject, uprobe or auto/);
  const c = runCli(['memleak', '--mode', 'inject', '--', '/bin/true']);
  assert.equal(c.code, 2);
  assert.match(c.stderr, /--mode inject attaches to a running process \(--pid P\)/);
});

test.after(() => fs.rmSync(work, { recursive: true, force: true }));
