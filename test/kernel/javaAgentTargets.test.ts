// `profile --java agent` against JVMs that are not simply "ours, on the host" (Safety and
// containers):
//  - a JVM owned by another user: refused (exit 4, both uids and the fix named) for a non-root
//    CLI user (with CAP_BPF+CAP_PERFMON, so the privilege check passes and the owner check is what
//    refuses) and for a non-root user whose request goes through the helper running as root (the
//    helper checks the invoking user, from SUDO_UID here as sudo sets it, not its own uid); allowed
//    for root, and through the helper for the JVM's owner;
//  - a JVM in its own mount + pid namespaces with a private /tmp (a container): the agent is placed
//    through /proc/PID/root, the attach socket is /tmp/.java_pid<ns pid> there, and BPF's host
//    tids join the agent's namespace tids.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import * as proto from '../../extension/protocol/protocol';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { namespacePid } from '../../extension/sys/jvm/attach';
import { cliJs, distDir, kernelSkipReason, repoRoot, rootOwnedHelperJs, runCli, sleep, waitFor } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const AGENT = path.join(distDir, 'libebpf-studio-jvmagent.so');
const OWNER = 65534; // nobody: the JVM's user
const OTHER = 4321; // a second non-root user (no passwd entry needed) asking for the profile
const skip =
  kernelSkipReason() ??
  (!fs.existsSync(`${JDK}/bin/javac`) ? `no JDK 17 at ${JDK} (apt-get install openjdk-17-jdk-headless)` : undefined) ??
  (!fs.existsSync(AGENT) ? `the JVM agent is not built (${AGENT}): run npm run build with a JDK installed` : undefined) ??
  (spawnSync('setpriv', ['--version']).status !== 0 ? 'setpriv (util-linux) is missing' : undefined);
const children: ChildProcess[] = [];
let work = '';

const fnIndex = (s: ProfileStack, re: RegExp) => s.frames.findIndex((f) => f.function !== null && re.test(f.function));
const samplesWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => fnIndex(s, re) >= 0).reduce((n, s) => n + s.count, 0);

/** Compiles the fixture into `dir/classes`, readable by every user. */
function compileFixture(dir: string): void {
  fs.chmodSync(dir, 0o755);
  const jc = spawnSync(`${JDK}/bin/javac`, ['-d', path.join(dir, 'classes'), path.join(repoRoot, 'test/fixtures/java/AgentSplit.java')], { encoding: 'utf8' });
  assert.equal(jc.status, 0, jc.stderr);
  fs.chmodSync(path.join(dir, 'classes'), 0o755);
}

function track(child: ChildProcess): { out: () => string } {
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  children.push(child);
  return { out: () => out };
}

function removeJvmFiles(pid: number | undefined, owner: string): void {
  for (const f of [`/tmp/perf-${pid}.map`, `/tmp/.java_pid${pid}`, `/tmp/hsperfdata_${owner}/${pid}`]) fs.rmSync(f, { force: true });
}

/** The helper as root, working for `uid` as sudo would have started it (SUDO_UID/SUDO_GID). */
function startHelperFor(uid: number) {
  const child = spawn(process.execPath, [rootOwnedHelperJs()], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH, SUDO_UID: String(uid), SUDO_GID: String(uid) } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    conn,
    stderr: () => stderr,
    async close() {
      conn.dispose();
      child.stdin.end();
      await exited;
    },
  };
}

before(() => {
  if (skip) return;
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'java-agent-targets-'));
  compileFixture(work);
});

after(() => {
  for (const c of children) c.kill('SIGKILL');
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('profile --java agent: another user\'s JVM, a JVM in a container (kernel)', { skip }, () => {
  test(`a JVM of uid ${OWNER}: refused for uid ${OTHER} (CLI and helper), allowed for root and for its owner through the helper`, { timeout: 180_000 }, async (t) => {
    // The JVM runs as nobody, in a folder it can read, with the world-writable /tmp.
    const jvm = spawn('setpriv', [`--reuid=${OWNER}`, `--regid=${OWNER}`, '--clear-groups', `${JDK}/bin/java`, '-cp', 'classes', 'AgentSplit', '120'], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: work },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const { out } = track(jvm);
    const owner = 'nobody';
    try {
      await sleep(2000);
      assert.equal(jvm.exitCode, null, `the JVM started: ${out()}`);
      assert.match(fs.readFileSync(`/proc/${jvm.pid}/status`, 'utf8'), new RegExp(`^Uid:\\s+${OWNER}\\s+${OWNER}`, 'm'));
      const agentFiles = () => fs.readdirSync('/tmp').filter((f) => f.startsWith(`.ebpf-studio-jvm-${jvm.pid}-`));

      // 1. The CLI run directly by another non-root user. It has CAP_BPF+CAP_PERFMON (ambient), so
      // it passes the privilege check and may profile; the owner check is what refuses.
      const cli = spawnSync(
        'setpriv',
        [`--reuid=${OTHER}`, `--regid=${OTHER}`, '--clear-groups', '--inh-caps=+bpf,+perfmon', '--ambient-caps=+bpf,+perfmon', process.execPath, cliJs, 'profile', '--pid', String(jvm.pid), '--java', 'agent', '--duration', '1'],
        { encoding: 'utf8', timeout: 60_000, cwd: '/', env: { PATH: process.env.PATH, EBPF_STUDIO_STATE_DIR: work } },
      );
      t.diagnostic(`CLI as uid ${OTHER}: exit ${cli.status}: ${cli.stderr.trim()}`);
      assert.equal(cli.status, 4, cli.stderr);
      assert.match(cli.stderr, new RegExp(`uid ${OWNER}\\b.*uid ${OTHER}\\b`), 'names the owner and the requester');
      assert.match(cli.stderr, /needs root.*as root/, 'names the fix');
      assert.equal(cli.stderr.trim().split('\n').length, 1, 'one line, no stack trace');

      // 2. The same user through the helper, which runs as root for them (SUDO_UID).
      const other = startHelperFor(OTHER);
      try {
        const err = await other.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid: jvm.pid, java: 'agent', frequency: 99 } } as never).then(
          () => undefined,
          (e: unknown) => e as ResponseError<unknown>,
        );
        assert.ok(err, 'the helper refused');
        t.diagnostic(`helper for uid ${OTHER}: ${err.code} ${err.message}`);
        assert.equal(err.code, 1004, 'unsuitable (the CLI\'s exit 4)');
        assert.match(err.message, new RegExp(`uid ${OWNER}\\b.*uid ${OTHER}, from SUDO_UID`));
        assert.match(err.message, /needs root/);
        // "auto" chooses the agent for this JVM (no -XX:+PreserveFramePointer): refused the same way.
        const auto = await other.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid: jvm.pid, frequency: 99 } } as never).then(
          () => undefined,
          (e: unknown) => e as ResponseError<unknown>,
        );
        assert.equal(auto?.code, 1004, `auto: ${auto?.message}`);
        // perf-map mode needs Compiler.perfmap, an attach request too: the profile runs with native
        // and kernel frames only, and says why.
        const pm = (await other.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid: jvm.pid, java: 'perfmap', frequency: 99 } } as never)) as proto.SessionStartResult;
        await sleep(1000);
        const pmStopped = (await other.conn.sendRequest(proto.sessionStop, { sessionId: pm.sessionId })) as { result: ProfileResult };
        const told = pm.warnings.join('\n');
        t.diagnostic(`perfmap for uid ${OTHER}: ${pmStopped.result.samples} samples; ${told}`);
        assert.match(told, new RegExp(`JVM of uid ${OWNER}, not yours.*no attach request`));
      } finally {
        await other.close();
      }
      assert.equal(fs.readFileSync(`/proc/${jvm.pid}/maps`, 'utf8').includes('ebpf-studio-jvmagent'), false, 'nothing was loaded into the JVM');
      // Not even a printflag: the JVM's attach listener (its socket in /tmp) was never started.
      assert.equal(fs.existsSync(`/tmp/.java_pid${jvm.pid}`), false, 'no attach request reached the JVM');
      assert.deepEqual(agentFiles(), []);

      // 3. Its owner through the same root helper: allowed, whole Java stacks.
      const own = startHelperFor(OWNER);
      try {
        const started = (await own.conn.sendRequest(proto.sessionStart, { tracer: 'profile', options: { pid: jvm.pid, java: 'agent', frequency: 199 } } as never)) as proto.SessionStartResult;
        await sleep(3000);
        const stopped = (await own.conn.sendRequest(proto.sessionStop, { sessionId: started.sessionId })) as { result: ProfileResult };
        const heavy = samplesWith(stopped.result, /^AgentSplit\.heavy$/);
        t.diagnostic(`helper for the owner: ${stopped.result.samples} samples, ${heavy} in AgentSplit.heavy`);
        assert.ok(heavy > 0, `Java frames through the helper for the JVM's owner: ${own.stderr().slice(-1500)}`);
      } finally {
        await own.close();
      }

      // 4. Root (this test's CLI): allowed; the agent copy in the JVM's /tmp belongs to root or the JVM's user.
      const root = runCli(['profile', '--pid', String(jvm.pid), '--java', 'agent', '--frequency', '199', '--duration', '3', '--json', '--verbose'], { timeoutMs: 60_000 });
      assert.equal(root.code, 0, root.stderr);
      const result = JSON.parse(root.stdout) as ProfileResult;
      assert.ok(samplesWith(result, /^AgentSplit\.heavy$/) > 0 && samplesWith(result, /^AgentSplit\.light$/) > 0, 'both callers as root');
      const copy = /Java agent started in pid \d+ \((\S+)\)/.exec(root.stderr)?.[1];
      assert.ok(copy, root.stderr);
      assert.ok([0, OWNER].includes(fs.statSync(`/proc/${jvm.pid}/root${copy}`).uid));
      assert.deepEqual(agentFiles(), [], "the agent's sample files are removed");
      assert.equal(jvm.exitCode, null, `the JVM is alive: ${out().slice(-1000)}`);
    } finally {
      jvm.kill('SIGKILL');
      removeJvmFiles(jvm.pid, owner);
    }
  });

  const containerSkip = () =>
    spawnSync('unshare', ['--version']).status !== 0
      ? 'unshare (util-linux) is missing'
      : !fs.existsSync('/var/tmp') // the classes must be outside /tmp, which the container replaces
        ? 'no /var/tmp to hold the fixture outside /tmp'
        : undefined;

  /** The fixture JVM as pid 1 of new mount + pid namespaces, over its own tmpfs /tmp; resolves with its host pid. */
  async function startContainerJvm(box: string, tmpfsOptions: string) {
    compileFixture(box);
    const unshare = spawn(
      'unshare',
      ['--mount', '--pid', '--fork', '--mount-proc', '--kill-child', 'sh', '-c', `mount -t tmpfs -o ${tmpfsOptions} ebpf-studio-test /tmp && exec ${JDK}/bin/java -cp classes AgentSplit 90`],
      { cwd: box, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const { out } = track(unshare);
    let pid = 0;
    // The JVM is unshare's child, once sh has exec'd java and mapped libjvm.so.
    await waitFor(() => {
      try {
        const kids = fs.readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
        pid = kids.find((k) => /\/libjvm\.so$/m.test(fs.readFileSync(`/proc/${k}/maps`, 'utf8'))) ?? 0;
      } catch {
        pid = 0;
      }
      return pid > 0;
    }, 20_000);
    return {
      pid,
      unshare,
      out,
      async stop() {
        unshare.kill('SIGKILL'); // --kill-child: the JVM (its pid namespace's init) goes with it
        if (pid) await waitFor(() => !fs.existsSync(`/proc/${pid}`), 10_000);
        fs.rmSync(box, { recursive: true, force: true });
      },
    };
  }

  test('a JVM in its own mount and pid namespaces, with a private /tmp: whole Java stacks by its host pid', { timeout: 120_000 }, async (t) => {
    const why = containerSkip();
    if (why) return t.skip(why);
    const hostTmpBefore = new Set(fs.readdirSync('/tmp'));
    const { pid, unshare, out, stop } = await startContainerJvm(fs.mkdtempSync('/var/tmp/java-agent-container-'), 'mode=1777');
    try {
      assert.ok(pid > 0, `the JVM started in the namespaces: ${out()}`);
      await sleep(2000); // let heavy/light/mix get compiled
      const nspid = namespacePid(pid);
      const jvmTmp = fs.statSync(`/proc/${pid}/root/tmp`);
      const hostTmp = fs.statSync('/tmp');
      t.diagnostic(`host pid ${pid}, pid ${nspid} inside; its /tmp is ${jvmTmp.dev === hostTmp.dev ? 'the host /tmp?!' : 'its own tmpfs'}`);
      assert.notEqual(nspid, pid, 'the JVM has its own pid namespace');
      assert.notEqual(jvmTmp.dev, hostTmp.dev, "the JVM's /tmp is not the host's");

      const r = runCli(['profile', '--pid', String(pid), '--java', 'agent', '--frequency', '299', '--duration', '5', '--json', '--verbose'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout) as ProfileResult;
      const heavy = samplesWith(result, /^AgentSplit\.heavy$/);
      const light = samplesWith(result, /^AgentSplit\.light$/);
      const m = /Java agent: (\d+) BPF samples, (\d+) agent records, (\d+) joined/.exec(r.stderr);
      t.diagnostic(`heavy ${heavy}, light ${light} (heavy's share ${((100 * heavy) / Math.max(1, heavy + light)).toFixed(1)}%); ${m?.[0]}`);
      assert.ok(m, r.stderr.slice(-1500));
      assert.ok(Number(m[3]) >= 0.9 * Number(m[1]), `host tids joined the agent's namespace tids: only ${m[3]} of ${m[1]} BPF samples joined`);
      assert.ok(heavy > 0 && light > 0, 'both callers');
      assert.ok(heavy > light, 'heavy (3 parts) above light (1 part)');
      const chain = result.stacks.find((s) => s.frames[0]?.function === 'AgentSplit.mix' && s.frames[1]?.function === 'AgentSplit.heavy');
      assert.ok(chain, 'a stack with mix called from heavy');
      assert.equal(chain.frames[2].function, 'AgentSplit.main');
      assert.equal(chain.frames[1].file, 'AgentSplit.java');
      assert.equal(chain.frames[1].line, 21, 'heavy calls mix on line 21');

      // Everything went through the JVM's own /tmp, none of it into the host's.
      const inside = fs.readdirSync(`/proc/${pid}/root/tmp`);
      assert.ok(inside.includes(`.java_pid${nspid}`), `the attach socket is in the JVM's /tmp: ${inside.join(' ')}`);
      assert.ok(inside.some((f) => /^ebpf-studio-jvmagent-[0-9a-f]+\.so$/.test(f)), 'the agent copy is in the JVM\'s /tmp');
      assert.equal(inside.filter((f) => f.startsWith('.ebpf-studio-jvm-')).length, 0, "the agent's sample file is removed");
      const leaked = fs.readdirSync('/tmp').filter((f) => !hostTmpBefore.has(f) && (f.startsWith(`.ebpf-studio-jvm-${nspid}-`) || f === `.java_pid${nspid}`)); // named by the JVM's own pid: other JVMs' files may come and go
      assert.deepEqual(leaked, [], 'nothing of this JVM in the host /tmp');
      assert.equal(unshare.exitCode, null, `the JVM is alive: ${out().slice(-1000)}`);
    } finally {
      await stop();
    }
  });

  test("a container whose /tmp is mounted noexec: refused (exit 4) before the agent is placed", { timeout: 60_000 }, async (t) => {
    const why = containerSkip();
    if (why) return t.skip(why);
    const { pid, unshare, out, stop } = await startContainerJvm(fs.mkdtempSync('/var/tmp/java-agent-noexec-'), 'mode=1777,noexec');
    try {
      assert.ok(pid > 0, `the JVM started in the namespaces: ${out()}`);
      const r = runCli(['profile', '--pid', String(pid), '--java', 'agent', '--duration', '1'], { timeoutMs: 30_000 });
      t.diagnostic(r.stderr.trim());
      assert.equal(r.code, 4, r.stderr);
      assert.match(r.stderr, /\/tmp is mounted noexec, so the JVM cannot load the Java agent from there: give its \/tmp exec/);
      assert.equal(r.stderr.trim().split('\n').length, 1, 'one line, no stack trace');
      assert.deepEqual(fs.readdirSync(`/proc/${pid}/root/tmp`).filter((f) => f.includes('ebpf-studio')), [], 'nothing placed in its /tmp');
      assert.equal(unshare.exitCode, null, 'the JVM is untouched');
    } finally {
      await stop();
    }
  });
});
