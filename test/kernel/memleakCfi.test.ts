// memleak's uprobe mode with the stack walked in the kernel by the target's unwind tables
// (--unwind cfi), against a program built the ordinary way (gcc -O2 -g: no frame pointers) that
// leaks a known number of bytes from two call paths (test/fixtures/c/leakpaths.c). In the same
// run: --unwind dwarf (a stack copy unwound in user space) must give the same stacks, and
// --unwind fp (the kernel's frame-pointer walk) is shown to lose the callers. The program times
// malloc+free pairs itself, so each mode's cost per allocation is reported beside the others.
// Needs root (uprobes), gcc and a built tree; otherwise each test skips with the reason.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MemleakFrame, MemleakResult, MemleakStack } from '../../extension/protocol/memleak';
import { markerLines } from '../helpers';

const root = process.env.EBPF_STUDIO_ROOT ?? path.resolve(__dirname, '..', '..');
const cli = path.join(root, 'dist', 'cli.js');
const src = path.join(root, 'test/fixtures/c/leakpaths.c');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-cfi-test-'));
const exe = path.join(work, 'leakpaths');
const mk = markerLines(src, /\/\* ((?:ALLOC|CALL)-[A-Z]+) \*\//);

function missing(): string | undefined {
  if (process.geteuid?.() !== 0) return 'memleak attaches uprobes, which need root (CAP_SYS_ADMIN)';
  if (!fs.existsSync(cli) || !fs.existsSync(path.join(root, 'dist/bpf/memleak.bpf.o'))) return 'not built: run node scripts/build.mjs';
  if (spawnSync('gcc', ['--version']).status !== 0) return 'gcc is missing (apt-get install build-essential)';
  const [maj, min] = os.release().split('.').map(Number);
  if (maj < 5 || (maj === 5 && min < 17)) return `kernel ${os.release()} has no bpf_loop (5.17), which the table walk needs`;
  return undefined;
}

function skip(t: TestContext): boolean {
  const r = missing();
  if (r) t.skip(r);
  return Boolean(r);
}

let built = false;
function build(): string {
  if (!built) {
    // the ordinary build: -O2 omits frame pointers on x86-64
    const r = spawnSync('gcc', ['-O2', '-g', '-o', exe, src], { encoding: 'utf8' });
    assert.equal(r.status, 0, `gcc failed: ${r.stderr}`);
    built = true;
  }
  return exe;
}

async function waitFor(what: string, cond: () => boolean, ms = 20000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Leaked {
  b: number;
  c: number;
  churnNs: number;
}

interface ModeRun {
  leaked: Leaked;
  result?: MemleakResult;
  stderr: string;
}

/** Runs the fixture, under `memleak --unwind mode` (attach mode) unless mode is undefined; the report is taken on Ctrl-C while it lives. */
async function runFixture(mode: 'cfi' | 'dwarf' | 'fp' | 'auto' | undefined): Promise<ModeRun> {
  const target = spawn(build(), [], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  target.stdout!.on('data', (d) => (out += d));
  let tracer: ReturnType<typeof spawn> | undefined;
  try {
    await waitFor('the fixture to start', () => out.includes('ready'));
    let stdout = '';
    let stderr = '';
    let done: Promise<number | null> = Promise.resolve(0);
    if (mode) {
      tracer = spawn(process.execPath, [cli, 'memleak', '--pid', String(target.pid), '--unwind', mode, '--mode', 'uprobe', '--json', '--top', '100', '--verbose', '--interval', '0.5'], { stdio: ['ignore', 'pipe', 'pipe'] });
      tracer.stdout!.on('data', (d) => (stdout += d));
      tracer.stderr!.on('data', (d) => (stderr += d));
      const t = tracer;
      done = new Promise((resolve) => t.on('exit', (code) => resolve(code)));
      await waitFor('the probes to attach', () => stderr.includes('attached in') || t.exitCode !== null);
      assert.equal(t.exitCode, null, stderr);
    }
    target.stdin!.write('go\n');
    await waitFor('the fixture to leak', () => /leaked .*\n/.test(out));
    const m = /leaked b=(\d+) c=(\d+) churn_ns=(\d+)/.exec(out)!;
    const leaked = { b: Number(m[1]), c: Number(m[2]), churnNs: Number(m[3]) };
    if (!tracer) return { leaked, stderr };
    // dwarf copies are unwound as they arrive: a report interval or two for the last ones
    await new Promise((r) => setTimeout(r, 1500));
    tracer.kill('SIGINT');
    assert.equal(await done, 0, stderr);
    return { leaked, result: JSON.parse(stdout) as MemleakResult, stderr };
  } finally {
    tracer?.kill('SIGKILL');
    target.kill('SIGKILL');
  }
}

const fn = (f: MemleakFrame | undefined) => f?.function ?? f?.address ?? '?';
const describe = (s: MemleakStack) => `${s.bytes} B: ${s.frames.map((f) => `${fn(f)}${f.line ? `:${f.line}` : ''}`).join(' < ')}`;

/** The stacks whose leaf frame is `leaf`. */
const byLeaf = (r: MemleakResult, leaf: string) => r.stacks.filter((s) => fn(s.frames[0]) === leaf);

/** The leak of one path is one stack, of the program's bytes, that reaches main through the right functions and lines. */
function expectPath(r: MemleakResult, leaf: string, bytes: number, lines: [number, number, number], label: string): void {
  const stacks = byLeaf(r, leaf);
  assert.equal(stacks.length, 1, `${label}: one stack from ${leaf}, got\n${r.stacks.map(describe).join('\n')}`);
  const s = stacks[0];
  assert.equal(s.bytes, bytes, `${label}: ${leaf}'s stack holds the bytes the program leaked there`);
  const top = s.frames.slice(0, 3).map((f) => [fn(f), f.file ? path.basename(f.file) : null, f.line ?? null]);
  assert.deepEqual(
    top,
    [
      [leaf, 'leakpaths.c', lines[0]],
      ['leak_a', 'leakpaths.c', lines[1]],
      ['main', 'leakpaths.c', lines[2]],
    ],
    `${label}: ${describe(s)}`,
  );
}

test('memleak --unwind cfi: a -O2 program without frame pointers, its two leak paths exact and whole to main (dwarf and auto the same, fp cut short)', { timeout: 180000 }, async (t) => {
  if (skip(t)) return;
  // one at a time: each run's malloc+free timing is the cost of that mode alone
  const untraced = await runFixture(undefined);
  const fp = await runFixture('fp');
  const dwarf = await runFixture('dwarf');
  const cfi = await runFixture('cfi');
  // auto on a running process without frame pointers: the same walk
  const auto = await runFixture('auto');
  const a = mk.get('CALL-A')!;
  for (const [label, run] of [
    ['cfi', cfi],
    ['dwarf', dwarf],
    ['auto', auto],
  ] as const) {
    const r = run.result!;
    assert.equal(r.mode, 'uprobe');
    assert.equal(r.dropped, 0, `${label}: nothing dropped`);
    expectPath(r, 'leak_b', run.leaked.b, [mk.get('ALLOC-B')!, mk.get('CALL-B')!, a], label);
    expectPath(r, 'leak_c', run.leaked.c, [mk.get('ALLOC-C')!, mk.get('CALL-C')!, a], label);
  }
  assert.equal(byLeaf(cfi.result!, 'leak_b')[0].allocations, 750);
  assert.equal(byLeaf(cfi.result!, 'leak_c')[0].allocations, 250);
  // the stacks were walked in the kernel by tables, none by the frame-pointer fallback
  const summary = /cfi: (\d+) files, (\d+) rows .*?; (\d+) walks, (\d+) ns a walk, \d+ frames \((\d+) by frame pointers\), (\d+) lost/.exec(cfi.stderr);
  assert.ok(summary, `cfi summary in the log:\n${cfi.stderr}`);
  assert.ok(Number(summary[3]) >= 1000, `${summary[3]} walks for 1000 leaks and the churn`);
  assert.equal(Number(summary[6]), 0, 'no walked stack lost');
  assert.match(auto.stderr, /cfi: \d+ files, \d+ rows/, 'auto walked the tables too');
  // frame pointers: the same bytes from the same leaves, but no stack gets from the leaf through leak_a to main
  const fpr = fp.result!;
  const sum = (leaf: string) => byLeaf(fpr, leaf).reduce((n, s) => n + s.bytes, 0);
  assert.deepEqual([sum('leak_b'), sum('leak_c')], [fp.leaked.b, fp.leaked.c], 'fp: bytes by leaf');
  for (const s of fpr.stacks) {
    const names = s.frames.map(fn);
    assert.ok(!(names.includes('leak_a') && names.includes('main')), `fp walked a -O2 program's frames to main: ${describe(s)}`);
  }
  t.diagnostic(`fp stacks: ${fpr.stacks.map(describe).join(' | ')}`);
  t.diagnostic(`cfi: ${summary[1]} files, ${summary[2]} rows, ${summary[3]} walks at ${summary[4]} ns a walk (bpf_ktime around the walk)`);
  t.diagnostic(`malloc+free pair in the target, same run (load ${os.loadavg()[0].toFixed(1)}): untraced ${untraced.leaked.churnNs} ns, fp ${fp.leaked.churnNs} ns, dwarf ${dwarf.leaked.churnNs} ns, cfi ${cfi.leaked.churnNs} ns`);
});

test('memleak --unwind cfi: refused with the reason where it cannot walk (a launched command, --kernel, --mode inject)', { timeout: 60000 }, async (t) => {
  if (skip(t)) return;
  const cases: [string[], RegExp][] = [
    [['--unwind', 'cfi', '--', '/bin/true'], /--unwind cfi needs --pid/],
    [['--unwind', 'cfi', '--kernel'], /kernel allocations .* have kernel stacks/],
    [['--unwind', 'cfi', '--pid', String(process.pid), '--mode', 'inject'], /cannot be used with --mode inject/],
    [['--unwind', 'cfi', '--pid', String(process.pid), '--stack-copy-kb', '4'], /--stack-copy-kb applies to/],
  ];
  for (const [args, re] of cases) {
    const r = spawnSync(process.execPath, [cli, 'memleak', ...args, '--json'], { encoding: 'utf8', timeout: 30000 });
    assert.equal(r.status, 2, `${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});
