// Attacks on who a session acts on, through the root-owned install (attackKit.ts):
//  - a reused pid: alice profiles her JVM with the Java agent (whose BPF program signals the
//    target's threads with SIGPROF), the JVM dies, and mallory's next process is given that pid
//    while the profile is still attached; SIGPROF's default action would kill it. The pid is
//    handed over through /proc/sys/kernel/ns_last_pid (the test is root: a deterministic stand-in
//    for cycling the pid space, which takes ~2.4 s here), within milliseconds of the JVM's death.
//  - a dead tracer: the helper is SIGKILLed while the Java agent's CPU profile, heap sampler and
//    lock tracer run in alice's JVM; the agent must stop writing into the JVM's /tmp by itself.
//  - a reader that stops reading (the helper SIGSTOPped, its lock still held): each agent file
//    stops at the agent's limit (lowered through the JVM's environment for the test).
// The owner still gets Java frames from her JVM in the same run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as proto from '../../extension/protocol/protocol';
import type { ProfileResult } from '../../extension/protocol/profile';
import { AttackBed, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser, type Helper } from './attackKit';
import { distDir, repoRoot, sleep, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const TAG = process.pid % 100000;

function skipReason(): string | undefined {
  const why = attackSkipReason(['gcc']);
  if (why) return why;
  if (!fs.existsSync(`${JDK}/bin/javac`)) return `no JDK 17 at ${JDK} (apt-get install openjdk-17-jdk-headless)`;
  if (!fs.existsSync(path.join(distDir, 'libebpf-studio-jvmagent.so'))) return 'the JVM agent is not built: npm run build with a JDK';
  if (!fs.existsSync('/proc/sys/kernel/ns_last_pid')) return 'no /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE): the pid cannot be handed over';
  return undefined;
}
const skip = skipReason();

// mallory's process: keeps two threads on the CPU (the CPU profiler samples it) and blocks in a
// system call every millisecond (the off-CPU tracer's Java join signals on the way back), with
// SIGPROF's default action, so one signal kills it. Prints "alive" after `seconds` and exits 0.
const VICTIM_C = `
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void *burn(void *end) {
  while (now() < *(double *)end) {
    for (int i = 0; i < 200000; i++) sink += i;
    usleep(1000);
  }
  return NULL;
}
int main(int argc, char **argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 3);
  pthread_t t;
  pthread_create(&t, NULL, burn, &end);
  burn(&end);
  pthread_join(t, NULL);
  printf("alive\\n");
  return 0;
}
`;

let bed: AttackBed;
let alice: AttackUser | undefined;
let mallory: AttackUser | undefined;
let classes = '';
let victimBin = '';

/** alice's AgentSplit JVM; resolves once its libjvm is mapped and it is past its startup. */
async function aliceJvm(env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; pid: number }> {
  const cwd = bed.userDir(alice!, `jvm-${Math.random().toString(16).slice(2, 8)}`);
  const child = spawnAsUser(alice!, [`${JDK}/bin/java`, '-cp', classes, 'AgentSplit', '120', 'churn'], { cwd, env: { PATH: '/usr/bin:/bin', HOME: cwd, ...env } }, bed.children);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const pid = child.pid!; // setpriv execs the JVM: same pid
  const mapped = await waitFor(() => {
    try {
      return /\/libjvm\.so$/m.test(fs.readFileSync(`/proc/${pid}/maps`, 'utf8'));
    } catch {
      return false;
    }
  }, 20_000);
  assert.ok(mapped, `alice's JVM started: ${out}`);
  await sleep(1200); // past its startup, so SIGQUIT reaches the signal dispatcher
  return { child, pid };
}

async function startSession(h: Helper, tracer: string, options: object): Promise<string> {
  const r = (await h.conn.sendRequest(proto.sessionStart, { tracer, options } as never)) as proto.SessionStartResult;
  return r.sessionId;
}

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * mallory's victim program started so that it gets `pid`: ns_last_pid set to pid - 1 right before
 * the fork (other processes on the machine may take it first: then again, a few times).
 */
async function malloryAt(pid: number, seconds: number): Promise<{ child: ChildProcess; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> } | undefined> {
  for (let attempt = 0; attempt < 20; attempt++) {
    fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    const child = spawnAsUser(mallory!, [victimBin, String(seconds)], {}, bed.children);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }>((r) => child.once('exit', (code, signal) => r({ code, signal, out })));
    if (child.pid === pid) return { child, done };
    child.kill('SIGKILL');
    await done;
  }
  return undefined;
}

const samplesIn = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => s.frames.some((f) => f.function !== null && re.test(f.function))).reduce((n, s) => n + s.count, 0);

describe('attacks on pids and on a dead tracer (kernel)', { skip }, () => {
  before(() => {
    bed = new AttackBed('pids');
    alice = makeUser(`ebpfA${TAG}`);
    mallory = makeUser(`ebpfM${TAG}`);
    classes = path.join(bed.base, 'classes');
    fs.mkdirSync(classes, { mode: 0o755 });
    const jc = spawnSync(`${JDK}/bin/javac`, ['-encoding', 'UTF-8', '-d', classes, path.join(repoRoot, 'test/fixtures/java/AgentSplit.java')], { encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
    spawnSync('chmod', ['-R', 'a+rX', classes]);
    const src = path.join(bed.base, 'victim.c');
    fs.writeFileSync(src, VICTIM_C);
    victimBin = path.join(bed.base, 'victim');
    const cc = spawnSync('gcc', ['-O1', '-pthread', '-o', victimBin, src], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    fs.chmodSync(victimBin, 0o755);
  });

  after(() => {
    bed?.dispose();
    removeUser(alice);
    removeUser(mallory);
  });

  for (const mode of [
    { name: 'CPU profile', options: { java: 'agent', frequency: 199 } },
    { name: 'off-CPU profile', options: { java: 'agent', event: 'offcpu' } },
  ]) {
    test(`a reused pid: mallory's process that gets the pid of alice's JVM under a --java agent ${mode.name} gets no SIGPROF`, { timeout: 120_000 }, async (t) => {
      const jvm = await aliceJvm();
      const h = bed.helperFor(alice!);
      try {
        const id = await startSession(h, mode.name.startsWith('CPU') ? 'profile' : 'offcpu', { pid: jvm.pid, ...mode.options });
        await sleep(1500); // the agent's handler is in, the BPF program signals the JVM's threads
        const exited = new Promise((r) => jvm.child.once('exit', r));
        jvm.child.kill('SIGKILL');
        await exited; // reaped: the pid is free
        const killedAt = Date.now();
        const m = await malloryAt(jvm.pid, 3);
        if (!m) return t.skip(`pid ${jvm.pid} could not be handed to mallory's process (the machine's other processes took it first)`);
        const startedAfterMs = Date.now() - killedAt;
        const endedNote = () => h.notes.some((n) => JSON.stringify(n).includes(id) && JSON.stringify(n).includes('target-exited'));
        const endedBeforeMallory = endedNote();
        const end = await m.done;
        t.diagnostic(`mallory's process got pid ${jvm.pid} ${startedAfterMs} ms after the JVM died (the session had ${endedBeforeMallory ? 'already' : 'not yet'} ended); it exited with ${end.signal ?? end.code}`);
        assert.equal(end.signal, null, `mallory's process was killed by ${end.signal}`);
        assert.equal(end.code, 0);
        assert.match(end.out, /alive/);
        assert.ok(await waitFor(endedNote, 5000), `alice's session ended when her JVM exited: ${JSON.stringify(h.notes).slice(-600)}`);
      } finally {
        await h.close();
        jvm.child.kill('SIGKILL');
      }
    });
  }

  test('a dead tracer: the helper SIGKILLed mid-session; the Java agent in alice\'s JVM stops writing its profile, heap and lock files; the owner still gets Java frames', { timeout: 120_000 }, async (t) => {
    const jvm = await aliceJvm();
    const files = () => fs.readdirSync('/tmp').filter((f) => new RegExp(`^\\.ebpf-studio-(jvm|heap|locks)-${jvm.pid}-`).test(f));
    const sizes = () => Object.fromEntries(files().map((f) => [f, fs.statSync(path.join('/tmp', f), { throwIfNoEntry: false })?.size ?? -1]));
    try {
      const h = bed.helperFor(alice!);
      await startSession(h, 'profile', { pid: jvm.pid, java: 'agent', frequency: 199 });
      await startSession(h, 'java-heap', { pid: jvm.pid, intervalBytes: 4096 });
      await startSession(h, 'java-locks', { pid: jvm.pid });
      await sleep(1500);
      const first = sizes();
      await sleep(1000);
      const second = sizes();
      t.diagnostic(`while the helper reads: ${JSON.stringify(second)}`);
      assert.equal(Object.keys(second).length, 3, `three agent files in the JVM's /tmp: ${JSON.stringify(second)}`);
      for (const [f, n] of Object.entries(second)) assert.ok(n > (first[f] ?? 0), `${f} grows while read (${first[f]} → ${n})`);
      h.child.kill('SIGKILL');
      const killedAt = Date.now();
      const gone = await waitFor(() => files().length === 0, 5000);
      t.diagnostic(`after the helper's SIGKILL: ${gone ? `every agent file removed by the agent in ${Date.now() - killedAt} ms` : `left ${JSON.stringify(sizes())}`}`);
      assert.ok(gone, `the agent stopped and removed its files: ${JSON.stringify(sizes())}`);
      await sleep(1000);
      assert.deepEqual(files(), [], 'nothing written afterwards');
      assert.ok(alive(jvm.pid), 'alice\'s JVM lives on');
      // Control: the same JVM, the agent loaded and idle: the owner's profile gives Java frames.
      const h2 = bed.helperFor(alice!);
      try {
        const id = await startSession(h2, 'profile', { pid: jvm.pid, java: 'agent', frequency: 199 });
        await sleep(2500);
        const r = ((await h2.conn.sendRequest(proto.sessionStop, { sessionId: id })) as { result: ProfileResult }).result;
        const heavy = samplesIn(r, /^AgentSplit\.heavy$/);
        t.diagnostic(`owner's --java agent profile after the dead tracer: ${r.samples} samples, ${heavy} in AgentSplit.heavy`);
        assert.ok(heavy > 0, `Java frames for the JVM's owner: ${h2.stderr().slice(-1500)}`);
      } finally {
        await h2.close();
      }
    } finally {
      jvm.child.kill('SIGKILL');
    }
  });

  test('a reader that stops reading: with the helper SIGSTOPped the agent\'s files stop growing at their limit, and the session ends normally once it runs again', { timeout: 120_000 }, async (t) => {
    const LIMIT = 64 << 10;
    const jvm = await aliceJvm({ EBPF_STUDIO_JVMAGENT_MAX_FILE_BYTES: String(LIMIT) });
    const files = () => fs.readdirSync('/tmp').filter((f) => new RegExp(`^\\.ebpf-studio-(jvm|heap)-${jvm.pid}-`).test(f));
    const sizes = () => files().map((f) => fs.statSync(path.join('/tmp', f), { throwIfNoEntry: false })?.size ?? -1);
    const h = bed.helperFor(alice!);
    try {
      const ids = [await startSession(h, 'profile', { pid: jvm.pid, java: 'agent', frequency: 199 }), await startSession(h, 'java-heap', { pid: jvm.pid, intervalBytes: 1024 })];
      await sleep(500);
      h.child.kill('SIGSTOP');
      // full within a few seconds at these rates; then nothing more
      const full = await waitFor(() => sizes().length === 2 && sizes().every((n) => n >= LIMIT), 20_000, 200);
      // a drain that crossed the limit finishes its write (at most one drain past it): then still
      let last = '';
      await waitFor(() => last === (last = sizes().join(',')), 5_000, 300);
      const atLimit = sizes();
      await sleep(1500);
      const later = sizes();
      t.diagnostic(`limit ${LIMIT} B: files at ${atLimit.join(', ')} B, 1.5 s later ${later.join(', ')} B`);
      assert.ok(full, `both files reached the limit: ${atLimit.join(', ')}`);
      assert.deepEqual(later, atLimit, 'nothing written past the limit');
      for (const n of later) assert.ok(n < LIMIT + (256 << 10), `${n} B: at most one drain past the limit`);
      assert.ok(alive(jvm.pid), 'alice\'s JVM lives on');
      h.child.kill('SIGCONT');
      for (const id of ids) await h.conn.sendRequest(proto.sessionStop, { sessionId: id });
      assert.deepEqual(files(), [], 'the helper removed both files at stop');
    } finally {
      h.child.kill('SIGCONT');
      await h.close();
      jvm.child.kill('SIGKILL');
    }
  });
});
