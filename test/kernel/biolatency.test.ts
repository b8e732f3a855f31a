// biolatency against Debian's libbpf-tools biolatency (/usr/sbin/biolatency) in the same run: both
// trace while one workload does O_DIRECT writes and reads of a file on the disk that backs /, and
// each bucket's share of the I/Os must agree within 2 points. Then per disk (the disk backing /
// is named) and per process (the workload's pid is there, named).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { HistResult } from '../../extension/protocol/histogram';
import { kernelSkipReason, loadedPrograms, startCli, waitFor } from '../helpers';
import { parseBccHistograms } from './bccText';

const BCC = '/usr/sbin/biolatency';
const skip = kernelSkipReason() ?? (fs.existsSync(BCC) ? undefined : `${BCC} is missing (apt-get install libbpf-tools)`);
/** 4 KiB writes, each its own request with O_DIRECT; then as many reads. */
const IOS = 3000;

/** The disk that backs / ("vda"), by the device number of a file on it. */
function rootDisk(file: string): string {
  const dev = fs.statSync(file).dev;
  const link = fs.readlinkSync(`/sys/dev/block/${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`);
  const name = path.basename(link);
  // a partition's parent is the disk
  return fs.existsSync(`/sys/class/block/${name}/partition`) ? path.basename(path.dirname(fs.realpathSync(`/sys/class/block/${name}`))) : name;
}

function workload(file: string): { done: Promise<void> } {
  const script = `dd if=/dev/zero of=${file} bs=4k count=${IOS} oflag=direct status=none && dd if=${file} of=/dev/null bs=4k iflag=direct status=none && sync`;
  const child = spawn('sh', ['-c', script], { stdio: 'ignore' });
  return { done: new Promise((r) => child.on('exit', () => r())) };
}

/** Shares of their buckets and of ours summed over the same ranges (their first bucket holds 0 and 1). */
function shares(theirs: [number, number, number][], ours: { low: number; count: number }[]): { theirs: number[]; ours: number[]; n: [number, number] } {
  const tn = theirs.reduce((a, b) => a + b[2], 0);
  const on = ours.reduce((a, b) => a + b.count, 0);
  const o = theirs.map(([lo, hi]) => ours.filter((b) => b.low >= lo && b.low <= hi).reduce((a, b) => a + b.count, 0));
  const beyond = ours.filter((b) => b.low > theirs[theirs.length - 1][1]).reduce((a, b) => a + b.count, 0);
  o.push(beyond);
  return { theirs: [...theirs.map((t) => (100 * t[2]) / tn), 0], ours: o.map((c) => (100 * c) / on), n: [on, tn] };
}

/** Starts ours and waits until its issue and completion programs are loaded (--json prints no banner; only the programs its options need are loaded). */
async function startOurs(args: string[]) {
  const before = new Set(loadedPrograms().map((p) => p.id));
  const run = startCli(['biolatency', ...args]);
  const ok = await waitFor(() => new Set(loadedPrograms().filter((p) => !before.has(p.id) && /^rq_(issue|complete)_/.test(p.name)).map((p) => p.name.slice(0, 6))).size === 2, 20_000);
  assert.ok(ok, `ours attached: ${run.stderr()}`);
  // attached a moment after loading
  await new Promise((r) => setTimeout(r, 300));
  return run;
}

/** Runs ours and theirs side by side over one workload; returns both outputs. */
async function sideBySide(ours: string[], theirs: string[], file: string) {
  // line-buffered: its "Tracing..." line says it has attached
  const bcc = spawn('stdbuf', ['-oL', BCC, ...theirs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let bccOut = '';
  bcc.stdout.on('data', (d) => (bccOut += d));
  const bccDone = new Promise<void>((r) => bcc.on('exit', () => r()));
  const run = await startOurs(['--json', ...ours]);
  assert.ok(await waitFor(() => /Tracing block device I\/O/.test(bccOut), 20_000), `${BCC} attached: ${bccOut}`);
  const w = workload(file);
  await w.done;
  // Both stop together: what either sees after the workload is the machine's own I/O.
  bcc.kill('SIGINT');
  run.child.kill('SIGINT');
  await bccDone;
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  return { ours: JSON.parse(r.stdout) as HistResult<'biolatency'>, theirs: parseBccHistograms(bccOut) };
}

function assertClose(what: string, s: ReturnType<typeof shares>): void {
  const diff = s.ours.map((v, i) => Math.abs(v - s.theirs[i]));
  const worst = Math.max(...diff);
  const show = (xs: number[]) => xs.map((v) => v.toFixed(1)).join(' ');
  assert.ok(worst <= 2, `${what}: bucket shares differ by up to ${worst.toFixed(2)} points\n ours   ${show(s.ours)} (${s.n[0]} I/Os)\n theirs ${show(s.theirs)} (${s.n[1]} I/Os)`);
  assert.ok(s.n[0] >= 2 * IOS * 0.9 && s.n[1] >= 2 * IOS * 0.9, `${what}: both saw the workload's ${2 * IOS} I/Os (ours ${s.n[0]}, theirs ${s.n[1]})`);
  console.log(`${what}: ours ${s.n[0]} I/Os, libbpf-tools ${s.n[1]}; largest bucket-share difference ${worst.toFixed(2)} points`);
}

test('biolatency: issue-to-completion histogram matches libbpf-tools biolatency on the same O_DIRECT workload', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const file = path.join('/var/tmp', `ebpf-studio-bio-${process.pid}.dat`);
  try {
    const { ours, theirs } = await sideBySide([], [], file);
    assert.equal(ours.histograms.length, 1);
    assertClose('all disks, from issue', shares(theirs.get('all')!, ours.histograms[0].buckets));
  } finally {
    fs.rmSync(file, { force: true });
  }
});

test('biolatency --queued --per-disk matches biolatency -Q -D for the disk backing /', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const file = path.join('/var/tmp', `ebpf-studio-bio-${process.pid}.dat`);
  fs.writeFileSync(file, '');
  const disk = rootDisk(file);
  try {
    const { ours, theirs } = await sideBySide(['--queued', '--per-disk'], ['-Q', '-D'], file);
    const mine = ours.histograms.find((h) => h.comm === disk);
    assert.ok(mine, `a histogram named ${disk}: ${ours.histograms.map((h) => h.comm).join(', ')}`);
    assert.ok(theirs.get(disk), `libbpf-tools printed ${disk}: ${[...theirs.keys()].join(', ')}`);
    assertClose(`${disk}, queued`, shares(theirs.get(disk)!, mine.buckets));
  } finally {
    fs.rmSync(file, { force: true });
  }
});

test('biolatency --per-process names the process that did the I/O', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const file = path.join('/var/tmp', `ebpf-studio-bio-${process.pid}.dat`);
  try {
    const run = await startOurs(['--json', '--per-process']);
    await workload(file).done;
    run.child.kill('SIGINT');
    const r = await run.done;
    const result = JSON.parse(r.stdout) as HistResult<'biolatency'>;
    const dd = result.histograms.filter((h) => h.comm === 'dd');
    const n = dd.reduce((a, h) => a + h.count, 0);
    // The writes and the reads are two dd processes (children of the workload's shell).
    assert.ok(n >= IOS, `dd's I/Os counted under dd: ${n} of ${2 * IOS} (${result.histograms.map((h) => `${h.key} ${h.comm} ${h.count}`).join(', ')})`);
  } finally {
    fs.rmSync(file, { force: true });
  }
});

test('biolatency --per-process names a process by the program it became by exec, not the shell it was', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const first = path.join('/var/tmp', `ebpf-studio-bio-sh-${process.pid}.dat`);
  const file = path.join('/var/tmp', `ebpf-studio-bio-${process.pid}.dat`);
  try {
    // Written with O_DIRECT, so neither file is in the page cache: the shell's own read of the
    // first is a block read in its name before it becomes dd.
    spawnSync('dd', ['if=/dev/zero', `of=${first}`, 'bs=4k', 'count=1', 'oflag=direct', 'status=none']);
    spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4k', `count=${IOS / 3}`, 'oflag=direct', 'status=none']);
    const run = await startOurs(['--json', '--per-process']);
    const sh = spawn('sh', ['-c', `read x < ${first}; exec dd if=${file} of=/dev/null bs=4k iflag=direct status=none`], { stdio: 'ignore' });
    await new Promise((r) => sh.on('exit', r));
    run.child.kill('SIGINT');
    const r = await run.done;
    const result = JSON.parse(r.stdout) as HistResult<'biolatency'>;
    const mine = result.histograms.find((h) => h.key === sh.pid);
    const all = result.histograms.map((h) => `${h.key} ${h.comm} ${h.count}`).join(', ');
    assert.ok(mine && mine.count >= IOS / 3, `the shell-then-dd process's reads under its pid ${sh.pid}: ${all}`);
    assert.equal(mine.comm, 'dd', `named by the program it became: ${all}`);
  } finally {
    fs.rmSync(first, { force: true });
    fs.rmSync(file, { force: true });
  }
});

test('biolatency --pid on a disk kept busy by 48 other writers: every request of the process, though a busy queue issues many from other tasks', { timeout: 90_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join('/var/tmp', 'ebpf-studio-bio-busy-'));
  const writes = 300;
  // each writer rewrites its own 2 MiB file in 64 KiB writes with O_DIRECT until killed: the queue stays deep, the disk use small
  const others = Array.from({ length: 48 }, (_, i) => spawn('sh', ['-c', `while :; do dd if=/dev/zero of=${dir}/bg-${i} bs=64k count=32 oflag=direct conv=notrunc status=none; done`], { stdio: 'ignore', detached: true }));
  const target = spawn('sh', ['-c', `read x; exec dd if=/dev/zero of=${dir}/target bs=4k count=${writes} oflag=direct status=none`], { stdio: ['pipe', 'ignore', 'ignore'] });
  try {
    const cli = startCli(['biolatency', '--pid', String(target.pid), '--json', '--verbose']);
    assert.ok(await waitFor(() => /biolatency: attached via/.test(cli.stderr()) || cli.child.exitCode !== null, 20_000), cli.stderr());
    const exited = new Promise((r) => target.on('exit', r));
    target.stdin!.end('go\n');
    await exited;
    await new Promise((r) => setTimeout(r, 300));
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const seen = (JSON.parse(r.stdout) as HistResult).histograms.reduce((n, h) => n + h.count, 0);
    t.diagnostic(`${seen} requests counted for the target's ${writes} direct writes, under 48 writers`);
    // a write whose bio joins a request another writer made (adjacent blocks) is that writer's
    assert.ok(seen >= writes - 5 && seen <= writes + 5, `the target's requests: ${seen} for ${writes} direct writes`);
  } finally {
    for (const o of others) if (o.pid) try { process.kill(-o.pid, 'SIGKILL'); } catch { /* gone */ }
    target.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
