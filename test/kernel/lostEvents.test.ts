// Nothing silently lost: a kernel map filled on purpose is counted and shown. runqlat --per-thread
// keeps one histogram per thread in a 10240-entry map; 14000 short-lived children (forkmany.c) in
// one interval overflow it. The CLI's JSON carries `dropped`, the text report says so, and stderr
// names the option that loses less (lossHint.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunqlatResult } from '../../extension/protocol/runqlat';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import { lossHint } from '../../extension/cli/lossHint';
import { kernelSkipReason, loadedPrograms, repoRoot, runCli, startCli, waitFor } from '../helpers';
import { GcWorkloads, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason();

function forkmany(dir: string): string {
  const exe = path.join(dir, 'forkmany');
  const r = spawnSync('cc', ['-O2', path.join(repoRoot, 'test/fixtures/c/forkmany.c'), '-o', exe], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return exe;
}

test('runqlat: a full histogram map is counted as dropped, in JSON and text, with a hint on stderr; doctor then advises', { timeout: 90_000 }, async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-lost-'));
  // A loss history of this test's own, so doctor's advice comes from exactly these two runs.
  const env = { ...process.env, EBPF_STUDIO_STATE_DIR: path.join(dir, 'state') };
  try {
    const exe = forkmany(dir);
    let droppedTotal = 0;
    for (const json of [true, false]) {
      const before = new Set(loadedPrograms().map((p) => p.id));
      const run = startCli(['runqlat', '--per-thread', '--interval', '30', '--duration', '7', ...(json ? ['--json'] : [])], { env });
      assert.ok(await waitFor(() => loadedPrograms().some((p) => !before.has(p.id) && /^(wakeup|switch)_/.test(p.name)), 10_000), 'runqlat attached');
      const forks = spawn(exe, ['14000'], { stdio: 'ignore' });
      const forked = await new Promise<number | null>((r) => forks.on('exit', r));
      assert.equal(forked, 0);
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const dropped = json ? (JSON.parse(r.stdout) as RunqlatResult).dropped : Number(/(\d+) waits lost: a kernel map was full/.exec(r.stdout)?.[1] ?? 0);
      assert.ok(dropped > 0, `dropped is counted (${json ? 'JSON' : 'text'}): ${r.stdout.slice(-300)}`);
      if (json) assert.equal((JSON.parse(r.stdout) as RunqlatResult).histograms.length, 10240, 'the map held as many threads as it could');
      assert.match(r.stderr, new RegExp(`${dropped} events dropped \\(a kernel map was full\\).*--per-process`), 'stderr names the option that loses less');
      droppedTotal += dropped;
    }
    // Two sessions in a row lost data: doctor says so, with the same advice.
    const doctor = runCli(['doctor', '--json'], { env, timeoutMs: 30_000 });
    assert.equal(doctor.code, 0, doctor.stderr);
    const advice = (JSON.parse(doctor.stdout) as { advice: string[] }).advice;
    assert.ok(
      advice.some((a) => a.startsWith(`runqlat lost data in 2 sessions in the last 7 days (${droppedTotal} dropped)`) && a.includes('--per-process')),
      `doctor advice: ${JSON.stringify(advice)}`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('lossHint: silent when nothing was lost, names the tracer-specific option otherwise', () => {
  assert.equal(lossHint({ tracer: 'memleak', lost: 0, dropped: 0 }), undefined);
  assert.equal(lossHint(null), undefined);
  assert.match(lossHint({ tracer: 'memleak', lost: 0, dropped: 12 })!, /12 events dropped.*--sample-rate/);
  assert.match(lossHint({ tracer: 'java-gc', lost: 3 })!, /3 events lost \(kernel buffer full\).*--min-us/);
  assert.match(lossHint({ tracer: 'profile', lost: 5 })!, /^ebpf-studio: 5 samples lost \(their stacks found no room in the kernel stack map\).*--frequency/);
});

test('java-gc: a ring buffer overrun is counted, and events + lost equal the GCs the JVM made', { timeout: 120_000 }, async (t) => {
  const why = skip ?? noJdkReason;
  if (why) return t.skip(why);
  // The CLI is frozen (SIGSTOP) while the JVM makes ~350 GCs: its 256 KiB ring buffer holds ~165
  // events of 1552 bytes, so the kernel must count the rest as lost, and say so when it thaws.
  const workloads = new GcWorkloads();
  try {
    const w = await workloads.start(0, 6144);
    const cli = startCli(['java-gc', '--pid', String(w.pid), '--json', '--verbose']);
    assert.ok(await waitFor(() => /attached to .*libjvm\.so/.test(cli.stderr()), 15_000), `not attached: ${cli.stderr()}`);
    cli.child.kill('SIGSTOP');
    try {
      w.go();
      await w.done;
    } finally {
      cli.child.kill('SIGCONT');
    }
    const jvm = await w.done;
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as JavaGcResult;
    assert.ok(jvm.young + jvm.full > 250, `the workload made only ${jvm.young + jvm.full} GCs`);
    assert.ok(result.lost > 0, `no loss counted: ${result.events.length} events of ${jvm.young + jvm.full} GCs`);
    assert.equal(result.events.length + result.lost, jvm.young + jvm.full, 'every GC is either delivered or counted as lost');
    assert.match(r.stderr, new RegExp(`${result.lost} events lost \\(kernel buffer full\\).*--min-us`));
    t.diagnostic(`${jvm.young + jvm.full} GCs: ${result.events.length} delivered, ${result.lost} lost`);
  } finally {
    workloads.dispose();
  }
});
