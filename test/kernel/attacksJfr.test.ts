// Attacks on Record JFR (`ebpf-studio jfr --record/--dump`, the editor's Record JFR… and Dump
// commands go through the same sys/jvm/jfrRecord.ts): an unprivileged user aims them at root's JVM
// and at another user's JVM. Each attempt must be refused before the JVM is asked anything: no
// recording is started in the victim JVM (JFR.check, asked as root, lists the same recordings before
// and after), no file lands in its /tmp or at the attacker's --out, no attach trigger is left. In
// the same test the legitimate owners record their own JVMs and get samples.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { asUser, attackSkipReason, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';
import { cliJs, runCli, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = (process.geteuid?.() === 0 ? undefined : 'needs root: it creates unprivileged users') ?? attackSkipReason() ?? (!fs.existsSync(`${JDK}/bin/javac`) ? `no JDK 17 at ${JDK}` : undefined);

describe('attacks on Record JFR: another user\'s JVM', { skip, timeout: 180_000 }, () => {
  const tag = process.pid % 100000;
  let mallory: AttackUser | undefined;
  let bob: AttackUser | undefined;
  let dir = '';
  const children: ChildProcess[] = [];
  let rootJvm = 0;
  let bobJvm = 0;

  /** The JVM's recordings by number and name (sizes and durations grow on their own). */
  const jfrCheck = (pid: number) => {
    // jcmd as the JVM's owner (the JDK's attach listener talks to its own uid)
    const cmd = [`${JDK}/bin/jcmd`, String(pid), 'JFR.check'];
    const out = pid === bobJvm ? asUser(bob!, cmd, { cwd: dir }).stdout : spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout: 20_000 }).stdout;
    return (out.match(/^Recording \d+: name=\S+/gm) ?? []).join('\n');
  };
  const leftovers = (pid: number) => fs.readdirSync(`/proc/${pid}/root/tmp`).filter((n) => /^ebpf-studio-\d+-\d+/.test(n) || n.startsWith(`.attach_pid`));
  const samples = (f: string) => Number(/^\s*jdk\.ExecutionSample\s+(\d+)/m.exec(spawnSync(`${JDK}/bin/jfr`, ['summary', f], { encoding: 'utf8' }).stdout)?.[1] ?? 0);

  before(async () => {
    mallory = makeUser(`ebpfJm${tag}`);
    bob = makeUser(`ebpfJb${tag}`);
    dir = fs.mkdtempSync('/var/tmp/ebpf-jfr-attack-');
    fs.chmodSync(dir, 0o755);
    const jc = spawnSync(`${JDK}/bin/javac`, ['-d', dir, path.join(__dirname, '../fixtures/java/JfrWorkload.java')], { encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
    // both victims record continuously, as production JVMs do (so --dump has something to take)
    const args = ['-XX:StartFlightRecording', '-cp', dir, 'JfrWorkload', '120'];
    const r = spawn(`${JDK}/bin/java`, args, { stdio: 'ignore', cwd: dir });
    children.push(r);
    rootJvm = r.pid!;
    bobJvm = spawnAsUser(bob, [`${JDK}/bin/java`, ...args], { cwd: dir }, children).pid!;
    // spawnAsUser's pid is setpriv's, which execs java: the same process
    assert.ok(await waitFor(() => fs.existsSync(`/tmp/hsperfdata_root/${rootJvm}`) && fs.existsSync(`/tmp/hsperfdata_${bob!.name}/${bobJvm}`), 20_000), 'both JVMs started');
    // A socket file at their path now is an earlier JVM's of the same pid (killed, pids wrapped):
    // the JDK's jcmd would connect to it, be refused and never signal the new JVM.
    for (const p of [rootJvm, bobJvm]) fs.rmSync(`/tmp/.java_pid${p}`, { force: true });
    for (const p of [rootJvm, bobJvm]) assert.ok(await waitFor(() => jfrCheck(p) !== '', 30_000, 500), `pid ${p} records: ${jfrCheck(p)}`);
  });

  after(() => {
    for (const c of children) c.kill('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    removeUser(mallory);
    removeUser(bob);
  });

  test('mallory cannot record or dump root\'s or bob\'s JVM; root and bob record their own', () => {
    const before = new Map([rootJvm, bobJvm].map((p) => [p, jfrCheck(p)]));
    for (const [victim, pid] of [['root', rootJvm], ['bob', bobJvm]] as const) {
      for (const mode of ['--record', '--dump']) {
        const out = `/tmp/ebpf-jfr-mallory-${tag}-${victim}${mode}.jfr`;
        const r = asUser(mallory!, [process.execPath, cliJs, 'jfr', mode, String(pid), '--duration', '1', '--out', out], { timeoutMs: 60_000 });
        assert.equal(r.status, 3, `${mode} on ${victim}'s JVM: exit ${r.status} ${r.stderr}`);
        assert.match(r.stderr, /refused|needs root|not yours/, r.stderr);
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
        assert.ok(!fs.existsSync(out), `${out} was written`);
        console.log(`  mallory ${mode} ${victim}'s JVM: exit 3: ${r.stderr.trim().split('\n')[0].slice(0, 150)}`);
      }
    }
    for (const pid of [rootJvm, bobJvm]) {
      assert.equal(jfrCheck(pid), before.get(pid), `pid ${pid}: its recordings changed`);
      assert.deepEqual(leftovers(pid), [], `pid ${pid}: files left in its /tmp`);
    }
    // the owners, in the same test
    const bobOut = `/tmp/ebpf-jfr-bob-${tag}.jfr`;
    const b = asUser(bob!, [process.execPath, cliJs, 'jfr', '--record', String(bobJvm), '--duration', '2', '--out', bobOut], { timeoutMs: 60_000 });
    assert.equal(b.status, 0, b.stderr);
    const rootOut = path.join(dir, 'root.jfr');
    const r = runCli(['jfr', '--dump', String(rootJvm), '--out', rootOut], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    try {
      assert.equal(fs.statSync(bobOut).uid, bob!.uid, 'bob owns his recording');
      assert.ok(samples(bobOut) > 0 && samples(rootOut) > 0);
      console.log(`  bob recorded his JVM (${samples(bobOut)} samples), root dumped its own (${samples(rootOut)} samples)`);
    } finally {
      fs.rmSync(bobOut, { force: true });
    }
    assert.deepEqual(leftovers(bobJvm), []);
  });
});
