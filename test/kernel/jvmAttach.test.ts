// The JVM attach mechanism as several sessions use it at once: each creates the trigger file
// (.attach_pidN, in the JVM's cwd, else its /tmp) and signals the JVM, so a third session started
// in the same moment finds both names taken by the other two (a CI run's three latency sessions on
// one JVM). It must wait for the listener they start, not fail; a name taken by a planted link
// stays refused at once (attacks.test.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jcmd } from '../../extension/sys/jvm/attach';
import { kernelSkipReason, waitFor } from '../helpers';
import { jdk, noJdkReason } from './gcWorkload';

const skip = kernelSkipReason() ?? noJdkReason;
let work = '';
let jvm: ChildProcess | undefined;

before(() => {
  if (skip) return;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-attach-'));
  fs.writeFileSync(path.join(work, 'Idle.java'), 'public class Idle { public static void main(String[] a) throws Exception { System.out.println("ready"); Thread.sleep(120_000); } }\n');
  const r = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', work, path.join(work, 'Idle.java')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
after(() => {
  jvm?.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("both trigger names taken by another client's attach under way: this one waits for the listener they start, and leaves their files", { skip, timeout: 60_000 }, async () => {
  // its cwd is `work`, so a trigger left behind would show there
  jvm = spawn(path.join(jdk!.home, 'bin', 'java'), ['-Xmx32m', '-cp', work, 'Idle'], { cwd: work, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  jvm.stdout!.on('data', (d) => (out += d));
  assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
  const pid = jvm.pid!;
  assert.ok(!fs.existsSync(`/tmp/.java_pid${pid}`), 'no attach listener yet');
  // the other clients' triggers: regular files of the JVM's owner, as jcmd or a second session makes them
  const theirs = [path.join(work, `.attach_pid${pid}`), `/tmp/.attach_pid${pid}`];
  for (const f of theirs) fs.writeFileSync(f, '', { flag: 'wx', mode: 0o660 });
  try {
    const answer = await jcmd(pid, 'VM.version', { timeoutMs: 20_000 });
    assert.match(answer, /OpenJDK|HotSpot/);
    for (const f of theirs) assert.ok(fs.existsSync(f), `${f}: another client's trigger is left to it`);
  } finally {
    for (const f of theirs) fs.rmSync(f, { force: true });
  }
});

test("a stale attach socket of an earlier JVM with the same pid (SIGKILLed, pids wrapped): the listener is started anyway", { skip, timeout: 60_000 }, async () => {
  const j = spawn(path.join(jdk!.home, 'bin', 'java'), ['-Xmx32m', '-cp', work, 'Idle'], { cwd: work, stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    let out = '';
    j.stdout!.on('data', (d) => (out += d));
    assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
    const sock = `/tmp/.java_pid${j.pid}`;
    assert.ok(!fs.existsSync(sock), 'no attach listener yet');
    // what a killed JVM leaves: a socket file bound by no one, of the same owner
    const made = spawnSync('python3', ['-c', `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(sock)})`], { encoding: 'utf8' });
    assert.equal(made.status, 0, `${made.stderr} ${spawnSync('ls', ['-la', sock], { encoding: 'utf8' }).stdout} ${fs.readFileSync(`/proc/${j.pid}/cmdline`, 'utf8')}`);
    const staleIno = fs.statSync(sock).ino;
    assert.match(await jcmd(j.pid!, 'VM.version', { timeoutMs: 20_000 }), /OpenJDK|HotSpot/);
    assert.notEqual(fs.statSync(sock).ino, staleIno, 'the JVM made its own socket in place of the stale one');
  } finally {
    j.kill('SIGKILL');
  }
});
