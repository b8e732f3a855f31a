// The runner's run/start (the tracing helper refuses it), behind "Run bpftrace Script" and "Run BPF Loader": bpftrace on a .bt
// with hist() streams its output and its exit dump parses into a histogram with non-zero
// buckets; a loader built from a New BPF Project runs as root and reports our execs; bad
// requests are refused with the reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { helperJs, kernelSkipReason, runCli, runnerJs } from '../helpers';
import { runExited, runMaps, runOutput, runPrograms, runStart, runStop, type RunStartParams } from '../../extension/protocol/privilegedRun';
import { parseBpftraceMaps } from '../../extension/model/bpftraceMaps';
import type { HistogramView } from '../../extension/protocol/bpfRun';
import { findTool } from '../../extension/authoring/toolchain';

const skip = kernelSkipReason();

async function withHelper(fn: (conn: MessageConnection) => Promise<void>, script = runnerJs): Promise<void> {
  const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'pipe'] });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  try {
    await fn(conn);
  } finally {
    conn.dispose();
    child.stdin.end();
    await new Promise((r) => child.on('exit', r));
  }
}

/** Starts a run and collects its stdout until it exits; `during` runs once it has started. */
async function run(conn: MessageConnection, params: RunStartParams, during: (stdout: () => string, runId: number) => Promise<void>) {
  let stdout = '';
  let stderr = '';
  let id = -1;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    conn.onNotification(runExited, (p) => {
      if (p.runId === id) resolve(p);
    });
  });
  conn.onNotification(runOutput, (p) => {
    if (p.runId !== id) return;
    if (p.stream === 'stdout') stdout += p.data;
    else stderr += p.data;
  });
  const started = await conn.sendRequest(runStart, params);
  id = started.runId;
  await during(() => stdout, id);
  const end = await exited;
  return { ...end, stdout, stderr };
}

const waitFor = async (pred: () => boolean, ms: number) => {
  for (const t0 = Date.now(); !pred() && Date.now() - t0 < ms; ) await new Promise((r) => setTimeout(r, 50));
};

test('bpftrace through the runner: a hist() script gives a histogram with non-zero buckets', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  if (!findTool('bpftrace')) return t.skip('bpftrace is not installed (apt-get install bpftrace)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-bt-'));
  const script = path.join(dir, 'readsize.bt');
  fs.writeFileSync(script, `tracepoint:syscalls:sys_exit_read /pid == ${process.pid}/ { @bytes = hist(args->ret); @reads = count(); }\ninterval:s:3 { exit(); }\n`);
  const data = path.join(dir, 'data');
  fs.writeFileSync(data, Buffer.alloc(5000, 1));
  await withHelper(async (conn) => {
    const r = await run(conn, { kind: 'bpftrace', script, cwd: dir }, async (stdout) => {
      await waitFor(() => /Attaching/.test(stdout()), 30_000);
      // 50 reads of 5000 bytes: bucket [4K, 8K) is log2 bucket 12.
      for (let i = 0; i < 50; i++) fs.readFileSync(data);
    });
    assert.equal(r.code, 0, r.stderr);
    const maps = parseBpftraceMaps(r.stdout);
    const hist = maps.find((m) => m.name === '@bytes') as HistogramView | undefined;
    assert.ok(hist && hist.kind === 'histogram', `no @bytes histogram in:\n${r.stdout}`);
    const counts = hist.series[0].counts;
    assert.ok((counts[12] ?? 0) >= 50, `expected >= 50 reads in [4K, 8K), got ${counts[12]}: ${r.stdout}`);
    const reads = maps.find((m) => m.name === '@reads');
    assert.ok(reads?.kind === 'table' && Number(reads.rows[0].value) >= 50);
  });
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a New BPF Project loader runs as root through the runner and reports our execs', { timeout: 180_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-loader-')), 'proj');
  assert.equal(runCli(['new-project', dir, '--template', 'minimal']).code, 0);
  const make = spawnSync('make', ['-C', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(make.status, 0, make.stderr);
  await withHelper(async (conn) => {
    const r = await run(conn, { kind: 'loader', executable: path.join(dir, 'minimal'), args: ['4'], cwd: dir }, async (stdout, runId) => {
      await waitFor(() => /Ctrl-C/.test(stdout()), 30_000);
      for (let i = 0; i < 5; i++) spawnSync('/bin/true');
      // The map view's source: the loader's .bss, read through its map fds while it runs.
      const maps = await conn.sendRequest(runMaps, { runId: runId });
      const bss = maps.find((m) => /\.bss$/.test(m.name));
      assert.ok(bss?.kind === 'table', JSON.stringify(maps));
      const calls = (bss.rows[0].value as { stats: { calls: number } }).stats.calls;
      assert.ok(calls >= 5, `the .bss counter says ${calls} execve calls, we made 5`);
    });
    assert.equal(r.code, 0, r.stderr);
    const counts = [...r.stdout.matchAll(/^execve calls: (\d+)/gm)].map((m) => Number(m[1]));
    assert.ok((counts.at(-1) ?? 0) >= 5, r.stdout);

    await assert.rejects(conn.sendRequest(runStart, { kind: 'loader', executable: 'minimal', args: [], cwd: dir }), /must be an absolute path/);
    await assert.rejects(conn.sendRequest(runStart, { kind: 'loader', executable: path.join(dir, 'minimal.c'), args: [], cwd: dir }), /is not executable/);
    await assert.rejects(conn.sendRequest(runStart, { kind: 'loader', executable: path.join(dir, 'nope'), args: [], cwd: dir }), /does not exist/);
    await assert.rejects(conn.sendRequest(runStart, { kind: 'shell', cwd: dir } as never), /kind must be/);
    await assert.rejects(conn.sendRequest(runStart, { kind: 'bpftrace', script: path.join(dir, 'x.bt'), cwd: 'rel' }), /cwd must be/);
  });
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});

test('the execwatch loader through the runner: its programs and links listed, maps read without any exec, Stop ends it with code 0', { timeout: 180_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-loader-')), 'proj');
  assert.equal(runCli(['new-project', dir, '--template', 'ringbuf']).code, 0);
  const make = spawnSync('make', ['-C', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(make.status, 0, make.stderr);
  await withHelper(async (conn) => {
    let stopMs = 0;
    const r = await run(conn, { kind: 'loader', executable: path.join(dir, 'execwatch'), args: [], cwd: dir }, async (stdout, runId) => {
      await waitFor(() => /Ctrl-C/.test(stdout()), 30_000);
      const programs = await conn.sendRequest(runPrograms, { runId });
      assert.deepEqual(
        programs.map((p) => ({ name: p.name, section: p.section, attached: p.attached })),
        [{ name: 'on_exec', section: 'tp/sched/sched_process_exec', attached: true }],
      );
      assert.match(programs[0].detail ?? '', /prog id \d+, \w+ link/);
      // Ten map reads while the loader prints every exec: none of them may exec anything (bpftool did).
      const before = stdout().length;
      for (let i = 0; i < 10; i++) {
        const maps = await conn.sendRequest(runMaps, { runId });
        assert.deepEqual(maps.map((m) => [m.name, m.kind]), [['events', 'other']]);
      }
      await new Promise((res) => setTimeout(res, 500));
      const during = stdout().slice(before);
      assert.doesNotMatch(during, /comm=bpftool/, `map reads exec'd bpftool:\n${during}`);
      stopMs = Date.now();
      await conn.sendRequest(runStop, { runId });
    });
    // From run/stop to run/exited.
    stopMs = Date.now() - stopMs;
    assert.equal(r.code, 0, `the loader exited ${r.code}/${r.signal} after Stop: ${r.stderr}`);
    assert.ok(stopMs < 2000, `Stop took ${stopMs} ms`);
    assert.match(r.stderr, /stopped by SIGINT after \d+\.\d s/);
  });
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});

test('Stop escalates to SIGTERM when the program ignores SIGINT, and says so', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-stop-'));
  const prog = path.join(dir, 'stubborn');
  fs.writeFileSync(prog, `#!${process.execPath}\nprocess.on('SIGINT', () => console.log('ignoring SIGINT'));\nconsole.log('ready');\nsetInterval(() => {}, 1000);\n`, { mode: 0o755 });
  await withHelper(async (conn) => {
    const r = await run(conn, { kind: 'loader', executable: prog, args: [], cwd: dir }, async (stdout, runId) => {
      await waitFor(() => /ready/.test(stdout()), 20_000);
      await conn.sendRequest(runStop, { runId });
    });
    assert.equal(r.signal, 'SIGTERM');
    assert.match(r.stdout, /ignoring SIGINT/);
    assert.match(r.stderr, /ignored SIGINT for 2\.0 s; stopped by SIGTERM/);
  });
  fs.rmSync(dir, { recursive: true, force: true });
});

test('bpftrace printing a map every second: the map view has each key once, equal to the exit dump', { timeout: 120_000 }, async (t) => {
  if (skip) return t.skip(skip);
  if (!findTool('bpftrace')) return t.skip('bpftrace is not installed (apt-get install bpftrace)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-bt-'));
  const script = path.join(dir, 'execs.bt');
  // END runs before bpftrace prints its maps at exit, so the marker splits the exit dump off.
  fs.writeFileSync(script, 'tracepoint:sched:sched_process_exec { @execs[comm] = count(); }\ninterval:s:1 { print(@execs); printf("tick\\n"); }\ninterval:s:4 { exit(); }\nEND { printf("exit dump follows\\n"); }\n');
  await withHelper(async (conn) => {
    const r = await run(conn, { kind: 'bpftrace', script, cwd: dir }, async (stdout) => {
      await waitFor(() => /Attaching/.test(stdout()), 30_000);
      for (let i = 0; i < 20; i++) {
        spawnSync('/bin/true');
        await new Promise((res) => setTimeout(res, 100));
      }
    });
    assert.equal(r.code, 0, r.stderr);
    const printings = r.stdout.split('\n').filter((l) => /^@execs\[true\]:/.test(l)).length;
    assert.ok(printings >= 2, `expected @execs printed more than once:\n${r.stdout}`);
    const view = parseBpftraceMaps(r.stdout).find((m) => m.name === '@execs');
    const dump = parseBpftraceMaps(r.stdout.slice(r.stdout.indexOf('exit dump follows'))).find((m) => m.name === '@execs');
    assert.ok(view?.kind === 'table' && dump?.kind === 'table', r.stdout);
    const keys = view.rows.map((row) => row.key);
    assert.equal(new Set(keys).size, keys.length, `keys repeat: ${JSON.stringify(keys)}`);
    assert.deepEqual(new Map(view.rows.map((row) => [row.key, row.value])), new Map(dump.rows.map((row) => [row.key, row.value])));
    assert.ok(Number(view.rows.find((row) => row.key === 'true')?.value) >= 20);
  });
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the tracing helper refuses run/start (loader and bpftrace): user code as root goes through the runner', { timeout: 60_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-refuse-'));
  const marker = path.join(dir, 'ran-as-root');
  await withHelper(async (conn) => {
    await assert.rejects(conn.sendRequest(runStart, { kind: 'loader', executable: '/bin/touch', args: [marker], cwd: dir }), /refused: run\/start .*never does.*runner/);
    await assert.rejects(conn.sendRequest(runStart, { kind: 'bpftrace', script: '/etc/hostname', cwd: dir }), /refused: run\/start/);
    await assert.rejects(conn.sendRequest(runMaps, { runId: 1 }), /refused: run\/maps/);
  }, helperJs);
  assert.equal(fs.existsSync(marker), false, 'the helper ran nothing');
  fs.rmSync(dir, { recursive: true, force: true });
});
