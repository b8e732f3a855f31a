// Lifecycle: nothing of ours stays in the kernel after the helper's stdin closes or after kill -9
// of the CLI, of the helper, or of an extension host (a node process running HelperClient with
// the vscode mock); and a target that exits mid-session ends the session cleanly for every
// tracer ('target-exited', data kept, exit 0), including JVMs coming and going in "all" mode.
// Programs and links are tracked by id (bpftool), since other processes may load the same objects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as proto from '../../extension/protocol/protocol';
import { CATALOG, type CatalogName, type TracerEntry, type TracerTarget } from '../../extension/protocol/catalog';
import { findJdks } from '../../extension/sys/proc/processes';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { MemleakResult } from '../../extension/protocol/memleak';
import type { ProfileResult } from '../../extension/protocol/profile';
import { cliJs, kernelSkipReason, loadedPrograms, repoRoot, startCli, startHelper, waitFor } from '../helpers';

const skip = kernelSkipReason();
const jdk = findJdks().find((j) => j.usdt);
const java = jdk ? path.join(jdk.home, 'bin', 'java') : undefined;

// ---- kernel objects by id -------------------------------------------------------------------
function linkList(): { id: number; prog_id: number }[] {
  const r = spawnSync('bpftool', ['link', 'list', '--json'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? (JSON.parse(r.stdout) as { id: number; prog_id: number }[]) : [];
}

interface Ours {
  progs: number[];
  links: number[];
}

/** Programs (and their links) that appeared since `before` and whose names match. */
function ourObjects(before: Set<number>, name: RegExp): Ours {
  const progs = loadedPrograms().filter((p) => !before.has(p.id) && name.test(p.name)).map((p) => p.id);
  const set = new Set(progs);
  return { progs, links: linkList().filter((l) => set.has(l.prog_id)).map((l) => l.id) };
}

function remaining(o: Ours): Ours {
  const progs = new Set(loadedPrograms().map((p) => p.id));
  const links = new Set(linkList().map((l) => l.id));
  return { progs: o.progs.filter((id) => progs.has(id)), links: o.links.filter((id) => links.has(id)) };
}

async function assertGone(o: Ours, what: string, ms = 2000) {
  const ok = await waitFor(() => {
    const r = remaining(o);
    return r.progs.length === 0 && r.links.length === 0;
  }, ms);
  assert.ok(ok, `${what}: still loaded ${JSON.stringify(remaining(o))}`);
}

const progIds = () => new Set(loadedPrograms().map((p) => p.id));
// Program names as the kernel truncates them (16 bytes), per tracer, from the catalog: a new
// tracer gets the kill -9 test below or fails the type check.
const NAMES = Object.fromEntries(
  (Object.keys(CATALOG) as CatalogName[]).flatMap((n) => {
    const programs = (CATALOG[n] as TracerEntry).programs;
    return programs ? [[n, new RegExp(programs)]] : [];
  }),
) as Record<proto.TracingName, RegExp>;

function startGcJvm(seconds: number): { child: ChildProcess; ready: Promise<boolean> } {
  const child = spawn(java!, ['-XX:+UseSerialGC', '-Xmx64m', path.join(repoRoot, 'test/fixtures/java/GcThenExit.java'), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return { child, ready: waitFor(() => out.includes('ready'), 20_000) };
}

let spinExe: string | undefined;
function spin(): string {
  if (spinExe) return spinExe;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-lifecycle-'));
  spinExe = path.join(dir, 'cpusplit');
  const r = spawnSync('cc', ['-g', '-O0', '-fno-omit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/cpusplit.c'), '-o', spinExe], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return spinExe;
}

// ---- the helper ---------------------------------------------------------------------------------
test('helper: stdin closed with two sessions running → everything detached, exit 0 within 1 s', async (t) => {
  if (skip) return t.skip(skip);
  const before = progIds();
  const h = startHelper();
  await h.conn.sendRequest(proto.sessionStart, { tracer: 'runqlat', options: { pid: 0, per: 'none', unit: 'us', intervalS: 1 } });
  await h.conn.sendRequest(proto.sessionStart, { tracer: 'selftest', options: { parentPid: process.pid, magic: 3, attach: 'raw_tp' } });
  const ours = ourObjects(before, /^on_exec|^(wakeup|wakeup_new|switch)_(btf|raw)$/);
  assert.ok(ours.progs.length >= 2 && ours.links.length >= 2, `programs and links are loaded: ${JSON.stringify(ours)}`);
  const closedAt = Date.now();
  h.child.stdin.end();
  const { code, at } = await h.exited;
  h.conn.dispose();
  assert.equal(code, 0, h.stderr());
  assert.ok(at - closedAt < 1000, `exited ${at - closedAt} ms after stdin closed`);
  assert.match(h.stderr(), /exiting: stdin closed/);
  await assertGone(ours, 'after the helper exited', 500);
});

test('helper: kill -9 with a session running leaves no program or link', async (t) => {
  if (skip) return t.skip(skip);
  const before = progIds();
  const h = startHelper();
  await h.conn.sendRequest(proto.sessionStart, { tracer: 'runqlat', options: { pid: 0, per: 'process', unit: 'us', intervalS: 1 } });
  const ours = ourObjects(before, NAMES.runqlat);
  assert.ok(ours.progs.length > 0 && ours.links.length > 0, JSON.stringify(ours));
  h.child.kill('SIGKILL');
  await h.exited;
  h.conn.dispose();
  await assertGone(ours, 'after kill -9 of the helper');
});

test('extension host killed with -9: its helper sees stdin close, exits, and nothing remains', async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-exthost-'));
  const script = path.join(dir, 'host.ts');
  // A stand-in extension host: the real HelperClient (vscode mocked) starts the helper and a session.
  fs.writeFileSync(
    script,
    `import { installVscodeMock } from ${JSON.stringify(path.join(repoRoot, 'test/mocks/vscode.ts'))};
const vscode = installVscodeMock();
const { HelperClient } = require(${JSON.stringify(path.join(repoRoot, 'extension/editor/helperClient/helperClient.ts'))});
const proto = require(${JSON.stringify(path.join(repoRoot, 'extension/protocol/protocol.ts'))});
(async () => {
  const client = new HelperClient(${JSON.stringify(repoRoot)}, vscode.window.createOutputChannel('host'));
  await client.request(proto.sessionStart, { tracer: 'runqlat', options: { pid: 0, per: 'none', unit: 'us', intervalS: 1 } });
  process.stdout.write('helper ' + client.child.pid + '\\n');
  setInterval(() => undefined, 1000);
})().catch((e) => { process.stdout.write('error ' + e.message + '\\n'); process.exit(1); });
`,
  );
  const before = progIds();
  const host = spawn(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  host.stdout!.on('data', (d) => (out += d));
  try {
    assert.ok(await waitFor(() => /helper \d+|error/.test(out), 20_000), `the host did not start its helper: ${out}`);
    const helperPid = Number(/helper (\d+)/.exec(out)?.[1]);
    assert.ok(helperPid > 0, out);
    const ours = ourObjects(before, NAMES.runqlat);
    assert.ok(ours.progs.length > 0 && ours.links.length > 0, JSON.stringify(ours));
    const killedAt = Date.now();
    host.kill('SIGKILL');
    assert.ok(await waitFor(() => !fs.existsSync(`/proc/${helperPid}`) || /^State:\s+Z/m.test(fs.readFileSync(`/proc/${helperPid}/status`, 'utf8')), 2000), 'the helper exited after its parent died');
    assert.ok(Date.now() - killedAt < 1500, `the helper took ${Date.now() - killedAt} ms to exit`);
    await assertGone(ours, 'after kill -9 of the extension host');
  } finally {
    host.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- the CLI -------------------------------------------------------------------------------------
/** How each tracer is started for the kill -9 test: on a JVM, on a C process (sleep), or on the
 * whole system (the catalog's target; system-wide tracers run with no arguments unless named here). */
const ARGS: Partial<Record<proto.TracingName, (pid: number) => string[]>> = {
  profile: () => ['profile', '--all', '--no-java'],
  // uprobes: this test is about BPF programs (inject mode loads none; memleakInject.test.ts kills its tracer too)
  memleak: (pid) => ['memleak', '--pid', String(pid), '--mode', 'uprobe'],
};
const KILLED = Object.fromEntries(
  (Object.keys(NAMES) as proto.TracingName[]).map((n) => {
    const e = CATALOG[n] as TracerEntry;
    const operand = e.cli?.operandExample ? [e.cli.operandExample] : [];
    return [n, { target: e.target, args: ARGS[n] ?? ((pid: number) => [e.cli!.command, ...(e.target === 'system' ? [] : ['--pid', String(pid)]), ...operand]) }];
  }),
) as Record<proto.TracingName, { target: TracerTarget; args: (pid: number) => string[] }>;

for (const tracer of Object.keys(KILLED) as proto.TracingName[]) {
  test(`CLI: kill -9 of a running \`${tracer}\` leaves no program or link`, async (t) => {
    if (skip) return t.skip(skip);
    const how = KILLED[tracer];
    if (how.target === 'jvm' && !java) return t.skip('no JDK with USDT probes');
    const before = progIds();
    const jvm = how.target === 'jvm' ? startGcJvm(60) : undefined;
    const proc = how.target === 'process' ? spawn('sleep', ['60'], { stdio: 'ignore' }) : undefined;
    try {
      if (jvm) assert.ok(await jvm.ready, 'the JVM started');
      const run = startCli(how.args(jvm?.child.pid ?? proc?.pid ?? 0));
      let ours: Ours = { progs: [], links: [] };
      assert.ok(
        await waitFor(() => {
          ours = ourObjects(before, NAMES[tracer]);
          return ours.links.length > 0 || (tracer === 'profile' && ours.progs.length > 0);
        }, 20_000),
        `${tracer} attached (stderr: ${run.stderr()})`,
      );
      await new Promise((r) => setTimeout(r, 300));
      ours = ourObjects(before, NAMES[tracer]);
      run.child.kill('SIGKILL');
      await run.done;
      await assertGone(ours, `after kill -9 of ebpf-studio ${tracer}`);
    } finally {
      jvm?.child.kill('SIGKILL');
      proc?.kill('SIGKILL');
    }
  });
}

// ---- targets that exit mid-session ----------------------------------------------------------------
test('java-gc --pid: the JVM exits mid-session → target-exited, GCs kept, exit 0', async (t) => {
  if (skip) return t.skip(skip);
  if (!java) return t.skip('no JDK with USDT probes');
  const jvm = startGcJvm(2);
  assert.ok(await jvm.ready);
  const run = startCli(['java-gc', '--pid', String(jvm.child.pid)]);
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`pid ${jvm.child.pid} exited; \\d+ GCs traced`));
  assert.match(r.stdout, /GCs: \d+ collections \(\d+ pauses\)/, 'the report of what was traced is printed');
  const json = startGcJvm(2);
  assert.ok(await json.ready);
  const rj = await startCli(['java-gc', '--pid', String(json.child.pid), '--json']).done;
  assert.equal(rj.code, 0, rj.stderr);
  const doc = JSON.parse(rj.stdout) as JavaGcResult;
  assert.ok(doc.events.length > 0 && doc.events.every((e) => e.pid === json.child.pid), 'the GCs seen before the exit are kept');
});

test('java-gc --all: JVMs come and go, every one is traced, the session goes on', async (t) => {
  if (skip) return t.skip(skip);
  if (!java) return t.skip('no JDK with USDT probes');
  const run = startCli(['java-gc', '--all', '--duration', '9', '--json']);
  assert.ok(await waitFor(() => /Tracing|attached/.test(run.stderr()) || loadedPrograms().some((p) => NAMES['java-gc'].test(p.name)), 10_000));
  const a = startGcJvm(1.5);
  assert.ok(await a.ready);
  await new Promise((r) => a.child.on('exit', r));
  const b = startGcJvm(1.5);
  assert.ok(await b.ready);
  await new Promise((r) => b.child.on('exit', r));
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as JavaGcResult;
  for (const pid of [a.child.pid!, b.child.pid!]) assert.ok(doc.events.some((e) => e.pid === pid), `GCs of pid ${pid} are in the result (pids ${doc.pids})`);
});

test('profile --all while processes exec and exit by the hundred: no crash, exit 0', async (t) => {
  if (skip) return t.skip(skip);
  // a CFI unwind of a process that exits under it once left libdw without an error message, and
  // the addon read a NULL string (SIGSEGV in about half of such 12 s runs)
  const churn = spawn('sh', ['-c', 'while :; do python3 -c "x = sum(range(200000))"; done'], { stdio: 'ignore', detached: true });
  t.after(() => {
    try {
      process.kill(-churn.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  const r = await startCli(['profile', '--all', '--duration', '8', '--json']).done;
  assert.equal(r.code, 0, `exit ${r.code} (null: killed by a signal): ${r.stderr.slice(-1000)}`);
  assert.ok((JSON.parse(r.stdout) as ProfileResult).samples > 0);
});

test('profile --pid: the target exits mid-session → samples kept, exit 0', async (t) => {
  if (skip) return t.skip(skip);
  // 4 s of spinning: at 99 Hz that is ~400 samples on an idle machine, and still past 50 when a
  // loaded one gives it a fraction of a CPU after the profiler's start-up
  const target = spawn(spin(), ['4'], { stdio: 'ignore' });
  const r = await startCli(['profile', '--pid', String(target.pid), '--json', '--no-java']).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as ProfileResult;
  assert.ok(doc.samples > 50, `samples kept: ${doc.samples}`);
  assert.ok(doc.stacks.some((s) => s.frames.some((f) => f.function === 'hot_a')), 'symbolized before the process was gone');
});

test('memleak --pid: the target exits mid-session → target-exited, result printed, exit 0', async (t) => {
  if (skip) return t.skip(skip);
  const target = spawn(spin(), ['2'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 100));
  const r = await startCli(['memleak', '--pid', String(target.pid), '--json', '--interval', '0.5']).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as MemleakResult;
  assert.equal(doc.tracer, 'memleak');
  assert.equal(doc.pid, target.pid);
  assert.equal(typeof doc.dropped, 'number');
});

test('cleanup', () => {
  if (spinExe) fs.rmSync(path.dirname(spinExe), { recursive: true, force: true });
});

void cliJs;
