// Sampled leak profiles (memleak --pid P --sample-bytes N): a live fixture leaks 100 MB over 20
// sites (test/fixtures/c/leakmany.c, which prints each site's exact bytes and count); the
// estimated bytes and allocations per site must be within ±10 % of the exact figures, carry a
// standard error, and the document must say it is sampled. Exact mode (--sample-bytes 0) on the
// same program reports the exact figures. Needs root (uprobes).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { cliJs, distDir, kernelSkipReason, repoRoot, runCli, startCli } from '../helpers';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memleak-sampled-test-'));

function skip(t: TestContext): boolean {
  const why =
    kernelSkipReason() ??
    (!fs.existsSync(cliJs) || !fs.existsSync(path.join(distDir, 'bpf/memleak.bpf.o')) ? 'not built: run node scripts/build.mjs' : undefined) ??
    (spawnSync('gcc', ['--version']).status !== 0 ? 'gcc is missing (apt-get install build-essential)' : undefined);
  if (why) t.skip(why);
  return Boolean(why);
}

function fixture(): string {
  const out = path.join(work, 'leakmany');
  if (!fs.existsSync(out)) {
    const r = spawnSync('gcc', ['-g', '-O2', '-fno-omit-frame-pointer', '-o', out, path.join(repoRoot, 'test/fixtures/c/leakmany.c')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
  return out;
}

async function until(what: string, cond: () => boolean, ms = 60000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Attaches to the live fixture, lets it leak, and takes the report while it still runs. */
async function traceFixture(extra: string[]): Promise<{ r: MemleakResult; exact: Map<string, { bytes: number; count: number }> }> {
  const target = spawn(fixture(), [], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  target.stdout!.on('data', (d) => (out += d));
  try {
    await until('the fixture to start', () => out.includes('ready'));
    const cli = startCli(['memleak', '--pid', String(target.pid), '--mode', 'uprobe', '--json', '--top', '0', '--verbose', '--interval', '30', ...extra]);
    await until('the probes to attach', () => cli.stderr().includes('attached in') || cli.child.exitCode !== null);
    assert.equal(cli.child.exitCode, null, cli.stderr());
    target.stdin!.write('go\n');
    await until('the fixture to leak', () => out.includes('leaked'), 120000);
    cli.child.kill('SIGINT');
    const done = await cli.done;
    assert.equal(done.code, 0, done.stderr);
    const exact = new Map<string, { bytes: number; count: number }>();
    for (const m of out.matchAll(/site (\d+) (\d+) (\d+)/g)) exact.set(`site_${m[1]}`, { bytes: Number(m[2]), count: Number(m[3]) });
    assert.equal(exact.size, 20);
    return { r: JSON.parse(done.stdout) as MemleakResult, exact };
  } finally {
    target.kill('SIGKILL');
  }
}

/** Per site function (frames[0]), summed over its stacks. */
function bySite(r: MemleakResult) {
  const m = new Map<string, { bytes: number; allocations: number; se: number }>();
  for (const s of r.stacks) {
    const fn = s.frames[0]?.function;
    if (!fn || !/^site_\d+$/.test(fn)) continue;
    const had = m.get(fn) ?? { bytes: 0, allocations: 0, se: 0 };
    m.set(fn, { bytes: had.bytes + s.bytes, allocations: had.allocations + s.allocations, se: Math.hypot(had.se, s.bytesStdErr ?? 0) });
  }
  return m;
}

test('sampled (--sample-bytes 1024): estimated bytes and counts per site within ±10 % of exact, with standard errors', { timeout: 240000 }, async (t) => {
  if (skip(t)) return;
  const { r, exact } = await traceFixture(['--sample-bytes', '1024']);
  assert.equal(r.sampleBytes, 1024, 'the document says it is sampled');
  const sites = bySite(r);
  assert.equal(sites.size, 20);
  const lines: string[] = [];
  for (const [fn, want] of exact) {
    const got = sites.get(fn)!;
    const err = (got.bytes - want.bytes) / want.bytes;
    lines.push(`${fn} ${(err * 100).toFixed(1)}% (±${((got.se / want.bytes) * 100).toFixed(1)}% s.e.)`);
    assert.ok(Math.abs(err) <= 0.1, `${fn}: estimated ${got.bytes} B, exact ${want.bytes} B (${(err * 100).toFixed(1)} %)`);
    assert.ok(Math.abs(got.allocations - want.count) <= 0.1 * want.count, `${fn}: estimated ${got.allocations} allocations, exact ${want.count}`);
    assert.ok(got.se > 0 && got.se < 0.1 * want.bytes, `${fn}: standard error ${got.se}`);
  }
  for (const s of r.stacks) assert.equal(typeof s.bytesStdErr, 'number');
  t.diagnostic(lines.join('; '));
});

test('exact (--sample-bytes 0) on the same program: the exact figures, no error bars', { timeout: 240000 }, async (t) => {
  if (skip(t)) return;
  const { r, exact } = await traceFixture(['--sample-bytes', '0']);
  assert.equal(r.sampleBytes, undefined);
  const sites = bySite(r);
  for (const [fn, want] of exact) assert.deepEqual([sites.get(fn)?.bytes, sites.get(fn)?.allocations], [want.bytes, want.count], fn);
  for (const s of r.stacks) assert.equal(s.bytesStdErr, undefined);
});

test('preload mode samples the same way: --sample-bytes 1024 on a launched program, ±10 % per site', { timeout: 120000 }, (t) => {
  if (skip(t)) return;
  const run = runCli(['memleak', '--json', '--top', '0', '--sample-bytes', '1024', '--', fixture(), '--now'], { timeoutMs: 90_000 });
  assert.equal(run.code, 0, run.stderr);
  const r = JSON.parse(run.stdout) as MemleakResult;
  assert.equal(r.mode, 'preload');
  assert.equal(r.sampleBytes, 1024);
  const sites = bySite(r);
  let n = 0;
  for (const m of run.stderr.matchAll(/site (\d+) (\d+) (\d+)/g)) {
    const got = sites.get(`site_${m[1]}`);
    const want = Number(m[2]);
    assert.ok(got && Math.abs(got.bytes - want) <= 0.1 * want, `site_${m[1]}: estimated ${got?.bytes} B, exact ${want} B`);
    assert.ok(got.se > 0);
    n++;
  }
  assert.equal(n, 20);
});

test.after(() => fs.rmSync(work, { recursive: true, force: true }));
