// java-gc --all finds JVMs whatever their launcher is named. The kernel wakes user space within a
// second only for execs of the JDK's launcher names (java, jsvc, ...); every other exec is looked
// at every 30 s. A JVM whose comm is not one of them (a renamed copy of the launcher, as products
// ship their own) running its own libjvm.so file (a copy: a JDK no --all start saw, like a
// container's) must still be attached within that time, and each GC it makes afterwards counted.
// A JVM started by `java` under another argv[0] (`exec -a`) keeps comm "java": found within a second.
// The agent beside it has the renamed launcher in jvm.launchers: the kernel wakes it at that exec,
// so it attaches within seconds, not 30, and exports every GC the JVM counts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import { kernelSkipReason, sleep, startCli, waitFor } from '../helpers';
import { GcWorkloads, jdk, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason() ?? noJdkReason;
/** OTHER_EXECS_LOOKS in extension/tracers/javaGc/tracer.ts, in seconds */
const RESCAN_S = 30;

/** A JDK whose launcher is named `name` and whose libjvm.so is a file of its own (every other file a symlink to the JDK's). */
function renamedJdk(dir: string, home: string, name: string): string {
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'lib', 'server'), { recursive: true });
  for (const f of fs.readdirSync(home)) if (f !== 'bin' && f !== 'lib') fs.symlinkSync(path.join(home, f), path.join(dir, f));
  for (const f of fs.readdirSync(path.join(home, 'lib'))) if (f !== 'server') fs.symlinkSync(path.join(home, 'lib', f), path.join(dir, 'lib', f));
  for (const f of fs.readdirSync(path.join(home, 'lib', 'server'))) {
    const from = path.join(home, 'lib', 'server', f);
    if (f === 'libjvm.so') fs.copyFileSync(from, path.join(dir, 'lib', 'server', f));
    else fs.symlinkSync(from, path.join(dir, 'lib', 'server', f));
  }
  const launcher = path.join(dir, 'bin', name);
  fs.copyFileSync(path.join(home, 'bin', 'java'), launcher);
  fs.chmodSync(launcher, 0o755);
  return launcher;
}

/** GcWorkload under `launcher` (argv[0] `argv0`): waits for go(); done gives the GCs it counted after go(). */
async function startJvm(launcher: string, classDir: string, children: ChildProcess[], argv0?: string) {
  const child = spawn(launcher, ['-XX:+UseSerialGC', '-Xmx64m', '-cp', classDir, 'GcWorkload', '1', '256', '0'], { stdio: ['pipe', 'pipe', 'inherit'], ...(argv0 ? { argv0 } : {}) });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  assert.ok(await waitFor(() => out.includes('\n'), 20_000), `GcWorkload under ${launcher} did not start`);
  const counts = (l: string) => /young=(\d+) full=(\d+)/.exec(l)!.slice(1).map(Number);
  const [y0, f0] = counts(out.split('\n')[0]);
  return {
    pid: child.pid!,
    before: y0 + f0,
    go: () => child.stdin!.write('go\n'),
    done: (async () => {
      assert.equal(await exited, 0, out);
      const [y, f] = counts(out.split('\n').find((l) => l.startsWith('done'))!);
      return y - y0 + (f - f0);
    })(),
  };
}

describe('java-gc --all: JVMs under launchers of any name', { skip }, () => {
  let workloads: GcWorkloads;
  let dir: string;
  const children: ChildProcess[] = [];
  before(() => {
    workloads = new GcWorkloads();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-launchers-'));
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    workloads?.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test(`a renamed launcher with its own libjvm.so is attached within ${RESCAN_S} s and every later GC counted; exec -a java within a second`, { timeout: 150_000 }, async (t) => {
    const launcher = renamedJdk(path.join(dir, 'jdk'), jdk!.home, 'orderservice');
    const cli = startCli(['java-gc', '--all', '--json', '--verbose']);
    const cfg = path.join(dir, 'agent.json');
    fs.writeFileSync(cfg, JSON.stringify({ jvm: { launchers: ['orderservice'] }, runqueue: { enabled: false }, profile: { enabled: false } }));
    const agent = startCli(['agent', '--listen', '127.0.0.1:0', '--insecure-no-auth', '--config', cfg, '--verbose']);
    try {
      assert.ok(await waitFor(() => /looking for new JVMs/.test(cli.stderr()), 30_000), `not attached: ${cli.stderr()}`);
      assert.ok(await waitFor(() => /serving (http:\/\/[^/]+)\/metrics/.test(agent.stderr()), 30_000), `the agent did not start: ${agent.stderr()}`);
      assert.match(agent.stderr(), /looking for new JVMs as processes exec java, .*orderservice, every 30 s among those that exec'd anything else/);
      assert.match(cli.stderr(), /among processes that exec'd java, .*every 30 s among those that exec'd anything else/);

      // argv[0] renamed, comm still "java": the fast path.
      const aliased = await startJvm(path.join(jdk!.home, 'bin', 'java'), workloads.classDir, children, 'billing-worker');
      assert.ok(await waitFor(() => cli.stderr().includes(`java-gc: pid ${aliased.pid}:`), 5000), `the exec -a JVM was not followed within 5 s: ${cli.stderr()}`);
      aliased.go();
      const aliasedGcs = await aliased.done;

      const t0 = Date.now();
      const renamed = await startJvm(launcher, workloads.classDir, children);
      assert.equal(fs.readFileSync(`/proc/${renamed.pid}/comm`, 'utf8').trim(), 'orderservice');
      const attached = new RegExp(`attached to .*libjvm\\.so as pid ${renamed.pid} maps it`);
      assert.ok(await waitFor(() => attached.test(agent.stderr()), 5000, 100), `the agent (jvm.launchers: orderservice) did not attach to the renamed launcher's JVM within 5 s: ${agent.stderr()}`);
      t.diagnostic(`agent with jvm.launchers: attached ${((Date.now() - t0) / 1000).toFixed(1)} s after the renamed launcher started`);
      assert.ok(await waitFor(() => attached.test(cli.stderr()), (RESCAN_S + 10) * 1000, 250), `the renamed launcher's JVM was not attached within ${RESCAN_S + 10} s: ${cli.stderr()}`);
      const foundS = (Date.now() - t0) / 1000;
      t.diagnostic(`renamed launcher (comm orderservice, own libjvm.so): attached ${foundS.toFixed(1)} s after it started`);
      renamed.go();
      const renamedGcs = await renamed.done;
      await sleep(1500);
      cli.child.kill('SIGINT');
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      const seen = (pid: number) => result.events.filter((e) => e.pid === pid && e.kind !== 'concurrent-cycle').length;
      assert.equal(seen(aliased.pid), aliasedGcs, 'the exec -a JVM: GCs counted vs the JVM\'s own count');
      assert.equal(seen(renamed.pid), renamedGcs, 'the renamed launcher\'s JVM: GCs counted after it was attached vs the JVM\'s own count');
      // The agent was attached before the JVM's first GC (none before its first line): every one.
      const base = /serving (http:\/\/[^/]+)\/metrics/.exec(agent.stderr())![1];
      const text = await (await fetch(`${base}/metrics`)).text();
      const exported = text
        .split('\n')
        .filter((l) => l.startsWith('ebpf_studio_jvm_gc_pause_seconds_count{') && l.includes(`pid="${renamed.pid}"`))
        .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      assert.equal(renamed.before, 0, 'the JVM collected before its first line: the agent cannot be compared from 0');
      assert.equal(exported, renamedGcs, `the agent's GC series of the renamed launcher's JVM vs the JVM's own count:\n${text.split('\n').filter((l) => l.includes('gc_pause_seconds_count')).join('\n')}`);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      if (agent.child.exitCode === null) agent.child.kill('SIGTERM');
      await agent.done;
    }
  });
});
