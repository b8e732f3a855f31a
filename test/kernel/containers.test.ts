// Tracers on processes in real containers (podman + runc, an image built from Debian's packages
// with its own OpenJDK 17, gcc and libc: other inodes than the host's files of the same path),
// traced from the host as root. Each result is compared with the program's own account: the
// JVM's -Xlog:gc and GarbageCollectorMXBeans (and hsperfdata through java-gc's own check), the C
// fixture's known leaks. One JVM runs a JDK at a path the host does not have (a Kubernetes node
// has no JDK at all): a copy of the image's JDK made inside the container at start.
//
// The bed (image, containers, fixtures built inside) is test/kernel/containerKit.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { hostFileIdentity } from '../../extension/sys/proc/mappedFile';
import { markerLines, repoRoot, startCli, waitFor } from '../helpers';
import { CONTAINER_ONLY_JDK, JDK, containerBed, containerPrep } from './containerKit';

const prep = containerPrep();

describe('tracers on programs in real containers', { skip: prep.skip }, () => {
  const { contained, jvm } = containerBed({
    fixtures: ['java/GcWorkload.java', 'c/leaky.c'],
    // Built inside the container, with its own javac and gcc.
    build: 'javac -d /app /app/GcWorkload.java && gcc -g -O0 -fno-omit-frame-pointer -o /app/leaky /app/leaky.c',
  });

  test('the image', (t) => {
    t.diagnostic(prep.note);
  });

  const perCollector = (r: JavaGcResult, pid: number) => {
    const m = new Map<string, number>();
    for (const e of r.events.filter((x) => x.pid === pid)) m.set(e.collector, (m.get(e.collector) ?? 0) + 1);
    return m;
  };

  for (const where of ['the host has the same path', 'the host lacks the path'] as const) {
    test(`java-gc --pid: a JVM in a container (${where}) counted as its -Xlog:gc and its own counters say`, { timeout: 120_000 }, async (t) => {
      const home = where === 'the host has the same path' ? JDK : CONTAINER_ONLY_JDK;
      assert.equal(fs.existsSync(`${home}/lib/server/libjvm.so`), home === JDK, `the host ${home === JDK ? 'lacks' : 'has'} ${home}: the case is not what it says`);
      const j = await jvm(3, 192, 200, home);
      const theirs = hostFileIdentity(`/proc/${j.hostPid}/root${home}/lib/server/libjvm.so`);
      if (home === JDK) assert.notEqual(theirs, hostFileIdentity(`${JDK}/lib/server/libjvm.so`), "the container's libjvm.so is the host's file: the case proves nothing");
      const cli = startCli(['java-gc', '--pid', String(j.hostPid), '--json', '--verbose']);
      assert.ok(await waitFor(() => /attached to .*libjvm\.so as pid \d+ maps it/.test(cli.stderr()) || cli.child.exitCode !== null, 20_000), `not attached: ${cli.stderr()}`);
      // Its own counters are read once the probes are in place: collections from then on count on both sides.
      assert.ok(await waitFor(() => cli.stderr().includes(`pid ${j.hostPid}: its own counters (`) || cli.child.exitCode !== null, 10_000), `counters not read: ${cli.stderr()}`);
      j.send('go');
      const own = await j.done;
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      const ours = perCollector(result, j.hostPid);
      t.diagnostic(`JVM: young ${own.young} full ${own.full} (log ${own.logYoung}/${own.logFull}); ours ${JSON.stringify([...ours])}; ${result.jvmCounts?.map((c) => c.message).join('; ')}`);
      assert.ok(own.young > 10 && own.full >= 3, 'the workload collects');
      assert.equal(ours.get('Copy') ?? 0, own.young, 'young collections: ours and the JVM\'s bean');
      assert.equal(ours.get('Copy') ?? 0, own.logYoung, 'young collections: ours and -Xlog:gc');
      assert.equal(ours.get('MarkSweepCompact') ?? 0, own.full, 'full collections: ours and the JVM\'s bean');
      assert.equal(ours.get('MarkSweepCompact') ?? 0, own.logFull, 'full collections: ours and -Xlog:gc');
      const check = result.jvmCounts?.find((c) => c.pid === j.hostPid);
      assert.ok(check, 'the JVM\'s own counters were checked');
      assert.equal(check.verdict, 'agree', check.message);
      assert.equal(check.jvmCounted, own.young + own.full, 'hsperfdata counts what the beans count');
      assert.equal(check.counted, check.jvmCounted);
      assert.equal(result.problem, undefined);
    });
  }

  test('java-gc --all: JVMs in containers started later are traced, their libjvm.so attached once', { timeout: 120_000 }, async (t) => {
    const cli = startCli(['java-gc', '--all', '--json', '--verbose']);
    try {
      assert.ok(await waitFor(() => cli.stderr().includes('looking for new JVMs') || cli.child.exitCode !== null, 30_000), `--all did not start: ${cli.stderr()}`);
      const first = await jvm(2, 128, 4000);
      // Its libjvm.so is found within a look or two, and attached.
      assert.ok(await waitFor(() => new RegExp(`attached to .* as pid ${first.hostPid} maps it`).test(cli.stderr()), 10_000), `the container's libjvm.so was not attached: ${cli.stderr()}`);
      assert.ok(await waitFor(() => cli.stderr().includes(`pid ${first.hostPid}: its own counters (`), 10_000), `counters not read: ${cli.stderr()}`);
      first.send('go');
      // The second shares the image's file: already probed, so every collection of it is seen.
      const second = await jvm(1, 96, 4000);
      second.send('go');
      const [a, b] = await Promise.all([first.done, second.done]);
      // Both are looked at while they linger.
      await new Promise((r) => setTimeout(r, 2500));
      cli.child.kill('SIGINT');
      const r = await cli.done;
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      const identity = new RegExp(`as pid ${first.hostPid} maps it \\(file ([\\d:]+)\\)`).exec(r.stderr)![1];
      assert.equal(r.stderr.split(`(file ${identity})`).length - 1, 1, `the image's libjvm.so (${identity}) attached more than once:\n${r.stderr}`);
      for (const [j, own] of [[first, a], [second, b]] as const) {
        const ours = perCollector(result, j.hostPid);
        const check = result.jvmCounts?.find((c) => c.pid === j.hostPid);
        t.diagnostic(`pid ${j.hostPid}: JVM young ${own.young} full ${own.full} (log ${own.logYoung}/${own.logFull}); ours ${JSON.stringify([...ours])}; ${check?.message}`);
        assert.equal(ours.get('Copy') ?? 0, own.logYoung, `pid ${j.hostPid}: young collections against -Xlog:gc`);
        assert.equal(ours.get('MarkSweepCompact') ?? 0, own.logFull, `pid ${j.hostPid}: full collections against -Xlog:gc`);
        assert.equal(own.logYoung + own.logFull, own.young + own.full);
        assert.ok(check, `pid ${j.hostPid}: its own counters were checked`);
        assert.equal(check.verdict, 'agree', check.message);
      }
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  /**
   * memleak --pid on leaky in a container: its three leaks' lines and bytes, in the mode asked for
   * (`asked`: with --mode, else auto's choice); `wake` makes it leak (default: a line). The command's stderr.
   */
  async function leaks(c: Awaited<ReturnType<typeof contained>>, mode: 'inject' | 'uprobe', t: { diagnostic(s: string): void }, opts: { wake?: () => void; asked?: boolean } = {}): Promise<string> {
    const cli = startCli(['memleak', '--pid', String(c.hostPid), ...(opts.asked ? ['--mode', mode] : []), '--json', '--top', '100', '--verbose', '--interval', '0.5']);
    assert.ok(await waitFor(() => /memleak: injected |attached in/.test(cli.stderr()) || cli.child.exitCode !== null, 30_000), `not attached: ${cli.stderr()}`);
    const leakedBefore = c.out().split('leaked').length;
    (opts.wake ?? (() => c.send('go')))();
    assert.ok(await waitFor(() => c.out().split('leaked').length > leakedBefore, 20_000), 'the program did not leak');
    // Stopped while it lives: the report needs no exit.
    await new Promise((r) => setTimeout(r, 600));
    cli.child.kill('SIGINT');
    const r = await cli.done;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as MemleakResult;
    assert.equal(result.mode, mode, r.stderr);
    if (mode === 'uprobe') assert.match(r.stderr, /probing \/usr\/lib\/x86_64-linux-gnu\/libc\.so\.6 through \/proc\/\d+\/(map_files|root)/);
    const marks = markerLines(path.join(repoRoot, 'test', 'fixtures', 'c', 'leaky.c'), /\/\* ((?:LEAK|FREED|REALLOC)[-A-Z0-9]*)/);
    const sites = new Map<number, { bytes: number; allocations: number }>();
    for (const s of result.stacks) {
      const f = s.frames[0];
      if (f?.file && path.basename(f.file) === 'leaky.c' && f.line) sites.set(f.line, { bytes: s.bytes, allocations: s.allocations });
    }
    t.diagnostic(`mode ${result.mode}: ${JSON.stringify([...sites])}`);
    assert.deepEqual(sites.get(marks.get('LEAK-MALLOC')!), { bytes: 10000, allocations: 10 });
    assert.deepEqual(sites.get(marks.get('LEAK-CALLOC')!), { bytes: 10000, allocations: 5 });
    assert.deepEqual(sites.get(marks.get('LEAK-REALLOC')!), { bytes: 3000, allocations: 1 });
    assert.equal(sites.size, 3, `exactly the three leaks, got lines ${[...sites.keys()].join(', ')}`);
    // uprobes count the calls they saw (the interposer's table has no such count)
    if (mode === 'uprobe') assert.ok((result.allocationsSeen ?? 0) > 0, 'allocations seen');
    assert.equal(result.problem, undefined);
    return r.stderr;
  }

  test("memleak --pid: a leaky C program under the runtime's default seccomp profile is injected (its filter allows every call of ours) — lines and bytes as it leaks them", { timeout: 90_000 }, async (t) => {
    const c = await contained(['/app/leaky', '--wait']);
    assert.match(fs.readFileSync(`/proc/${c.hostPid}/status`, 'utf8'), /^Seccomp:\s+2$/m, 'the container runs under a seccomp filter: the case proves nothing');
    const stderr = await leaks(c, 'inject', t);
    assert.match(stderr, /seccomp filter\(s\) over \d+ thread\(s\): ALLOW for all \d+ system calls/, stderr);
  });

  test('memleak --pid --mode inject: a program asleep in clock_nanosleep whose sleep was restarted (restart_syscall), then blocked in read() on a pipe, is injected each time; its later leaks are exact', { timeout: 60_000 }, async (t) => {
    const c = await contained(['/app/leaky', '--sleep']);
    const syscall = () => Number(fs.readFileSync(`/proc/${c.hostPid}/syscall`, 'utf8').split(' ')[0]);
    assert.ok(await waitFor(() => syscall() === 230, 10_000), `not asleep in clock_nanosleep: ${syscall()}`);
    // a stop and a continue (job control, a debugger, or our own seccomp read) leave the rest of the sleep to restart_syscall
    process.kill(c.hostPid, 'SIGSTOP');
    process.kill(c.hostPid, 'SIGCONT');
    assert.ok(await waitFor(() => syscall() === 219, 5_000), `the sleep is not in restart_syscall: ${syscall()}`);
    let t0 = Date.now();
    await leaks(c, 'inject', t, { asked: true, wake: () => process.kill(c.hostPid, 'SIGUSR1') });
    t.diagnostic(`asleep (restart_syscall): injected, leaked and reported in ${Date.now() - t0} ms`);
    // now in read() on its stdin, a pipe
    assert.ok(await waitFor(() => syscall() === 0, 5_000), `not in read(): ${syscall()}`);
    t0 = Date.now();
    await leaks(c, 'inject', t, { asked: true });
    t.diagnostic(`in read() on a pipe: injected, leaked and reported in ${Date.now() - t0} ms`);
    c.send('go');
    assert.equal(await c.exited, 0, `the program: ${c.out()}`);
  });

  test('memleak --pid: a leaky C program whose seccomp profile refuses a call of ours (flock) gets uprobes on its own libc, the call named, the program unharmed', { timeout: 90_000 }, async (t) => {
    const profile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-seccomp-')), 'no-flock.json');
    fs.writeFileSync(profile, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['flock'], action: 'SCMP_ACT_ERRNO' }] }));
    try {
      const c = await contained(['/app/leaky', '--wait'], ['--security-opt', `seccomp=${profile}`]);
      const stderr = await leaks(c, 'uprobe', t);
      assert.match(stderr, new RegExp(`seccomp filter of process ${c.hostPid} \\(thread \\d+\\) returns ERRNO \\d+ for flock, so the leak tracer cannot be injected`));
      // unharmed: it goes on and finishes its work as it would untraced
      c.send('go');
      assert.equal(await c.exited, 0, `the program: ${c.out()}`);
    } finally {
      fs.rmSync(path.dirname(profile), { recursive: true, force: true });
    }
  });
});
