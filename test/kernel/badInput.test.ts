// Bad input to the CLI: every case ends in under a second with a reason that names the cause, the
// right exit code (2 usage/input, 4 unsuitable target) and no stack trace. Also: a JDK whose
// libjvm.so lacks .note.stapsdt (a copy made with objcopy), and a stripped binary, whose frames
// fall back to module+offset with the reason said once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kernelSkipReason, repoRoot, runCli, startCli, waitFor, type CliResult } from '../helpers';
import { listProcesses } from '../../extension/sys/proc/processes';
import type { ProfileResult } from '../../extension/protocol/profile';
import { CATALOG, type CatalogName, type TracerEntry } from '../../extension/protocol/catalog';

const skip = kernelSkipReason();
const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';

function deadPid(): number {
  return spawnSync('/bin/true').pid!;
}

function expectFailure(r: CliResult, code: number, reason: RegExp, what: string) {
  assert.equal(r.code, code, `${what}: exit ${r.code}, stderr: ${r.stderr}`);
  assert.match(r.stderr, reason, `${what}: reason`);
  assert.doesNotMatch(r.stderr, /^\s+at .+:\d+:\d+\)?$/m, `${what}: a stack trace`);
  assert.ok(r.ms < 1000, `${what} took ${r.ms} ms`);
}

/**
 * Every tracer that takes --pid, and whether it refuses a kernel thread (the catalog says: runqlat
 * measures kernel threads too, the uprobe tracers probe user-space code, which a kernel thread has not).
 */
const PID_TRACERS = (Object.keys(CATALOG) as CatalogName[]).flatMap((n) => {
  const e = CATALOG[n] as TracerEntry;
  return e.pid && e.cli ? [{ cmd: e.cli.command, operand: e.cli.operandExample ? [e.cli.operandExample] : [], refusesKernelThreads: !e.pid.kernelThreads }] : [];
});

test('bad pids: nonexistent, 0, negative, absurd, a kernel thread', (t) => {
  if (skip) return t.skip(skip);
  const dead = String(deadPid());
  const kworker = fs.readdirSync('/proc').find((d) => /^\d+$/.test(d) && /^kworker/.test(fs.readFileSync(`/proc/${d}/comm`, 'utf8')));
  for (const { cmd, operand, refusesKernelThreads } of PID_TRACERS) {
    // a command's operand (latency's FUNCTION) goes after the options, so the pid is what is judged
    const run = (args: string[]) => runCli([...args, ...operand]);
    expectFailure(run([cmd, '--pid', dead]), 2, new RegExp(`no process with pid ${dead} is running`), `${cmd} --pid ${dead}`);
    expectFailure(run([cmd, '--pid', '0']), 2, /--pid 0 is out of range: a pid is from 1 to 4194304/, `${cmd} --pid 0`);
    expectFailure(run([cmd, '--pid', '-5']), 2, /--pid -5 is out of range/, `${cmd} --pid -5`);
    expectFailure(run([cmd, '--pid=-5']), 2, /--pid -5 is out of range/, `${cmd} --pid=-5`);
    expectFailure(run([cmd, '--pid', '99999999999']), 2, /--pid 99999999999 is out of range/, `${cmd} --pid 99999999999`);
    expectFailure(run([cmd, '--pid', '12abc']), 2, /--pid takes a process id/, `${cmd} --pid 12abc`);
    if (!refusesKernelThreads) continue;
    expectFailure(run([cmd, '--pid', '2']), 4, /pid 2 \(kthreadd\) is a kernel thread: it has no user-space code/, `${cmd} --pid 2`);
    if (kworker) expectFailure(run([cmd, '--pid', kworker]), 4, /is a kernel thread/, `${cmd} --pid ${kworker} (kworker)`);
  }
});

test('java-gc on a process that is not a JVM: exit 4', (t) => {
  if (skip) return t.skip(skip);
  expectFailure(runCli(['java-gc', '--pid', String(process.pid)]), 4, new RegExp(`pid ${process.pid} \\(\\S+\\) has no libjvm.so mapped: is it a JVM\\?`), 'java-gc --pid <node>');
  expectFailure(runCli(['jvm', '--pid', String(process.pid)]), 4, new RegExp(`pid ${process.pid} \\(\\S+\\) has no libjvm.so mapped: is it a JVM\\?`), 'jvm --pid <node>');
});

test('out-of-range options and unknown flags are usage errors (exit 2)', (t) => {
  if (skip) return t.skip(skip);
  const me = String(process.pid);
  const cases: [string[], RegExp][] = [
    [['profile', '--all', '--frequency', '0'], /--frequency 0 is out of range: it must be at least 1/],
    [['profile', '--all', '--frequency', '100001'], /--frequency 100001 is out of range/],
    [['profile', '--all', '--frequency', '1.5'], /--frequency takes a whole number/],
    [['runqlat', '--duration', '-1'], /--duration -1 is out of range: it must be greater than 0/],
    [['runqlat', '--duration', '0'], /--duration 0 is out of range/],
    [['runqlat', '--duration', 'soon'], /--duration takes a number, got "soon"/],
    [['memleak', '--pid', me, '--sample-rate', '0'], /--sample-rate 0 is out of range: it must be at least 1/],
    [['memleak', '--pid', me, '--interval', '0'], /--interval 0 is out of range/],
    [['memleak', '--pid', me, '--max-outstanding', '0'], /--max-outstanding 0 is out of range: it must be at least 1/],
    [['profile', '--all', '--stack-storage-size', '0'], /--stack-storage-size 0 is out of range: it must be at least 1/],
    [['profile', '--all', '--stack-storage-size', '262145'], /--stack-storage-size 262145 is out of range/],
    [['runqlat', '--interval', '0'], /--interval 0 is out of range: it must be at least 0.1/],
    [['java-gc', '--pid', me, '--min-us', '-1'], /--min-us -1 is out of range: it must be at least 0/],
    [['java-gc', '--pid', me, '--all'], /--pid and --all exclude each other/],
    [['profile', '--bogus'], /Unknown option '--bogus'/],
    [['runqlat', '--per-process', '--per-thread'], /choose one of --per-process, --per-thread and --per-pidns/],
    [['memleak', '--pid', me, '--no-such-flag'], /Unknown option '--no-such-flag'/],
    [['memleak', '--pid', me, '--sample-bytes', '-1'], /--sample-bytes -1 is out of range: it must be at least 0/],
    [['memleak', '--pid', me, '--sample-bytes', '1.5'], /--sample-bytes takes a whole number/],
    [['memleak', '--pid', me, '--mode', 'preload'], /--mode preload traces a command it starts/],
    [['memleak', '--mode', 'fast', '--', '/bin/true'], /--mode must be preload, inject, uprobe or auto, got "fast"/],
    [['java-gc'], /give --pid PID \(one JVM\) or --all/],
    [['no-such-command'], /unknown command "no-such-command"/],
  ];
  for (const [args, reason] of cases) expectFailure(runCli(args), 2, reason, args.join(' '));
});

test('verify and build refuse empty, non-ELF, non-C and special files (exit 2)', (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-badinput-'));
  try {
    const empty = path.join(dir, 'empty.bpf.o');
    fs.writeFileSync(empty, '');
    const emptyC = path.join(dir, 'empty.bpf.c');
    fs.writeFileSync(emptyC, '');
    const text = path.join(dir, 'notes.txt');
    fs.writeFileSync(text, 'hello\n');
    const x86 = '/bin/true';
    const fifo = path.join(dir, 'fifo.bpf.o');
    spawnSync('mkfifo', [fifo]);
    const cases: [string[], RegExp][] = [
      [['verify', empty], /is empty/],
      [['verify', text], /is neither an ELF object nor C source/],
      [['verify', x86], /ELF file for another machine|not BPF|neither/],
      [['verify', '/nonexistent/x.bpf.o'], /does not exist/],
      [['verify', fifo], /not a regular file/],
      [['verify', '/dev/zero'], /not a regular file/],
      [['build', emptyC], /is empty/],
      [['build', text], /is not C source: give a file whose name ends in \.c/],
      [['build', '/dev/null'], /not a regular file/],
      [['build', x86], /already an ELF object|not C source/],
    ];
    for (const [args, reason] of cases) expectFailure(runCli(args), 2, reason, args.join(' '));
    assert.ok(!fs.existsSync(`${text}.o`) && !fs.existsSync(path.join(dir, 'notes.txt.o')), 'build wrote nothing for a non-C file');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** A JDK whose libjvm.so is a copy without .note.stapsdt; everything else is symlinked. */
function jdkWithoutUsdt(dir: string): string | undefined {
  const libjvm = path.join(JDK, 'lib/server/libjvm.so');
  if (!fs.existsSync(libjvm)) return undefined;
  const home = path.join(dir, 'jdk');
  const mirror = (from: string, to: string, keep: (name: string) => 'link' | 'dir' | 'copy' | 'skip') => {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from)) {
      const how = keep(e);
      if (how === 'link') fs.symlinkSync(path.join(from, e), path.join(to, e));
      else if (how === 'copy') fs.copyFileSync(path.join(from, e), path.join(to, e));
    }
  };
  // The launcher finds its home from its own (real) path, so bin/java is a copy, not a link.
  mirror(JDK, home, (e) => (e === 'bin' || e === 'lib' ? 'skip' : 'link'));
  mirror(path.join(JDK, 'bin'), path.join(home, 'bin'), (e) => (e === 'java' ? 'copy' : 'link'));
  fs.chmodSync(path.join(home, 'bin/java'), 0o755);
  mirror(path.join(JDK, 'lib'), path.join(home, 'lib'), (e) => (e === 'server' ? 'skip' : 'link'));
  mirror(path.join(JDK, 'lib/server'), path.join(home, 'lib/server'), (e) => (e === 'libjvm.so' ? 'skip' : 'link'));
  const r = spawnSync('objcopy', ['--remove-section', '.note.stapsdt', libjvm, path.join(home, 'lib/server/libjvm.so')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`objcopy failed: ${r.stderr}`);
  return home;
}

test('a JVM whose libjvm.so has no USDT notes: discovery says so, java-gc exits 4 naming the file', async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-nousdt-'));
  let jvm: ChildProcess | undefined;
  try {
    const home = jdkWithoutUsdt(dir);
    if (!home) return t.skip(`${JDK} is not installed`);
    const libjvm = path.join(home, 'lib/server/libjvm.so');
    assert.doesNotMatch(spawnSync('readelf', ['-n', libjvm], { encoding: 'utf8' }).stdout, /stapsdt/, 'the copy has no USDT notes');
    fs.writeFileSync(path.join(dir, 'Idle.java'), 'public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(60000); } }\n');
    jvm = spawn(path.join(home, 'bin/java'), ['-Xshare:off', '-Xint', path.join(dir, 'Idle.java')], { stdio: 'ignore' });
    const pid = jvm.pid!;
    assert.ok(await waitFor(() => fs.existsSync(`/proc/${pid}/maps`) && fs.readFileSync(`/proc/${pid}/maps`, 'utf8').includes(libjvm), 10_000), 'the JVM maps the copied libjvm.so');
    const info = listProcesses({ jvmOnly: true }).find((p) => p.pid === pid);
    assert.ok(info?.jvm, 'discovery lists it as a JVM');
    assert.equal(info.jvm.usdt, false, 'discovery says its libjvm.so has no USDT probes');
    assert.equal(info.jvm.libjvm, libjvm);
    const r = runCli(['java-gc', '--pid', String(pid)]);
    expectFailure(r, 4, new RegExp(`${libjvm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} has no \\.note\\.stapsdt section: this JDK was built without DTrace/USDT probes`), 'java-gc on a JVM without USDT');
    assert.match(r.stderr, /readelf -n/, 'says how to check');
  } finally {
    jvm?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('profile of a stripped binary: frames fall back to module+offset, and the reason is said once', async (t) => {
  if (skip) return t.skip(skip);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-stripped-'));
  let target: ChildProcess | undefined;
  try {
    const exe = path.join(dir, 'spin-stripped');
    const cc = spawnSync('cc', ['-O0', '-fno-omit-frame-pointer', path.join(repoRoot, 'test/fixtures/c/cpusplit.c'), '-o', exe], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    assert.equal(spawnSync('strip', ['--strip-all', exe]).status, 0);
    target = spawn(exe, ['20'], { stdio: 'ignore' });
    const run = startCli(['profile', '--pid', String(target.pid), '--duration', '1.5', '--json', '--no-java']);
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as ProfileResult;
    const frames = doc.stacks.flatMap((s) => s.frames).filter((f) => f.module?.endsWith('spin-stripped'));
    assert.ok(frames.length > 0, 'samples landed in the stripped binary');
    assert.ok(frames.every((f) => f.function === null && f.file === null && /^0x[0-9a-f]+$/.test(f.address)), `frames of a stripped binary have no names: ${JSON.stringify(frames.slice(0, 3))}`);
    const said = r.stderr.split('\n').filter((l) => /no debug info or symbols in .*spin-stripped: its frames show module\+offset/.test(l));
    assert.equal(said.length, 1, `said once, stderr: ${r.stderr}`);
  } finally {
    target?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
