// Our pprof export read by the reference reader: a C program with a known CPU split is profiled
// with `profile --pprof`, and `go tool pprof -top` (Debian's golang-go) must name the same hot
// functions with the same flat shares (within 1 point) as our own result of the same session.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ProfileResult } from '../../extension/protocol/profile';
import { fromPprof } from '../../extension/model/pprof';
import { loadProfileBytes } from '../../extension/sys/profileFile';
import { frameTotals } from '../../extension/model/flamegraph/model';
import { kernelSkipReason, repoRoot, runCli, sleep } from '../helpers';

const skip = kernelSkipReason();
let work = '';
const children: ChildProcess[] = [];

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'pprof-test-'));
});
after(() => {
  for (const c of children) c.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function goSkipReason(): string | undefined {
  const r = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (r.error) return `go is not installed (apt-get install golang-go, or scripts/install-deps.sh --test): ${r.error.message}`;
  return undefined;
}

/** flat% by function name from `go tool pprof -top` output. */
function parseTop(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\w*\s+([\d.]+)%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+?)\s*$/.exec(line);
    if (m) out.set(m[2], Number(m[1]));
  }
  return out;
}

describe('pprof export read by go tool pprof (kernel)', { skip }, () => {
  test('go tool pprof -top agrees with our top functions and flat shares', async (t) => {
    const noGo = goSkipReason();
    if (noGo) return t.skip(noGo);
    const bin = path.join(work, 'cpusplit');
    const cc = spawnSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/cpusplit.c'), '-o', bin], { encoding: 'utf8' });
    if (cc.error) return t.skip(`gcc is not installed: ${cc.error.message}`);
    assert.equal(cc.status, 0, cc.stderr);
    const child = spawn(bin, ['30'], { stdio: 'ignore' });
    children.push(child);
    await sleep(200);
    const file = path.join(work, 'cpu.pb.gz');
    const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '499', '--duration', '4', '--json', '--pprof', file], { timeoutMs: 40_000 });
    child.kill('SIGKILL');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`wrote \\d+ samples to ${file.replace(/[.]/g, '\\.')}`));
    const ours = JSON.parse(r.stdout) as ProfileResult;
    const total = ours.stacks.reduce((n, s) => n + s.count, 0);
    // Shares are compared on the same data, so even a busy machine's few samples must agree exactly.
    assert.ok(total >= 100, `only ${total} samples`);
    // Our flat (self) share per function: the leaf frame of each stack.
    const flat = new Map<string, number>();
    for (const s of ours.stacks) {
      const leaf = s.frames[0]?.function;
      if (leaf) flat.set(leaf, (flat.get(leaf) ?? 0) + s.count);
    }
    const oursTop = [...flat].map(([name, n]) => ({ name, pct: (100 * n) / total })).sort((a, b) => b.pct - a.pct);

    // The file is exactly the session: same samples when read back.
    const back = fromPprof(gunzipSync(fs.readFileSync(file)));
    assert.equal(back.samples, total);
    assert.equal(back.frequency, 499);

    const home = path.join(work, 'home');
    fs.mkdirSync(home, { recursive: true });
    const go = spawnSync('go', ['tool', 'pprof', '-top', '-nodecount=20', file], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: home, PPROF_TMPDIR: home } });
    assert.equal(go.status, 0, `go tool pprof failed: ${go.stderr}`);
    assert.match(go.stdout, /Type: cpu/);
    const theirs = parseTop(go.stdout);
    t.diagnostic(`ours: ${oursTop.slice(0, 4).map((x) => `${x.name} ${x.pct.toFixed(2)}%`).join(', ')}; go tool pprof: ${[...theirs].slice(0, 4).map(([n, p]) => `${n} ${p}%`).join(', ')}`);
    assert.ok(theirs.size > 0, `no rows in go tool pprof's output:\n${go.stdout}\n${go.stderr}`);
    // The two hot functions lead both lists, in the same order.
    assert.deepEqual([...theirs.keys()].slice(0, 2), oursTop.slice(0, 2).map((x) => x.name));
    assert.deepEqual(new Set(oursTop.slice(0, 2).map((x) => x.name)), new Set(['hot_a', 'hot_b']));
    // Every function both list has the same flat share within a point.
    for (const { name, pct } of oursTop.slice(0, 10)) {
      const g = theirs.get(name);
      if (g === undefined) continue;
      assert.ok(Math.abs(g - pct) <= 1, `${name}: go tool pprof says ${g}%, we say ${pct.toFixed(2)}%`);
    }
    // pprof sees the source lines and the binary's mapping with its build-id.
    const lines = spawnSync('go', ['tool', 'pprof', '-top', '-lines', '-nodecount=5', file], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: home, PPROF_TMPDIR: home } });
    assert.equal(lines.status, 0, lines.stderr);
    assert.match(lines.stdout, /hot_a .*cpusplit\.c:1[123]/);
    const raw = spawnSync('go', ['tool', 'pprof', '-raw', file], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: home, PPROF_TMPDIR: home } });
    assert.equal(raw.status, 0, raw.stderr);
    const buildId = spawnSync('readelf', ['-n', bin], { encoding: 'utf8' }).stdout.match(/Build ID: ([0-9a-f]+)/)?.[1];
    if (buildId) assert.match(raw.stdout, new RegExp(`${bin.replace(/[.]/g, '\\.')}\\s+${buildId}`), `the mapping of ${bin} carries build-id ${buildId}`);
  });

  test('profile-diff of two real profiles whose hot function changed: hot_a shrank, hot_b grew, by about 50 points', async (t) => {
    const bin = path.join(work, 'cpusplit-diff');
    const cc = spawnSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/cpusplit.c'), '-o', bin], { encoding: 'utf8' });
    if (cc.error) return t.skip(`gcc is not installed: ${cc.error.message}`);
    const files: string[] = [];
    for (const variant of ['a', 'b']) {
      const child = spawn(bin, ['30', variant], { stdio: 'ignore' });
      children.push(child);
      await sleep(200);
      const file = path.join(work, `cpusplit-${variant}.pb.gz`);
      const r = runCli(['profile', '--pid', String(child.pid), '--frequency', '499', '--duration', '4', '--pprof', file], { timeoutMs: 40_000 });
      child.kill('SIGKILL');
      assert.equal(r.code, 0, r.stderr);
      const n = Number(/wrote (\d+) samples/.exec(r.stderr)?.[1]);
      assert.ok(n >= 100, `only ${n} samples of cpusplit ${variant}`);
      files.push(file);
    }
    const d = runCli(['profile-diff', files[0], files[1], '--json']);
    assert.equal(d.code, 0, d.stderr);
    const movers = (JSON.parse(d.stdout) as { movers: { name: string; selfDelta: number }[] }).movers;
    const a = movers.find((m) => m.name === 'hot_a')!;
    const b = movers.find((m) => m.name === 'hot_b')!;
    t.diagnostic(`hot_a ${a.selfDelta.toFixed(1)} pt, hot_b ${b.selfDelta.toFixed(1)} pt`);
    assert.deepEqual(new Set(movers.slice(0, 2).map((m) => m.name)), new Set(['hot_a', 'hot_b']), 'the two hot functions moved most');
    assert.ok(Math.abs(a.selfDelta + 50) <= 12, `hot_a moved ${a.selfDelta.toFixed(1)} points, expected about −50`);
    assert.ok(Math.abs(b.selfDelta - 50) <= 12, `hot_b moved ${b.selfDelta.toFixed(1)} points, expected about +50`);
    const text = runCli(['profile-diff', files[0], files[1]]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout.split('\n').find((l) => /→/.test(l) && /hot_/.test(l))!, /hot_[ab]$/);
  });

  test('--pprof into a folder that does not exist fails before sampling, with the fix', () => {
    const r = runCli(['profile', '--all', '--duration', '1', '--pprof', '/nonexistent-dir/x.pb.gz']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--pprof \/nonexistent-dir\/x\.pb\.gz: the folder \/nonexistent-dir does not exist/);
  });
});

// Needs no BPF: another tool's pprof (Go's own runtime/pprof) must open in our flame graph model.
describe('a pprof file written by Go opens', { skip: goSkipReason() }, () => {
  test('Go runtime/pprof CPU profile: main.spin dominates, with its file:line and 100 Hz', (t) => {
    const out = path.join(work, 'go.pb.gz');
    const src = path.join(repoRoot, 'test/fixtures/go/spin.go');
    const r = spawnSync('go', ['run', src, out], { encoding: 'utf8', timeout: 120_000, cwd: work });
    assert.equal(r.status, 0, `go run failed: ${r.stderr}`);
    const loaded = loadProfileBytes(fs.readFileSync(out), 'go.pb.gz');
    assert.equal(loaded.format, 'pprof');
    const p = loaded.flame;
    assert.equal(p.frequency, 100, 'Go samples at 100 Hz (period 10 ms)');
    assert.ok(p.total >= 20, `only ${p.total} samples in 1.5 s of spinning`);
    const { total } = frameTotals(p);
    const i = p.frames.findIndex((f) => f.name === 'main.spin');
    assert.ok(i >= 0, `no main.spin among ${p.frames.map((f) => f.name).join(', ')}`);
    t.diagnostic(`main.spin on ${total[i]} of ${p.total} samples`);
    assert.ok(total[i] >= 0.8 * p.total, `main.spin is on ${total[i]} of ${p.total} samples`);
    assert.equal(p.frames[i].file, src);
    assert.ok(p.frames[i].line! >= 15 && p.frames[i].line! <= 25, `main.spin's line ${p.frames[i].line}`);
    // Exact per-line annotations come along (the editor's CodeLens uses them).
    assert.ok(loaded.result && loaded.result.stacks.some((s) => s.frames.some((f) => f.function === 'main.spin' && f.file === src)));
  });
});
