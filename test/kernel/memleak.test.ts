// memleak against real leaky programs (test/fixtures/c/leaky.c, cpp/leaky.cpp), built here
// with -g -O0 -fno-omit-frame-pointer: exact bytes, counts and allocating file:line for each
// leak, the freed paths absent, in launch mode (--mode uprobe; preload mode: memleakPreload.test.ts)
// and attach mode. Needs root (uprobes) and a
// built tree; otherwise each test skips with the reason.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MemleakResult, MemleakStack } from '../../extension/protocol/memleak';
import { markerLines } from '../helpers';

const root = process.env.EBPF_STUDIO_ROOT ?? path.resolve(__dirname, '..', '..');
const cli = path.join(root, 'dist', 'cli.js');
const cSrc = path.join(root, 'test/fixtures/c/leaky.c');
const cxxSrc = path.join(root, 'test/fixtures/cpp/leaky.cpp');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-test-'));

function missing(): string | undefined {
  if (process.geteuid?.() !== 0) return 'memleak attaches uprobes, which need root (CAP_SYS_ADMIN)';
  if (!fs.existsSync(cli) || !fs.existsSync(path.join(root, 'dist/bpf/memleak.bpf.o'))) return 'not built: run node scripts/build.mjs';
  if (spawnSync('gcc', ['--version']).status !== 0 || spawnSync('g++', ['--version']).status !== 0) return 'gcc/g++ are missing (apt-get install build-essential)';
  return undefined;
}

function skip(t: TestContext): boolean {
  const r = missing();
  if (r) t.skip(r);
  return Boolean(r);
}

const built = new Map<string, string>();
function build(src: string): string {
  const hit = built.get(src);
  if (hit) return hit;
  const out = path.join(work, path.basename(src).replace(/\.\w+$/, src.endsWith('.cpp') ? 'pp' : ''));
  const cc = src.endsWith('.cpp') ? 'g++' : 'gcc';
  const r = spawnSync(cc, ['-g', '-O0', '-fno-omit-frame-pointer', '-o', out, src], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cc} failed: ${r.stderr}`);
  built.set(src, out);
  return out;
}

/** Line numbers of the markers ("LEAK-MALLOC", ...) in a fixture source. */
const markers = (src: string) => markerLines(src, /(?:\/\*|\/\/) ((?:LEAK|FREED|REALLOC)[-A-Z0-9]*)/);

function sitesIn(r: MemleakResult, src: string): Map<number, MemleakStack> {
  const out = new Map<number, MemleakStack>();
  for (const s of r.stacks) {
    const f = s.frames[0];
    if (f?.file && path.basename(f.file) === path.basename(src) && f.line) {
      assert.ok(!out.has(f.line), `two stacks start at line ${f.line}`);
      out.set(f.line, s);
    }
  }
  return out;
}

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  done: Promise<number | null>;
}
function runCli(args: string[]): Run {
  const child = spawn(process.execPath, [cli, 'memleak', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const run: Run = { child, stdout: '', stderr: '', done: Promise.resolve(null) };
  child.stdout!.on('data', (d) => (run.stdout += d));
  child.stderr!.on('data', (d) => (run.stderr += d));
  run.done = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return run;
}

async function waitFor(what: string, cond: () => boolean, ms = 15000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function expectC(r: MemleakResult): void {
  const mk = markers(cSrc);
  const sites = sitesIn(r, cSrc);
  const at = (name: string) => sites.get(mk.get(name)!);
  assert.deepEqual([at('LEAK-MALLOC')?.bytes, at('LEAK-MALLOC')?.allocations], [10000, 10], 'malloc leak');
  assert.deepEqual([at('LEAK-CALLOC')?.bytes, at('LEAK-CALLOC')?.allocations], [10000, 5], 'calloc leak');
  assert.deepEqual([at('LEAK-REALLOC')?.bytes, at('LEAK-REALLOC')?.allocations], [3000, 1], 'realloc leak');
  for (const gone of ['FREED', 'FREED-CALLOC', 'FREED-REALLOC', 'FREED-REALLOC-2', 'REALLOC-FIRST', 'REALLOC-SECOND']) {
    assert.equal(at(gone), undefined, `${gone} (line ${mk.get(gone)}) must not be outstanding`);
  }
  assert.equal(sites.size, 3, `exactly three leak sites in leaky.c, got lines ${[...sites.keys()].join(', ')}`);
  assert.equal(r.dropped, 0);
  // the caller frame is there too: frame pointers walk past the allocating function
  assert.equal(at('LEAK-MALLOC')!.frames[1]?.function, 'main');
}

function expectCxx(r: MemleakResult): void {
  const mk = markers(cxxSrc);
  const sites = sitesIn(r, cxxSrc);
  const at = (name: string) => sites.get(mk.get(name)!);
  assert.deepEqual([at('LEAK-NEW')?.bytes, at('LEAK-NEW')?.allocations], [7 * 248, 7], 'new leak');
  assert.deepEqual([at('LEAK-NEW-ARRAY')?.bytes, at('LEAK-NEW-ARRAY')?.allocations], [3 * 4000, 3], 'new[] leak');
  assert.equal(at('FREED-NEW'), undefined);
  assert.equal(at('FREED-NEW-ARRAY'), undefined);
  assert.equal(sites.size, 2, `exactly two leak sites in leaky.cpp, got lines ${[...sites.keys()].join(', ')}`);
}

test('launch mode: C leaks through malloc, calloc and realloc, exact', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const run = runCli(['--json', '--top', '100', '--mode', 'uprobe', '--', build(cSrc)]);
  assert.equal(await run.done, 0, run.stderr);
  const r = JSON.parse(run.stdout) as MemleakResult;
  assert.equal(r.tracer, 'memleak');
  expectC(r);
});

test('launch mode: a full allocation table counts what it could not record (--max-outstanding)', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  // leaky.c ends with 16 blocks never freed. Each was one insert into a table with room for 4:
  // at most 4 can be recorded (a recorded leak is never removed), so at least 12 were dropped.
  const run = runCli(['--json', '--top', '100', '--mode', 'uprobe', '--max-outstanding', '4', '--', build(cSrc)]);
  assert.equal(await run.done, 0, run.stderr);
  const r = JSON.parse(run.stdout) as MemleakResult;
  const recorded = r.stacks.reduce((n, s) => n + s.allocations, 0);
  assert.ok(recorded <= 4, `${recorded} outstanding allocations reported from a table of 4`);
  assert.ok(r.dropped >= 12, `dropped ${r.dropped}, expected at least 12`);
  assert.match(run.stderr, new RegExp(`${r.dropped} events dropped \\(a kernel map was full\\).*--max-outstanding`));
  t.diagnostic(`${recorded} recorded, ${r.dropped} dropped`);
});

test('launch mode: C++ leaks through new and new[], exact', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const run = runCli(['--json', '--top', '100', '--mode', 'uprobe', '--', build(cxxSrc)]);
  assert.equal(await run.done, 0, run.stderr);
  expectCxx(JSON.parse(run.stdout) as MemleakResult);
});

/** Starts a fixture with --wait, attaches, lets it allocate; `end` decides how the session ends. */
async function attachRun(src: string, end: 'target-exits' | 'sigint', extra: string[] = [], mode: 'uprobe' | 'inject' = 'uprobe'): Promise<MemleakResult> {
  const target = spawn(build(src), ['--wait'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  target.stdout!.on('data', (d) => (out += d));
  try {
    await waitFor('the fixture to start', () => out.includes('ready'));
    const run = runCli(['--pid', String(target.pid), '--mode', mode, '--json', '--top', '100', '--verbose', '--interval', '0.5', ...extra]);
    await waitFor('the probes to attach', () => run.stderr.includes(mode === 'uprobe' ? 'attached in' : 'memleak: injected ') || run.child.exitCode !== null);
    assert.equal(run.child.exitCode, null, run.stderr);
    target.stdin!.write('go\n');
    await waitFor('the fixture to leak', () => out.includes('leaked'));
    if (end === 'target-exits') target.stdin!.end('go\n');
    else run.child.kill('SIGINT');
    assert.equal(await run.done, 0, run.stderr);
    return JSON.parse(run.stdout) as MemleakResult;
  } finally {
    target.kill('SIGKILL');
  }
}

test('attach mode: C fixture, report when it exits', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  expectC(await attachRun(cSrc, 'target-exits'));
});

test('attach mode: C++ fixture, report on Ctrl-C while it lives', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const r = await attachRun(cxxSrc, 'sigint');
  expectCxx(r);
  for (const s of sitesIn(r, cxxSrc).values()) assert.ok(s.oldestAgeMs >= 0 && s.oldestAgeMs < 30000);
});

test('attach by injection (--mode inject): C fixture, report when it exits — the same sites, bytes and counts', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const r = await attachRun(cSrc, 'target-exits', [], 'inject');
  assert.equal(r.mode, 'inject');
  expectC(r);
});

test('attach by injection: C++ fixture (operator new and new[]), report on Ctrl-C while it lives', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const r = await attachRun(cxxSrc, 'sigint', [], 'inject');
  assert.equal(r.mode, 'inject');
  expectCxx(r);
});

test('attach mode: --min-age-ms hides allocations younger than the threshold', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const r = await attachRun(cSrc, 'sigint', ['--min-age-ms', '600000']);
  assert.equal(sitesIn(r, cSrc).size, 0);
});

test('bad input: unknown pid and missing target give exit code 2 with the reason', { timeout: 30000 }, async (t) => {
  if (skip(t)) return;
  const noTarget = runCli(['--json']);
  assert.equal(await noTarget.done, 2);
  assert.match(noTarget.stderr, /give a target/);
  const badPid = runCli(['--pid', '4194000', '--json']);
  assert.equal(await badPid.done, 2);
  assert.match(badPid.stderr, /no process with pid/);
  const badCmd = runCli(['--json', '--', '/nonexistent/prog']);
  assert.equal(await badCmd.done, 2);
  assert.match(badCmd.stderr, /no such file/);
});

test.after(() => fs.rmSync(work, { recursive: true, force: true }));
