// Attacks by a local, unprivileged user on the root-owned install, tried for real: a user made
// with useradd asks the installed helper (started as sudo would start it for them) for what the
// threat model in SECURITY.md says it must not do, and plants links, namespaces and folders where
// root works. Every attack must fail with nothing of root's changed (hashes, owners and existence
// of root's files compared before and after), while the same features keep working for their
// legitimate owner: the user's own JVM profiled with --java agent (also in its own user and mount
// namespace, chrooted) and a preload leak trace of the user's own program.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as proto from '../../extension/protocol/protocol';
import { bpfVerify } from '../../extension/protocol/authoring';
import { runMaps, runStart } from '../../extension/protocol/privilegedRun';
import type { ProfileResult } from '../../extension/protocol/profile';
import type { MemleakResult } from '../../extension/protocol/memleak';
import { chooseNode, installPlan, installReport } from '../../extension/privilege/installPlan';
import { AttackBed, attackSkipReason, asUser as asUserKit, makeUser, removeUser, type AttackUser } from './attackKit';
import { untrustedReason } from '../../extension/privilege/trustedPath';
import { distDir, repoRoot, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const USER = `ebpfatk${process.pid % 100000}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function skipReason(): string | undefined {
  const why = attackSkipReason(['unshare', 'gcc']);
  if (why) return why;
  if (!fs.existsSync(`${JDK}/bin/javac`)) return `no JDK 17 at ${JDK} (apt-get install openjdk-17-jdk-headless)`;
  if (!fs.existsSync(path.join(distDir, 'libebpf-studio-jvmagent.so')) || !fs.existsSync(path.join(distDir, 'libebpf-studio-preload.so'))) return 'the JVM agent or the leak interposer is not built: npm run build with a JDK and gcc';
  return undefined;
}
const skip = skipReason();

let user: AttackUser | undefined;
let bed: AttackBed;
let uid = 0;
let gid = 0;
let base = ''; // root-owned 0755 folder for the install, the victims and the user's folders
let installRoot = '';
let launcher = '';
let runnerLauncher = '';
const children: ChildProcess[] = [];

const fingerprint = () => bed.fingerprint();
const victim = (name: string, content: string, mode = 0o600) => bed.victim(name, content, mode);
const installedHelper = () => bed.helperFor(user!);
const asUser = (cmd: string[], opts: { cwd?: string } = {}) => asUserKit(user!, cmd, opts);
const userDir = (name: string, mode = 0o755) => bed.userDir(user!, name, mode);

/** The AgentSplit fixture JVM as USER in `cwd` (or `argv` given whole); resolves once its libjvm is mapped. */
async function userJvm(cwd: string, argv?: string[]): Promise<{ child: ChildProcess; pid: number }> {
  const args = argv ?? [`${JDK}/bin/java`, '-cp', path.join(base, 'classes'), 'AgentSplit', '120'];
  const child = spawn('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', HOME: cwd } });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  let pid = 0;
  const jvmUnder = (p: number): number => {
    try {
      if (/\/libjvm\.so$/m.test(fs.readFileSync(`/proc/${p}/maps`, 'utf8'))) return p;
      for (const k of fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)) {
        const j = jvmUnder(k);
        if (j) return j;
      }
    } catch {
      /* not yet */
    }
    return 0;
  };
  await waitFor(() => (pid = jvmUnder(child.pid!)) > 0, 20_000);
  assert.ok(pid > 0, `the JVM of ${USER} started: ${out}`);
  await sleep(1200); // past its startup, so SIGQUIT reaches the signal dispatcher
  return { child, pid };
}

const fnIndex = (s: ProfileResult['stacks'][number], re: RegExp) => s.frames.findIndex((f) => f.function !== null && re.test(f.function));
const samplesWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => fnIndex(s, re) >= 0).reduce((n, s) => n + s.count, 0);

async function profileThrough(h: ReturnType<typeof installedHelper>, pid: number, java: 'agent' | 'perfmap', ms = 2500): Promise<ProfileResult> {
  const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid, java, frequency: 199 } } as never)) as proto.SessionStartResult;
  await sleep(ms);
  return ((await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: ProfileResult }).result;
}

describe('attacks by an unprivileged user on the root-owned install (kernel)', { skip }, () => {
  before(() => {
    user = makeUser(USER);
    ({ uid, gid } = user);
    bed = new AttackBed('attacks');
    ({ base, installRoot, launcher, runnerLauncher } = bed);
    // The Java fixture, readable by the user.
    const jc = spawnSync(`${JDK}/bin/javac`, ['-d', path.join(base, 'classes'), path.join(repoRoot, 'test/fixtures/java/AgentSplit.java')], { encoding: 'utf8' });
    assert.equal(jc.status, 0, jc.stderr);
  });

  after(() => {
    for (const c of children) c.kill('SIGKILL');
    bed?.dispose();
    removeUser(user);
  });

  test('the install holds everything the features need, and doctor says so', () => {
    const report = installReport(installRoot, distDir);
    assert.equal(report.version, '9.9.9-attack');
    assert.deepEqual(report.missing, [], `the install lacks ${report.missing.join(', ')}`);
    for (const f of ['libebpf-studio-jvmagent.so', 'libebpf-studio-preload.so', 'runner.js', 'ebpf-studio-launch']) {
      const st = fs.statSync(path.join(report.dir!, f));
      assert.equal(st.uid, 0, f);
    }
  });

  test('attack 1: root command, bpftrace and the user\'s own BPF object through the helper are refused; its NOPASSWD rule does not reach the runner', async (t) => {
    const marker = path.join(base, 'root-only', 'ran-as-root');
    const shadowCopy = path.join(base, 'shadow-copy');
    const h = installedHelper();
    try {
      await assert.rejects(h.conn.sendRequest(runStart, { kind: 'loader', executable: '/bin/sh', args: ['-c', `id > ${marker}; head /etc/shadow > ${shadowCopy}`], cwd: '/' }), /refused: run\/start .*runner/);
      await assert.rejects(h.conn.sendRequest(runStart, { kind: 'bpftrace', script: '/etc/hostname', cwd: '/' }), /refused: run\/start/);
      await assert.rejects(h.conn.sendRequest(runMaps, { runId: 1 }), /refused/);
      const obj = path.join(distDir, 'bpf', 'selftest.bpf.o');
      const sha = crypto.createHash('sha256').update(fs.readFileSync(obj)).digest('hex');
      await assert.rejects(h.conn.sendRequest(bpfVerify, { objectPath: obj, confirmedSha256: sha }), /refused: bpf\/verify/);
      await assert.rejects(h.conn.sendRequest(proto.sessionStart, { tracer: 'bpf-run', options: { objectPath: obj, intervalMs: 1000, confirmedSha256: sha } } as never), /refused: session\/start of the bpf-run tracer/);
    } finally {
      await h.close();
    }
    assert.equal(fs.existsSync(marker), false, 'no command ran as root');
    assert.equal(fs.existsSync(shadowCopy), false, 'no shadow file was copied');
    // The suggested sudoers rule for the helper, then sudo -n for the runner: it asks for a password.
    if (!fs.existsSync('/usr/bin/sudo')) t.diagnostic('sudo is not installed: the NOPASSWD part is not tried (apt-get install sudo)');
    else {
      const sudoers = `/etc/sudoers.d/${USER}`;
      fs.writeFileSync(sudoers, `${USER} ALL=(root) NOPASSWD: ${launcher}\n`, { mode: 0o440 });
      try {
        const viaRule = asUser(['sudo', '-n', runnerLauncher]);
        assert.notEqual(viaRule.status, 0, 'the runner does not start without a password');
        assert.match(viaRule.stderr, /password is required|not allowed|may not run/);
        const helperOk = asUser(['sudo', '-n', launcher]);
        assert.doesNotMatch(helperOk.stderr, /password is required/, 'the helper rule itself works (control)');
      } finally {
        fs.rmSync(sudoers, { force: true });
      }
    }
  });

  test('attacks 2 and variants: .attach_pid as a symlink and a hardlink to root\'s file, the agent\'s output swapped for a link, perf map as a symlink to a root-only file; the owner\'s --java agent profile still works', { timeout: 90_000 }, async (t) => {
    const truncMe = victim('truncate-me', 'root data that must keep its bytes\n', 0o644);
    const secret = victim('perf-secret', '7f0000000000 1000 SECRET_ROOT_SYMBOL\n', 0o600);
    const before = fingerprint();
    const cwd = userDir('jvm-cwd');
    const jvm = await userJvm(cwd);
    const nspid = jvm.pid;
    // The user plants links where root used to create files: the attach trigger in the JVM's cwd
    // (symlink), in /tmp (a hardlink, as a user could make where protected_hardlinks is off), and its perf map.
    asUser(['ln', '-s', truncMe, path.join(cwd, `.attach_pid${nspid}`)]);
    const tmpTrigger = `/tmp/.attach_pid${nspid}`;
    fs.linkSync(truncMe, tmpTrigger);
    const perfMap = `/tmp/perf-${nspid}.map`;
    asUser(['ln', '-s', secret, perfMap]);
    const h = installedHelper();
    try {
      // Both triggers taken by links: the attach is refused, and root wrote nothing through them.
      await assert.rejects(profileThrough(h, jvm.pid, 'agent', 500), /attach trigger|EEXIST|refused/);
      assert.deepEqual(fingerprint(), before, 'root\'s files are unchanged after the refused attach');
      fs.unlinkSync(tmpTrigger);
      // Only the cwd symlink left: the trigger goes to /tmp as the user, and the owner gets Java frames.
      const r = await profileThrough(h, jvm.pid, 'agent');
      const heavy = samplesWith(r, /^AgentSplit\.heavy$/);
      t.diagnostic(`owner's --java agent profile through the installed helper: ${r.samples} samples, ${heavy} in AgentSplit.heavy`);
      assert.ok(heavy > 0, `Java frames for the JVM's owner: ${h.stderr().slice(-1500)}`);
      // The agent's output file swapped for a link to root's file while the profile runs: read and
      // removed as the user, so root's file keeps its bytes and only the link goes.
      const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid: jvm.pid, java: 'agent', frequency: 199 } } as never)) as proto.SessionStartResult;
      let out = '';
      await waitFor(() => (out = fs.readdirSync('/tmp').find((f) => f.startsWith(`.ebpf-studio-jvm-${nspid}-`)) ?? '') !== '', 10_000);
      assert.ok(out, 'the agent writes its output file in the JVM\'s /tmp');
      assert.equal(asUser(['sh', '-c', `mv /tmp/${out} /tmp/${out}.moved && ln -s ${truncMe} /tmp/${out}`]).status, 0);
      await sleep(800);
      await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId });
      assert.equal(fs.existsSync(`/tmp/${out}`), false, 'the link was removed (as the user)');
      fs.rmSync(`/tmp/${out}.moved`, { force: true });
      assert.deepEqual(fingerprint(), before, 'root\'s file behind the swapped agent output is unchanged');
      // perf map mode: the JVM (as the user) and root both refuse the planted link; no root secret comes back.
      const pm = await profileThrough(h, jvm.pid, 'perfmap', 1500);
      assert.ok(!JSON.stringify(pm).includes('SECRET_ROOT_SYMBOL'), 'the root-only file behind the perf map link was not read');
      assert.ok(!JSON.stringify(h.notes).includes('SECRET_ROOT_SYMBOL'));
    } finally {
      await h.close();
      jvm.child.kill('SIGKILL');
      for (const f of [perfMap, tmpTrigger]) fs.rmSync(f, { force: true });
    }
    assert.deepEqual(fingerprint(), before, 'root\'s files kept content, owner, mode and existence');
  });

  test('attack 3: a JVM in its own user and mount namespace, chrooted, with /tmp an absolute symlink to a root folder: the agent lands inside its root, not on the host', { timeout: 90_000 }, async (t) => {
    if (asUser(['unshare', '-Urm', 'true']).status !== 0) return t.skip('unprivileged user namespaces are disabled here (kernel.unprivileged_userns_clone)');
    const hostDir = path.join(base, 'host-tmp-target');
    fs.mkdirSync(hostDir, { mode: 0o755 }); // root's, writable by root only
    bed.watch(hostDir);
    const before = fingerprint();
    const box = userDir('chroot-box');
    const root = path.join(box, 'root');
    const script = [
      'set -e',
      `mkdir -p ${root}/usr ${root}/lib ${root}/lib64 ${root}/bin ${root}/etc ${root}/proc ${root}/dev ${root}/app ${root}${hostDir}`,
      `cp -r ${base}/classes/. ${root}/app/`,
      `ln -s ${hostDir} ${root}/tmp`, // absolute: inside the chroot it is the box's own folder, on the host root's
      `for d in usr lib lib64 bin etc proc dev; do [ -e /$d ] && mount --rbind /$d ${root}/$d; done`,
      `exec /usr/sbin/chroot ${root} ${JDK}/bin/java -cp /app AgentSplit 120`,
    ].join('\n');
    const jvm = await userJvm(box, ['unshare', '-Urm', 'sh', '-c', script]);
    const h = installedHelper();
    try {
      assert.equal(fs.readlinkSync(`/proc/${jvm.pid}/root/tmp`), hostDir);
      const r = await profileThrough(h, jvm.pid, 'agent');
      const heavy = samplesWith(r, /^AgentSplit\.heavy$/);
      t.diagnostic(`chrooted JVM in its own user+mount namespace: ${r.samples} samples, ${heavy} in AgentSplit.heavy`);
      assert.ok(heavy > 0, `the owner still gets Java frames: ${h.stderr().slice(-1500)}`);
      const inside = fs.readdirSync(path.join(root, hostDir.slice(1)));
      assert.ok(inside.some((f) => /^ebpf-studio-jvmagent-[0-9a-f]+\.so$/.test(f)), `the agent copy is in the JVM's own /tmp: ${inside.join(', ')}`);
    } finally {
      await h.close();
      jvm.child.kill('SIGKILL');
    }
    assert.deepEqual(fs.readdirSync(hostDir), [], 'nothing was created in the host folder the link names');
    assert.deepEqual(fingerprint(), before);
  });

  test('attack 4: the helper working for the user asks for the jvm timeline and the agent on root\'s JVM: no attach file, no perf map, no method names', { timeout: 60_000 }, async (t) => {
    const rootJvm = spawn(`${JDK}/bin/java`, ['-cp', path.join(base, 'classes'), 'AgentSplit', '60'], { cwd: path.join(base, 'root-only'), stdio: 'ignore' });
    children.push(rootJvm);
    await sleep(2000);
    const pid = rootJvm.pid!;
    const rootFiles = () => [`/tmp/.java_pid${pid}`, `/tmp/perf-${pid}.map`, `/tmp/.attach_pid${pid}`, path.join(base, 'root-only', `.attach_pid${pid}`)].filter((f) => fs.existsSync(f));
    const h = installedHelper();
    try {
      const started = (await h.conn.sendRequest(proto.sessionStart, { tracer: 'jvm', options: { pid, frequency: 99, sliceMs: 250 } } as never)) as proto.SessionStartResult;
      await sleep(2000);
      const stopped = (await h.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: { warnings?: string[] } };
      const text = JSON.stringify(stopped.result) + JSON.stringify(h.notes);
      t.diagnostic(`jvm timeline warnings: ${(stopped.result.warnings ?? []).join(' | ').slice(0, 300)}`);
      assert.match(text, /not yours/);
      assert.doesNotMatch(text, /AgentSplit\.heavy/, 'no Java method names of root\'s JVM');
      await assert.rejects(profileThrough(h, pid, 'agent', 200), /not yours|needs root/);
    } finally {
      await h.close();
      rootJvm.kill('SIGKILL');
    }
    assert.deepEqual(rootFiles(), [], 'root\'s JVM got no attach socket, trigger or perf map');
  });

  test('attacks 5 and 6: the leak report folder swapped for links during cleanup, and a working directory only root may enter; the owner\'s preload leak trace still works', { timeout: 90_000 }, async (t) => {
    // 5: a root folder of files the cleanup must not touch, and a root file behind a report-named link.
    const treeDir = path.join(base, 'root-only', 'tree');
    fs.mkdirSync(treeDir);
    for (let i = 0; i < 20; i++) bed.watch((fs.writeFileSync(path.join(treeDir, `f${i}`), `root file ${i}\n`), path.join(treeDir, `f${i}`)));
    bed.watch(treeDir);
    const rootLeak = victim('123.leak', 'root report-named file\n', 0o644);
    // 6: a folder only root may enter, with a secret in it.
    const locked = path.join(base, 'root-locked');
    fs.mkdirSync(locked, { mode: 0o700 });
    const secretFile = path.join(locked, 'secret');
    fs.writeFileSync(secretFile, 'TOP_SECRET_ROOT_ONLY\n', { mode: 0o644 }); // readable, but only through a folder the user cannot enter
    bed.watch(secretFile);
    const before = fingerprint();
    // The leaky fixture, built where the user can run it.
    const work = userDir('leak-work');
    const exe = path.join(work, 'leaky');
    const cc = spawnSync('gcc', ['-g', '-O0', '-fno-omit-frame-pointer', '-o', exe, path.join(repoRoot, 'test/fixtures/c/leaky.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const h = installedHelper();
    const run = async (command: string[], cwd: string) => {
      const ended = new Promise<proto.SessionEndedParams>((resolve) => h.conn.onNotification(proto.sessionEnded, (p) => resolve(p)));
      await h.conn.sendRequest(proto.sessionStart, { tracer: 'memleak', options: { launch: { command, cwd, output: 'capture' }, mode: 'preload', intervalS: 1 } } as never);
      return Promise.race([ended, sleep(30_000).then(() => assert.fail('the launched command did not end'))]);
    };
    try {
      // 5: the traced program (as the user) swaps its report folder's content for links to root's files while it runs.
      // The interposer keeps its report mapped: that names the folder (it clears its variables from the environment).
      const swap = [
        `d=$(grep -o '/[^ ]*/ebpf-studio-leak-[0-9a-f]*' /proc/$$/maps | head -1)`,
        '[ -n "$d" ] || exit 3',
        `ln -s ${treeDir} "$d/sub"`,
        `ln -s ${rootLeak} "$d/123.leak"`,
        'mkdir "$d/d"',
        `ln -s ${treeDir}/f0 "$d/d/9.leak"`,
      ].join(' && ');
      const swapped = await run(['/bin/sh', '-c', swap], work);
      t.diagnostic(`swapping program ended: ${swapped.reason} ${swapped.message ?? ''}`);
      assert.doesNotMatch(swapped.message ?? '', /code [1-9]|signal/, 'the program planted its links');
      assert.deepEqual(fingerprint(), before, 'the cleanup deleted nothing of root\'s');
      const planted = fs.readdirSync('/dev/shm').filter((f) => f.startsWith('ebpf-studio-leak-') && fs.existsSync(path.join('/dev/shm', f, 'sub')));
      assert.equal(planted.length, 1, 'the folder with links someone else made is left in place, links and all');
      assert.equal(fs.readlinkSync(path.join('/dev/shm', planted[0], 'sub')), treeDir);
      assert.equal(fs.existsSync(path.join('/dev/shm', planted[0], '123.leak')), false, 'the report-named link itself was removed (as the user), not its target');
      assert.equal(fs.readlinkSync(path.join('/dev/shm', planted[0], 'd', '9.leak')), `${treeDir}/f0`, 'no recursive delete: a sub-folder is not descended into');

      // 6: a relative command in a folder the user cannot enter: refused to the user, nothing read.
      const denied = await run(['/bin/cat', 'secret'], locked);
      t.diagnostic(`command in the root-only folder: ${denied.reason} ${denied.message ?? ''}`);
      assert.match(denied.message ?? '', /code 126/, 'the launcher could not enter the folder as the user');
      assert.doesNotMatch(JSON.stringify(denied) + JSON.stringify(h.notes), /TOP_SECRET_ROOT_ONLY/, 'the user\'s command could not read through the root-only folder');

      // The owner's own preload leak trace through the installed helper: 10 x 1000 B at LEAK-MALLOC.
      const leakLine = fs.readFileSync(path.join(repoRoot, 'test/fixtures/c/leaky.c'), 'utf8').split('\n').findIndex((l) => l.includes('LEAK-MALLOC')) + 1;
      const own = await run([exe], work);
      const r = own.result as MemleakResult;
      assert.equal(r.mode, 'preload');
      const bytes = r.stacks.filter((s) => s.frames.some((f) => f.file?.endsWith('leaky.c') && f.line === leakLine)).reduce((n, s) => n + s.bytes, 0);
      t.diagnostic(`owner's preload leak trace: ${bytes} B at leaky.c:${leakLine}`);
      assert.equal(bytes, 10_000, `leaky.c:${leakLine} leaks 10 x 1000 B: ${JSON.stringify(r.stacks.slice(0, 3)).slice(0, 800)}`);
    } finally {
      await h.close();
    }
    assert.deepEqual(fingerprint(), before, 'root\'s files kept content, owner and existence');
    const left = fs.readdirSync('/dev/shm').filter((f) => f.startsWith('ebpf-studio-leak-')).map((f) => path.join('/dev/shm', f)).filter((f) => fs.statSync(f).uid === uid);
    t.diagnostic(`report folders left (holding files eBPF Studio did not make): ${left.length}`);
    for (const f of left) fs.rmSync(f, { recursive: true, force: true });
  });

  test('attack 7: a source swapped for a symlink or hardlink to a root-only file after the script was made: the install fails, no copy is left', { timeout: 60_000 }, () => {
    const secret = victim('install-secret', 'ROOT_ONLY_INSTALL_SECRET\n', 0o600);
    const before = fingerprint();
    const dist = userDir('user-dist');
    fs.cpSync(distDir, dist, { recursive: true, filter: (s) => !s.endsWith('.map') && !s.includes('webview') });
    spawnSync('chown', ['-R', `${uid}:${gid}`, dist]);
    const root = path.join(base, 'lib7');
    const node = chooseNode(['/usr/bin/node'], process.execPath, false, (f) => untrustedReason(f) === undefined);
    for (const how of ['symlink', 'hardlink'] as const) {
      const plan = installPlan(dist, '9.9.9-swap', node, { root, policy: path.join(base, 'p7', 'x.policy') });
      assert.match(plan.script, new RegExp(`setpriv --reuid=${uid} --regid=${gid} --clear-groups -- cat -- '${dist}/helper.js'`), 'the user folder is read as the user');
      const target = path.join(dist, 'helper.js');
      fs.rmSync(target);
      if (how === 'symlink') asUser(['ln', '-s', secret, target]);
      else fs.linkSync(secret, target); // as where protected_hardlinks is off
      const r = spawnSync('/bin/sh', ['-c', plan.script], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `${how}: the install must fail`);
      assert.equal(fs.existsSync(`${plan.dir}.new`), false, `${how}: the staging folder is removed`);
      assert.equal(fs.existsSync(plan.dir), false, `${how}: nothing installed`);
      const found = spawnSync('grep', ['-rl', 'ROOT_ONLY_INSTALL_SECRET', root], { encoding: 'utf8' });
      assert.equal(found.stdout.trim(), '', `${how}: no copy of the root-only file: ${found.stdout}`);
      fs.rmSync(target);
      fs.copyFileSync(path.join(distDir, 'helper.js'), target);
      fs.chownSync(target, uid, gid);
    }
    assert.deepEqual(fingerprint(), before);
  });
});
