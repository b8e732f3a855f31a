// Attacks on java-gc's check against a JVM's own counters: root reads the hsperfdata file of a JVM
// that an unprivileged user owns, so the user can put anything in its place. A link to a file of
// root's (holding a forged hsperfdata whose count would show if root read it), a FIFO (which
// would hold a blocking open forever) and a 2 GiB file: each is refused, promptly, with the reason,
// and the owner's JVM is still traced exactly (its GCs against its own beans).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JavaGcResult } from '../../extension/protocol/javaGc';
import { repoRoot, startCli, waitFor } from '../helpers';
import { attackSkipReason, asUser, makeUser, removeUser, spawnAsUser, type AttackUser } from './attackKit';
import { jdk, noJdkReason } from './gcWorkload';

const skip = attackSkipReason(['mkfifo', 'truncate']) ?? noJdkReason;
// A count no real figure of the run is: a short one (4242 once) turned up inside a duration.
const FORGED = 7_351_928_641;
const forgedShown = (text: string): boolean => new RegExp(`(?<![0-9])${FORGED}(?![0-9])`).test(text);

/** A well-formed hsperfdata buffer whose young collector claims FORGED collections. */
function forgedHsperf(): Buffer {
  const name = Buffer.from('sun.gc.collector.0.invocations\0', 'latin1');
  const entry = Buffer.alloc(64);
  entry.writeInt32LE(64, 0);
  entry.writeInt32LE(20, 4);
  entry.writeInt32LE(0, 8);
  entry[12] = 'J'.charCodeAt(0);
  entry.writeInt32LE(56, 16);
  name.copy(entry, 20);
  entry.writeBigInt64LE(BigInt(FORGED), 56);
  const head = Buffer.alloc(32);
  head.writeUInt32BE(0xcafec0c0, 0);
  head[4] = 1;
  head[5] = 2;
  head.writeInt32LE(96, 8);
  head.writeInt32LE(32, 24);
  head.writeInt32LE(1, 28);
  return Buffer.concat([head, entry]);
}

describe('attacks on the JVM counter check (hsperfdata read by root)', { skip }, () => {
  let user: AttackUser | undefined;
  let work = '';
  let rootOnly = '';
  const children: ChildProcess[] = [];

  before(() => {
    user = makeUser(`ebpfH${process.pid % 100000}`);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-hsattack-'));
    fs.chmodSync(work, 0o755);
    const r = spawnSync(path.join(jdk!.home, 'bin', 'javac'), ['-d', work, path.join(repoRoot, 'test', 'fixtures', 'java', 'GcWorkload.java')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    rootOnly = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-rootonly-'));
    fs.chmodSync(rootOnly, 0o700);
    fs.writeFileSync(path.join(rootOnly, 'secret'), forgedHsperf(), { mode: 0o600 });
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (user) fs.rmSync(`/tmp/hsperfdata_${user.name}`, { recursive: true, force: true });
    removeUser(user);
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(rootOnly, { recursive: true, force: true });
  });

  const swaps: Record<string, { cmd: (file: string) => string[]; reason: RegExp }> = {
    'a link to a file of root\'s': { cmd: (f) => ['sh', '-c', `rm -f ${f} && ln -s ${rootOnly}/secret ${f}`], reason: /cannot be opened as its owner \(ELOOP/ },
    'a FIFO': { cmd: (f) => ['sh', '-c', `rm -f ${f} && mkfifo ${f}`], reason: /is not a regular file/ },
    'a 2 GiB file': { cmd: (f) => ['sh', '-c', `rm -f ${f} && truncate -s 2G ${f}`], reason: /2147483648 bytes, more than an hsperfdata file holds/ },
  };

  for (const [what, swap] of Object.entries(swaps)) {
    test(`the owner swaps its hsperfdata file for ${what}: refused with the reason, its GCs still traced exactly`, { timeout: 60_000 }, async (t) => {
      const child = spawnAsUser(user!, [path.join(jdk!.home, 'bin', 'java'), '-XX:+UseSerialGC', '-Xmx64m', '-Xmn4m', '-cp', work, 'GcWorkload', '2', '96', '300'], {}, children);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      assert.ok(await waitFor(() => out.includes('ready'), 20_000), 'the JVM did not start');
      const file = `/tmp/hsperfdata_${user!.name}/${child.pid}`;
      assert.ok(fs.existsSync(file), `${file} exists`);
      const s = asUser(user!, swap.cmd(file));
      assert.equal(s.status, 0, s.stderr);
      const base = /young=(\d+) full=(\d+)/.exec(out)!;
      const cli = startCli(['java-gc', '--pid', String(child.pid), '--json', '--verbose']);
      assert.ok(await waitFor(() => cli.stderr().includes(`pid ${child.pid}: its own counters`) || cli.child.exitCode !== null, 10_000), `the counters were not looked at: ${cli.stderr()}`);
      child.stdin!.write('go\n');
      assert.ok(await waitFor(() => out.includes('done'), 30_000), 'the JVM did not finish');
      const t0 = Date.now();
      const r = await cli.done;
      t.diagnostic(`ended ${Date.now() - t0} ms after the JVM's last GC; ${cli.stderr().split('\n').find((l) => l.includes('own counters'))}`);
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as JavaGcResult;
      const check = result.jvmCounts?.find((c) => c.pid === child.pid);
      assert.ok(check);
      assert.equal(check.verdict, 'unread', check.message);
      assert.match(check.message, swap.reason);
      assert.ok(!forgedShown(r.stdout) && !forgedShown(r.stderr), 'nothing of root\'s file reached the output');
      // The owner's JVM is still traced: every collection, as its beans count them.
      const done = /done young=(\d+) full=(\d+)/.exec(out)!;
      const young = Number(done[1]) - Number(base[1]);
      const full = Number(done[2]) - Number(base[2]);
      assert.equal(result.events.filter((e) => e.collector === 'Copy').length, young);
      assert.equal(result.events.filter((e) => e.collector === 'MarkSweepCompact').length, full);
      assert.ok(young > 5 && full === 2, `young ${young}, full ${full}`);
    });
  }
});
