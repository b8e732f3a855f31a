// BPF authoring against the real verifier: the program that uses a map value without a NULL
// check is rejected with a diagnostic on exactly that line (CLI and helper), the fixed one
// verifies, and "Run" (the bpf-run session) on the histogram example fills real buckets, a
// table and decoded ring-buffer records while real processes run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import { bpfVerify } from '../../extension/protocol/authoring';
import type { BpfRunUpdate, HistogramView, RingbufView, TableView } from '../../extension/protocol/bpfRun';
import { bpfRunTracer } from '../../extension/tracers/bpfRun/tracer';
import { cliEnv } from '../../extension/cli/env';
import { helperJs, runnerJs, kernelSkipReason, loadedPrograms, newProgramIds, programIdsLoaded, repoRoot, runCli, waitFor } from '../helpers';

const skip = kernelSkipReason();
const sha = (f: string) => crypto.createHash('sha256').update(fs.readFileSync(f)).digest('hex');
const fixtures = path.join(repoRoot, 'test', 'fixtures', 'bpf');
const bad = path.join(fixtures, 'bad_null.bpf.c');
const good = path.join(fixtures, 'good.bpf.c');
const hist = path.join(fixtures, 'hist.bpf.c');
const badLine = fs.readFileSync(bad, 'utf8').split('\n').findIndex((l) => l.includes('BAD: val may be NULL')) + 1;

interface VerifyJson {
  ok: boolean;
  diagnostics: { file: string; line: number; column: number; severity: string; message: string }[];
  log: string;
}

function tmpdir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-verify-test-'));
}

/** Builds `src` into a temporary folder, starts `js` (the runner or the helper) on stdio
 *  JSON-RPC, runs `body`, and always stops the process and removes the folder. */
async function withBuiltObject(
  src: string,
  js: string,
  body: (conn: MessageConnection, obj: string, dir: string) => Promise<void>,
  onConnect?: (conn: MessageConnection) => void,
): Promise<void> {
  const dir = tmpdir();
  const obj = path.join(dir, path.basename(src).replace(/\.c$/, '.o'));
  try {
    assert.equal(runCli(['build', src, '-o', obj], { cwd: dir }).code, 0);
    const child = spawn(process.execPath, [js], { stdio: ['pipe', 'pipe', 'pipe'] });
    const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    onConnect?.(conn);
    conn.listen();
    try {
      await body(conn, obj, dir);
    } finally {
      conn.dispose();
      child.stdin.end();
      await new Promise((r) => child.on('exit', r));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('verify --json: a map value used without a NULL check is rejected on its line', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['verify', bad, '--json']);
  assert.equal(r.code, 1, r.stderr);
  const out = JSON.parse(r.stdout) as VerifyJson;
  assert.equal(out.ok, false);
  assert.equal(out.diagnostics.length, 1, JSON.stringify(out.diagnostics));
  const d = out.diagnostics[0];
  assert.equal(d.file, bad);
  assert.equal(d.line, badLine);
  assert.equal(d.column, 2);
  assert.equal(d.severity, 'error');
  assert.match(d.message, /invalid mem access 'map_value_or_null'/);
  assert.match(out.log, /^== program \w+ ==$/m, 'the log carries the program verifier log');
  assert.match(out.log, /processed \d+ insns/);
});

test('verify: the program with the NULL check verifies (source and built object)', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['verify', good, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as VerifyJson;
  assert.deepEqual({ ok: out.ok, diagnostics: out.diagnostics }, { ok: true, diagnostics: [] });
  assert.match(out.log, /processed \d+ insns/);
  const dir = tmpdir();
  try {
    const obj = path.join(dir, 'good.bpf.o');
    const b = runCli(['build', good, '-o', obj], { cwd: path.dirname(obj) });
    assert.equal(b.code, 0, b.stderr);
    const v = runCli(['verify', obj]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, /verified/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('verify prints the rejection as file:line:col: error in text mode', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['verify', bad]);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`${bad}:${badLine}:2: error: R0 invalid mem access 'map_value_or_null'`), r.stderr);
  assert.match(r.stderr, /hint: The pointer may be NULL/);
  assert.doesNotMatch(r.stderr, /bad_null\.bpf\.c:0/, 'no line-0 annotation in the excerpt');
});

test('verify of an accepted program reports instructions processed and verification time', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['verify', good, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as VerifyJson & { stats: { program: string; insns: number; timeUs: number }[] };
  // The figures are the kernel's own: the same log's "processed N insns" line.
  const insns = Number(/processed (\d+) insns/.exec(out.log)![1]);
  assert.equal(out.stats.length, 1);
  assert.equal(out.stats[0].insns, insns);
  assert.ok(out.stats[0].timeUs > 0, JSON.stringify(out.stats));
});

const typo = path.join(fixtures, 'typo_helper.bpf.c');
const typoLine = fs.readFileSync(typo, 'utf8').split('\n').findIndex((l) => l.includes('/* TYPO */')) + 1;

test('verify names a misspelt helper at its line: clang error from source, unresolved extern from an object built without -Werror', (t) => {
  if (skip) return t.skip(skip);
  const r = runCli(['verify', typo]);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`${typo}:${typoLine}:`), r.stderr);
  assert.match(r.stderr, /'bpf_ringbuf_reserv' is not a known helper or kfunc.*Did you mean 'bpf_ringbuf_reserve'\?/);
  const dir = tmpdir();
  try {
    // An object someone built with clang's default flags (the typo only a warning) still loads to a named cause, not ENOENT.
    const obj = path.join(dir, 'typo_helper.bpf.o');
    const vm = path.join(repoRoot, 'build');
    const c = spawnSync('clang', ['-O2', '-g', '-target', 'bpf', '-D__TARGET_ARCH_x86', `-I${vm}`, `-I/usr/include/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`, '-c', typo, '-o', obj], { encoding: 'utf8' });
    if (c.status !== 0) return t.skip(`clang could not build the object without -Werror: ${c.stderr}`);
    fs.copyFileSync(typo, path.join(dir, 'typo_helper.bpf.c'));
    const v = runCli(['verify', obj, '--json']);
    assert.equal(v.code, 1, v.stderr);
    const out = JSON.parse(v.stdout) as VerifyJson;
    assert.equal(out.diagnostics.length, 1, JSON.stringify(out.diagnostics));
    assert.deepEqual({ file: out.diagnostics[0].file, line: out.diagnostics[0].line }, { file: path.join(dir, 'typo_helper.bpf.c'), line: typoLine });
    assert.match(out.diagnostics[0].message, /unresolved function 'bpf_ringbuf_reserv'.*Did you mean 'bpf_ringbuf_reserve'/);
    assert.doesNotMatch(v.stdout + v.stderr, /ENOENT|No such file/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('runner bpf/verify maps the rejection to the source given, and leaves nothing loaded', async (t) => {
  if (skip) return t.skip(skip);
  await withBuiltObject(bad, runnerJs, async (conn, obj) => {
    const r = await conn.sendRequest(bpfVerify, { objectPath: obj, sourcePaths: [bad], confirmedSha256: sha(obj) });
    assert.equal(r.ok, false);
    assert.equal(r.diagnostics[0].file, bad);
    assert.equal(r.diagnostics[0].line, badLine);
    assert.match(r.diagnostics[0].excerpt, /map_value_or_null/);
    const selftestObj = path.join(repoRoot, 'dist', 'bpf', 'selftest.bpf.o');
    const ok = await conn.sendRequest(bpfVerify, { objectPath: selftestObj, confirmedSha256: sha(selftestObj) });
    assert.equal(ok.ok, true);
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: 'relative.o' }), /must be absolute/);
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: '/etc/passwd' }), /not an ELF object/);
    assert.equal(loadedPrograms().filter((p) => p.name === 'count_switches').length, 0, 'verify does not keep programs loaded');
  });
});

test('Run on the histogram example: non-zero buckets, a table, and decoded exec records', async (t) => {
  if (skip) return t.skip(skip);
  const dir = tmpdir();
  const obj = path.join(dir, 'hist.bpf.o');
  assert.equal(runCli(['build', hist, '-o', obj], { cwd: path.dirname(obj) }).code, 0);
  const updates: BpfRunUpdate[] = [];
  const opts = bpfRunTracer.validate({ objectPath: obj, sourcePath: hist, intervalMs: 250, confirmedSha256: sha(obj) });
  const before = loadedPrograms();
  const session = await bpfRunTracer.start(opts, cliEnv(false), { update: (u) => updates.push(u), ended: () => undefined });
  const ours = newProgramIds(before, (n) => n === 'on_switch' || n === 'on_exec');
  try {
    assert.deepEqual(session.warnings, []);
    const pids: number[] = [];
    for (let i = 0; i < 4; i++) pids.push(spawnSync('/bin/true').pid!);
    const ringOf = (u?: BpfRunUpdate) => u?.maps.find((m) => m.name === 'execs') as RingbufView | undefined;
    assert.ok(
      await waitFor(() => pids.every((p) => (ringOf(updates.at(-1))?.recent ?? []).some((r) => (r as { pid: number }).pid === p)), 5000),
      `exec records for ${pids}: ${JSON.stringify(ringOf(updates.at(-1)))}`,
    );
    const result = await session.stop();
    assert.deepEqual(
      result.programs.map((p) => [p.name, p.attached]),
      [
        ['on_switch', true],
        ['on_exec', true],
      ],
    );
    const h = result.maps.find((m) => m.name === 'switch_gap_us') as HistogramView;
    assert.equal(h.kind, 'histogram');
    assert.equal(h.origin, 'annotation');
    assert.equal(h.valueType, 'struct hist');
    const counts = h.series[0].counts;
    assert.equal(counts.length, 27);
    assert.ok(counts.filter((c) => c > 0).length >= 2, `several non-zero buckets: ${counts}`);
    const table = result.maps.find((m) => m.name === 'switches_by_comm') as TableView;
    assert.equal(table.kind, 'table');
    assert.equal(table.keyType, 'char[16]');
    assert.ok(table.rows.some((r) => r.key === 'true' && (r.value as number) >= 1), 'the spawned /bin/true processes switched out');
    const ring = ringOf({ atMs: 0, maps: result.maps })!;
    assert.equal(ring.recordType, 'struct exec_event');
    const rec = ring.recent.find((r) => (r as { pid: number }).pid === pids[0]) as { pid: number; ppid: number; comm: string };
    assert.deepEqual({ ppid: rec.ppid, comm: rec.comm }, { ppid: process.pid, comm: 'true' });
    assert.ok(updates.length >= 1, 'live updates while running');
    assert.equal(ours.length, 2, 'both programs were loaded while running');
    assert.ok(await waitFor(() => programIdsLoaded(ours).length === 0, 2000), 'stop detaches and unloads');
  } finally {
    await session.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the runner runs the bpf-run session for the editor', async (t) => {
  if (skip) return t.skip(skip);
  const updates: BpfRunUpdate[] = [];
  await withBuiltObject(hist, runnerJs, async (conn, obj) => {
    const s = await conn.sendRequest(proto.sessionStart, { tracer: 'bpf-run', options: { objectPath: obj, sourcePath: hist, intervalMs: 200, confirmedSha256: sha(obj) } });
    // The histogram honors its @sample interval (500 ms), the other maps the 200 ms default.
    const histOf = (u?: BpfRunUpdate) => u?.maps.find((m) => m.name === 'switch_gap_us') as HistogramView | undefined;
    assert.ok(await waitFor(() => (histOf(updates.at(-1))?.series[0]?.counts ?? []).some((c) => c > 0), 5000), 'histogram buckets fill while running');
    assert.ok(await waitFor(() => updates.length >= 3, 5000), `updates stream (${updates.length})`);
    await conn.sendRequest(proto.sessionStop, { sessionId: s.sessionId });
  }, (conn) => {
    // By method name: protocol.ts's NotificationType comes from another vscode-jsonrpc entry point.
    conn.onNotification('session/data', (p: proto.SessionDataParams) => void updates.push(p.update as BpfRunUpdate));
  });
});

test('the runner refuses a user object without confirmation, changed since confirmed, or not BPF', async (t) => {
  if (skip) return t.skip(skip);
  const before = loadedPrograms();
  await withBuiltObject(good, runnerJs, async (conn, obj, dir) => {
    const confirmed = sha(obj);
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: obj }), /refused: loading .*good\.bpf\.o into the kernel needs your confirmation/);
    await assert.rejects(
      conn.sendRequest(proto.sessionStart, { tracer: 'bpf-run', options: { objectPath: obj, intervalMs: 1000 } }),
      /needs your confirmation/,
    );
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: obj, confirmedSha256: 'f'.repeat(64) }), /changed since you confirmed it/);
    // Rebuilt (or swapped) after the user confirmed: the old confirmation does not cover it.
    fs.appendFileSync(obj, Buffer.alloc(8));
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: obj, confirmedSha256: confirmed }), /changed since you confirmed it/);
    // A regular ELF file for another machine, and a FIFO, are refused before any hash is looked at.
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: '/bin/true', confirmedSha256: sha('/bin/true') }), /another machine \(e_machine \d+\), not BPF \(e_machine 247\)/);
    const fifo = path.join(dir, 'fifo.o');
    spawnSync('mkfifo', [fifo]);
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: fifo, confirmedSha256: 'a'.repeat(64) }), /is not a regular file/);
    assert.equal(newProgramIds(before, (n) => n === 'count_switches').length, 0, 'nothing was loaded');
  });
});

test('the tracing helper refuses bpf/verify and the bpf-run session, naming the runner', async (t) => {
  if (skip) return t.skip(skip);
  const before = loadedPrograms();
  await withBuiltObject(good, helperJs, async (conn, obj) => {
    await assert.rejects(conn.sendRequest(bpfVerify, { objectPath: obj, confirmedSha256: sha(obj) }), /refused: bpf\/verify .*never does.*runner/);
    await assert.rejects(
      conn.sendRequest(proto.sessionStart, { tracer: 'bpf-run', options: { objectPath: obj, intervalMs: 1000, confirmedSha256: sha(obj) } }),
      /refused: session\/start of the bpf-run tracer .*runner/,
    );
    assert.equal(newProgramIds(before, (n) => n === 'count_switches').length, 0, 'nothing was loaded');
  });
});
