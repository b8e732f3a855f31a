// `profile --java agent|auto` against real JVMs started WITHOUT -XX:+PreserveFramePointer:
// the JVMTI agent is loaded through the attach socket, and the profile must show whole Java stacks
// (main → heavy/light → mix) in the fixture's 3:1 CPU split, with file:line, and zlib's native
// frames under the JNI method Deflater.deflateBytesBytes, with the native part unwound by CFI
// (the default) or by frame pointers. Live snapshots taken while sampling (what the editor's
// flame graph shows every second) already hold the joined Java stacks, and no sample is counted
// twice on the way to the final profile. The JVM must survive 20 start/stop cycles while threads
// start and end all the time, and keep computing right.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ProfileResult, ProfileStack } from '../../extension/protocol/profile';
import { agentSplitShare, compileJavaFixture, distDir, javaAgentSkipReason, removeJavaFixture, runCli, sleep, startCli, waitFor } from '../helpers';
import { checkJvmHasAgct, placeAgent } from '../../extension/tracers/javaAgent/agent';
import { attachCommand } from '../../extension/sys/jvm/attach';
import { profileTracer } from '../../extension/tracers/profile/tracer';
import { cliEnv } from '../../extension/cli/env';
import { processCpuMs } from '../../extension/sys/proc/processes';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
/**
 * The main scenario runs on every JDK listed here that is installed (skipped with the reason when
 * absent). `zlib`: the module holding zlib's code under Deflater.deflateBytesBytes: Debian's JDK
 * links the system libz.so, Temurin bundles zlib into its own libzip.so.
 */
const JDKS = [
  { name: 'OpenJDK 17 (Debian)', home: JDK, zlib: /libz\.so/ },
  { name: 'Temurin 25', home: '/usr/lib/jvm/temurin-25-jdk-amd64', zlib: /\/libzip\.so$/ },
];
const AGENT = path.join(distDir, 'libebpf-studio-jvmagent.so');
const skip = javaAgentSkipReason(JDK);
const children: ChildProcess[] = [];
/** profile start/stop cycles on one JVM: each crosses the agent's load-or-reuse and the SIGPROF handover */
const CYCLES = 10;
let work = '';
let classes = '';

const fnIndex = (s: ProfileStack, re: RegExp) => s.frames.findIndex((f) => f.function !== null && re.test(f.function));
const samplesWith = (r: ProfileResult, re: RegExp) => r.stacks.filter((s) => fnIndex(s, re) >= 0).reduce((n, s) => n + s.count, 0);

function startJvm(args: string[], jvmFlags: string[] = [], home = JDK): { jvm: ChildProcess; out: () => string } {
  // Runs in `work` so the attach trigger (.attach_pidN) lands in a folder we remove.
  const jvm = spawn(`${home}/bin/java`, [...jvmFlags, '-cp', classes, 'AgentSplit', ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  jvm.stdout!.on('data', (d) => (out += d));
  jvm.stderr!.on('data', (d) => (out += d));
  children.push(jvm);
  return { jvm, out: () => out };
}

/**
 * One `profile` of pid (with `flags`: the agent by default) that samples until the JVM has run `cpuMs` of CPU time (all
 * its threads, from /proc) since the agent started, and at least 1 s: on a loaded machine a fixed
 * second can hold almost none of the JVM's work, so the window is the program's own time.
 * `mark()`, called as the agent starts (the profile's first sample), gives `from`: where the
 * program's own split is read from, so both cover the same window (attaching can take seconds on
 * a loaded machine).
 */
async function profileForCpu(pid: number, cpuMs: number, flags = ['--java', 'agent'], mark: () => number = () => 0): Promise<{ code: number | null; stdout: string; stderr: string; from: number }> {
  const cli = startCli(['profile', '--pid', String(pid), ...flags, '--frequency', '299', '--json', '--verbose']);
  try {
    assert.ok(await waitFor(() => /Java agent started/.test(cli.stderr()) || cli.child.exitCode !== null, 60_000), `the agent started: ${cli.stderr()}`);
    const [t0, cpu0, from] = [Date.now(), processCpuMs(pid) ?? 0, mark()];
    await waitFor(() => Date.now() - t0 >= 1000 && (processCpuMs(pid) ?? Infinity) - cpu0 >= cpuMs, 60_000);
    cli.child.kill('SIGINT');
    return { ...(await cli.done), from };
  } finally {
    cli.child.kill('SIGKILL'); // nothing left behind by a failure above
  }
}

/** heavy()'s share of the time the JVM measured itself from `from` (an offset into its output) to a second after now. */
async function measuredSplit(out: () => string, from: number): Promise<number> {
  await sleep(1200);
  const share = agentSplitShare(out(), from);
  assert.ok(share !== undefined, `the JVM printed no split: ${out().slice(-500)}`);
  return share;
}

/**
 * What a split that misses is made of, for its failure message: heavy's and light's samples by the
 * kind of their frame and their leaf, and the program's own per-second shares in the window (a
 * share that moves within it would mean its phases, not our samples, differ).
 */
function splitBreakdown(r: ProfileResult, out: string, from: number): string {
  const by = (re: RegExp) => {
    const m = new Map<string, number>();
    for (const s of r.stacks) {
      const i = fnIndex(s, re);
      if (i < 0) continue;
      const k = `${s.frames[i].kind}/${i === 0 ? 'leaf' : s.frames[0].function}`;
      m.set(k, (m.get(k) ?? 0) + s.count);
    }
    return [...m].map(([k, n]) => `${k} ${n}`).join(', ');
  };
  const lines = [...out.slice(from).matchAll(/^split heavy (\d+) light (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
  const perSecond = lines.slice(1).map(([h, l], i) => (100 * (h - lines[i][0])) / (h + l - lines[i][0] - lines[i][1]));
  return `heavy: ${by(/^AgentSplit\.heavy$/)}; light: ${by(/^AgentSplit\.light$/)}; the program's per-second shares: ${perSecond.map((x) => x.toFixed(1)).join(' ')}`;
}

function cleanup(pid: number | undefined) {
  for (const f of [`/tmp/perf-${pid}.map`, `/tmp/.java_pid${pid}`]) fs.rmSync(f, { force: true });
}

before(() => {
  if (!skip) ({ work, classes } = compileJavaFixture('java-agent-test-', 'AgentSplit.java'));
});

after(() => removeJavaFixture(children, work));

describe('profile --java agent (kernel)', { skip }, () => {
  for (const jdk of JDKS) {
    const jdkSkip = !fs.existsSync(`${jdk.home}/bin/java`) ? `${jdk.name} is not installed at ${jdk.home}` : undefined;
    test(`${jdk.name}: whole Java stacks without -XX:+PreserveFramePointer: 3:1 split, file:line, native frames under JNI`, { skip: jdkSkip }, async (t) => {
      const { jvm, out } = startJvm(['60'], [], jdk.home);
      await sleep(2000); // let heavy/light/mix get compiled
      assert.equal(checkJvmHasAgct(jvm.pid!), true, "the running JVM's libjvm.so, read through /proc/PID/root, exports AsyncGetCallTrace");
      // 5 s of the JVM's CPU (main and compress threads): ~700 samples of heavy/light however loaded
      const r = await profileForCpu(jvm.pid!, 5000, [], () => out().length);
      const truth = await measuredSplit(out, r.from);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /Java agent started/, 'auto chose the agent for a JVM without -XX:+PreserveFramePointer');
      assert.doesNotMatch(r.stderr, /Restart it with the flag/, 'no restart advice when the agent gives whole stacks');
      assert.equal((JSON.parse(r.stdout) as ProfileResult).unwind?.mode, 'dwarf', 'auto unwinds the native part of a JVM with the agent by CFI');
      const result = JSON.parse(r.stdout) as ProfileResult;
      const heavy = samplesWith(result, /^AgentSplit\.heavy$/);
      const light = samplesWith(result, /^AgentSplit\.light$/);
      const share = heavy / (heavy + light);
      t.diagnostic(`heavy ${heavy}, light ${light}: heavy's share ${(100 * share).toFixed(1)}% (the program measured ${(100 * truth).toFixed(1)}%), ${result.samples} samples`);
      const parts = splitBreakdown(result, out(), r.from);
      t.diagnostic(parts);
      assert.ok(heavy + light >= 200, `only ${heavy + light} samples in heavy/light`);
      assert.ok(Math.abs(share - truth) <= 0.05, `heavy's share is ${(100 * share).toFixed(1)}%, the program measured ${(100 * truth).toFixed(1)}% ± 5 (${parts})`);

      // The whole chain, leaf first: mix → heavy → main, each with its source line.
      const chain = result.stacks.find((s) => s.frames[0]?.function === 'AgentSplit.mix' && s.frames[1]?.function === 'AgentSplit.heavy');
      assert.ok(chain, 'a stack with mix called from heavy');
      assert.equal(chain.frames[2].function, 'AgentSplit.main');
      assert.equal(chain.frames[1].file, 'AgentSplit.java');
      assert.equal(chain.frames[1].line, 21, 'heavy calls mix on line 21');
      assert.ok([14, 15].includes(chain.frames[0].line!), `mix's sample is in its loop (line ${chain.frames[0].line})`);
      assert.ok(['jit', 'interpreted'].includes(chain.frames[0].kind));
      const lightChain = result.stacks.find((s) => s.frames[1]?.function === 'AgentSplit.light');
      assert.equal(lightChain?.frames[1].line, 25, 'light calls mix on line 25');

      // zlib under the JNI method (not just the JNI wrapper Java_java_util_zip_*), and the Java callers above it.
      const jni = result.stacks.filter((s) => {
        const i = fnIndex(s, /^java\.util\.zip\.Deflater\.deflateBytesBytes$/);
        const zlib = s.frames.slice(0, Math.max(0, i)).some((f) => f.kind === 'native' && jdk.zlib.test(f.module ?? '') && !/^Java_/.test(f.function ?? ''));
        return i > 0 && s.frames[i - 1].kind === 'native' && zlib && fnIndex(s, /^AgentSplit\.compressLoop$/) > i;
      });
      const jniSamples = jni.reduce((n, s) => n + s.count, 0);
      t.diagnostic(`${jniSamples} samples in zlib (${jdk.zlib.source}) under Deflater.deflateBytesBytes under AgentSplit.compressLoop`);
      assert.ok(jniSamples >= 20, `only ${jniSamples} samples show zlib under the JNI call`);
      const labels = result.stacks.filter((s) => s.frames.some((f) => /^\[Java stack not walked/.test(f.function ?? ''))).reduce((n, s) => n + s.count, 0);
      t.diagnostic(`${labels} samples labelled "Java stack not walked"`);
      assert.ok(labels <= 0.1 * result.samples, `${labels} of ${result.samples} samples have no Java stack`);
      assert.equal(fs.readdirSync('/proc/' + jvm.pid + '/root/tmp').filter((f) => f.startsWith(`.ebpf-studio-jvm-${jvm.pid}-`)).length, 0, "the agent's sample file is removed");
      jvm.kill('SIGKILL');
      cleanup(jvm.pid);
    });
  }

  test('--unwind dwarf --java agent: the native part unwound by CFI keeps zlib\'s callers under the JNI call, Java callers with file:line', async (t) => {
    const { jvm, out } = startJvm(['60']);
    await sleep(2000);
    const r = await profileForCpu(jvm.pid!, 5000, ['--java', 'agent', '--unwind', 'dwarf'], () => out().length);
    const truth = await measuredSplit(out, r.from);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /does not apply/, 'dwarf is not refused for a JVM with the agent');
    const result = JSON.parse(r.stdout) as ProfileResult;
    assert.equal(result.unwind?.mode, 'dwarf');
    const m = /Java agent: (\d+) BPF samples, (\d+) agent records, (\d+) joined/.exec(r.stderr);
    assert.ok(m, r.stderr.slice(-1000));
    t.diagnostic(`CFI: ${m[3]} of ${m[1]} samples joined (${((100 * Number(m[3])) / Number(m[1])).toFixed(1)} %)`);
    assert.ok(Number(m[3]) >= 0.9 * Number(m[1]), `only ${m[3]} of ${m[1]} samples joined`);
    const heavy = samplesWith(result, /^AgentSplit\.heavy$/);
    const light = samplesWith(result, /^AgentSplit\.light$/);
    t.diagnostic(`heavy ${heavy}, light ${light}: heavy's share ${((100 * heavy) / (heavy + light)).toFixed(1)}% (the program measured ${(100 * truth).toFixed(1)}%)`);
    assert.ok(heavy + light >= 200, `only ${heavy + light} samples in heavy/light`);
    assert.ok(Math.abs(heavy / (heavy + light) - truth) <= 0.05);
    const chain = result.stacks.find((s) => s.frames[0]?.function === 'AgentSplit.mix' && s.frames[1]?.function === 'AgentSplit.heavy');
    assert.ok(chain, 'a stack with mix called from heavy');
    assert.equal(chain.frames[2].function, 'AgentSplit.main');
    assert.equal(chain.frames[1].file, 'AgentSplit.java');
    assert.equal(chain.frames[1].line, 21, 'heavy calls mix on line 21');
    assert.equal(result.stacks.find((s) => s.frames[1]?.function === 'AgentSplit.light')?.frames[1].line, 25, 'light calls mix on line 25');
    // Under the JNI method: libzip's JNI function, and under it zlib's deflate calling its leaf;
    // frame pointers lose both callers (Debian builds libz and libzip without them).
    const jni = result.stacks.filter((s) => {
      const i = fnIndex(s, /^java\.util\.zip\.Deflater\.deflateBytesBytes$/);
      if (i < 2 || fnIndex(s, /^AgentSplit\.compressLoop$/) <= i) return false;
      const native = s.frames.slice(0, i);
      const z = native.findIndex((f) => f.kind === 'native' && /libz\.so/.test(f.module ?? ''));
      return z >= 0 && native.slice(z + 1).some((f) => f.function === 'deflate' && /libz\.so/.test(f.module ?? '')) && native[i - 1].function === 'Java_java_util_zip_Deflater_deflateBytesBytes';
    });
    const jniSamples = jni.reduce((n, s) => n + s.count, 0);
    t.diagnostic(`${jniSamples} samples: zlib → deflate → Java_java_util_zip_Deflater_deflateBytesBytes → Deflater.deflateBytesBytes → … → AgentSplit.compressLoop`);
    assert.ok(jniSamples >= 20, `only ${jniSamples} samples show zlib's callers under the JNI call: ${JSON.stringify(result.stacks.find((s) => fnIndex(s, /deflateBytesBytes$/) >= 0)?.frames.slice(0, 6))}`);
    assert.equal(result.stacks.reduce((n, s) => n + s.count, 0), Number(m[1]), 'every BPF sample is in the profile once');
    jvm.kill('SIGKILL');
    cleanup(jvm.pid);
  });

  for (const unwind of ['dwarf', 'fp'] as const) {
    test(`live snapshots while sampling hold the joined Java stacks, each sample once (tracer API, --unwind ${unwind})`, async (t) => {
      const { jvm } = startJvm(['60']);
      await sleep(2000);
      const logs: string[] = [];
      const env = { ...cliEnv(false), log: (m: string) => void logs.push(m) };
      const session = await profileTracer.start(profileTracer.validate({ pid: jvm.pid, frequency: 299, java: 'agent', unwind }), env, { update: () => undefined, ended: () => undefined });
      // Only the Java part of each stack (and the "not walked" labels): native frames get their
      // names later (live symbolization, then the perf map at the end), Java frames never change.
      const javaKey = (s: ProfileStack) => s.frames.filter((f) => f.module === '[java]').map((f) => `${f.function}:${f.line}`).join(';');
      const byJava = (r: ProfileResult) => {
        const m = new Map<string, number>();
        for (const s of r.stacks) m.set(javaKey(s), (m.get(javaKey(s)) ?? 0) + s.count);
        return m;
      };
      const lives: ProfileResult[] = [];
      let final: ProfileResult;
      try {
        for (let i = 0; i < 6; i++) {
          await sleep(1000);
          lives.push(session.snapshot());
        }
      } finally {
        final = await session.stop();
      }
      const total = (r: ProfileResult) => r.stacks.reduce((n, s) => n + s.count, 0);
      for (const [i, r] of lives.entries()) {
        t.diagnostic(`live ${i + 1}: ${total(r)} of ${r.samples} samples shown (${((100 * total(r)) / Math.max(1, r.samples)).toFixed(1)} %), ${samplesWith(r, /^AgentSplit\.mix$/)} in mix, ${samplesWith(r, /^\[Java stack not walked/)} labelled`);
      }
      const early = lives.slice(0, -1).find((r) => r.stacks.some((s) => s.frames[0]?.function === 'AgentSplit.mix' && s.frames[1]?.function === 'AgentSplit.heavy' && s.frames[1].line === 21));
      assert.ok(early, 'a live snapshot before Stop shows mix ← heavy (AgentSplit.java:21) from the agent');
      assert.ok(lives.some((r) => samplesWith(r, /^AgentSplit\.light$/) > 0), 'light shows live too');
      const last = lives.at(-1)!;
      assert.ok(total(last) >= 0.8 * last.samples, `the last live snapshot shows only ${total(last)} of ${last.samples} samples`);
      // Nothing shown unjoined and later joined, nothing counted twice: every Java stack's count
      // only grows from one snapshot to the next and to the final profile.
      const seq = [...lives, final].map(byJava);
      for (let i = 1; i < seq.length; i++) {
        for (const [k, n] of seq[i - 1]) assert.ok((seq[i].get(k) ?? 0) >= n, `"${k.slice(0, 200)}" went from ${n} to ${seq[i].get(k) ?? 0} samples (${i === seq.length - 1 ? 'final' : `live ${i + 1}`})`);
      }
      const m = /Java agent: (\d+) BPF samples, (\d+) agent records, (\d+) joined/.exec(logs.join('\n'));
      assert.ok(m, logs.join('\n').slice(-1000));
      t.diagnostic(`final: ${total(final)} samples in stacks, ${final.samples} sampled, ${final.lost} lost; ${m[3]} of ${m[1]} joined`);
      assert.equal(total(final), Number(m[1]), 'the final profile holds every BPF sample once');
      assert.ok(total(final) <= final.samples && total(final) >= 0.97 * final.samples, `${total(final)} samples in stacks of ${final.samples} sampled`);
      assert.equal(final.unwind?.mode, unwind);
      assert.ok(samplesWith(final, /^AgentSplit\.mix$/) > samplesWith(early, /^AgentSplit\.mix$/));
      jvm.kill('SIGKILL');
      cleanup(jvm.pid);
    });
  }

  test(`the JVM survives ${CYCLES} profile start/stop cycles with threads starting and ending, and computes right`, async (t) => {
    // until killed: 10 cycles take ~30 s on an idle machine (each a fresh CLI, agent load or reuse,
    // SIGPROF handed over and back, threads born and gone between them)
    const { jvm, out } = startJvm(['0', 'churn']);
    await sleep(1500);
    const joins: string[] = [];
    for (let i = 0; i < CYCLES; i++) {
      const r = await profileForCpu(jvm.pid!, 600);
      assert.equal(r.code, 0, `cycle ${i}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /stopping the Java agent .* failed|ended without its end mark/, `cycle ${i}: the agent stopped cleanly`);
      const m = /Java agent: (\d+) BPF samples, (\d+) agent records, (\d+) joined/.exec(r.stderr);
      assert.ok(m, `cycle ${i}: the join ran: ${r.stderr.slice(-1000)}`);
      joins.push(`${m[3]}/${m[1]}`);
      assert.ok(Number(m[3]) >= 0.9 * Number(m[1]), `cycle ${i}: only ${m[3]} of ${m[1]} samples joined (${/\d+ signals handled in the JVM, [\d.]+ µs each/.exec(r.stderr)?.[0] ?? 'no handler figures'})`);
      const result = JSON.parse(r.stdout) as ProfileResult;
      assert.ok(samplesWith(result, /^AgentSplit\.mix$/) > 0, `cycle ${i}: no Java samples in mix`);
      assert.equal(jvm.exitCode, null, `the JVM died in cycle ${i}: ${out().slice(-2000)}`);
    }
    t.diagnostic(`joined of BPF samples per cycle: ${joins.join(' ')}`);
    await sleep(1200); // one more progress line after the last stop
    assert.equal(jvm.exitCode, null, `the JVM is alive after ${CYCLES} cycles`);
    const lines = out().trim().split('\n').filter((l) => l.startsWith('rounds '));
    t.diagnostic(`last progress line: ${lines.at(-1)}`);
    assert.ok(lines.length > 5, `the JVM kept printing progress: ${out().slice(-500)}`);
    for (const l of lines) assert.match(l, / bad 0$/, 'results stayed right while profiled');
    assert.doesNotMatch(out(), /SIGPROF|fatal error|hs_err/i);
    // The agent is loaded once and reused: one copy in /tmp, and its thread is the only one.
    const maps = fs.readFileSync(`/proc/${jvm.pid}/maps`, 'utf8');
    const copies = new Set([...maps.matchAll(/\S*ebpf-studio-jvmagent-[0-9a-f]+\.so/g)].map((m) => m[0]));
    assert.equal(copies.size, 1, `one agent copy mapped: ${[...copies].join(', ')}`);
    const threads = fs.readdirSync(`/proc/${jvm.pid}/task`).filter((tid) => {
      try {
        return fs.readFileSync(`/proc/${jvm.pid}/task/${tid}/comm`, 'utf8').startsWith('ebpf-studio');
      } catch {
        return false;
      }
    });
    assert.equal(threads.length, 1, 'one agent thread, reused by every profile');
    jvm.kill('SIGKILL');
    cleanup(jvm.pid);
  });

  test('an older build of the agent already loaded (by an earlier version of the extension): the new build takes SIGPROF over and profiles', async (t) => {
    const { jvm } = startJvm(['60']);
    await sleep(1500);
    // Another build is another copy (named by content hash): the same library with other bytes.
    const older = path.join(work, 'older-build.so');
    fs.writeFileSync(older, Buffer.concat([fs.readFileSync(AGENT), Buffer.from('\nan older build\n')]));
    const olderInJvm = placeAgent(jvm.pid!, older, { uid: 0, gid: 0 });
    const probe = await attachCommand(jvm.pid!, 'load', [olderInJvm, 'true', 'probe'], { timeoutMs: 20_000 });
    assert.match(probe, /return code: 0/, `the older copy loaded and installed its SIGPROF handler: ${probe}`);
    const r = runCli(['profile', '--pid', String(jvm.pid), '--java', 'agent', '--frequency', '299', '--duration', '3', '--json', '--verbose'], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as ProfileResult;
    const heavy = samplesWith(result, /^AgentSplit\.heavy$/);
    const copies = new Set(fs.readFileSync(`/proc/${jvm.pid}/maps`, 'utf8').match(/ebpf-studio-jvmagent-[0-9a-f]+\.so/g));
    t.diagnostic(`${copies.size} agent copies mapped; ${heavy} of ${result.samples} samples in AgentSplit.heavy`);
    assert.equal(copies.size, 2, 'both builds are in the JVM (neither can be unloaded)');
    assert.ok(heavy > 0, `Java frames from the new build: ${r.stderr.slice(-1500)}`);
    jvm.kill('SIGKILL');
    cleanup(jvm.pid);
  });

  test('refusals: -XX:+DisableAttachMechanism (exit 4), --java agent for --all, a bad --java value (exit 2)', async () => {
    const { jvm } = startJvm(['30'], ['-XX:+DisableAttachMechanism']);
    await sleep(800);
    const r = runCli(['profile', '--pid', String(jvm.pid), '--java', 'agent', '--duration', '1'], { timeoutMs: 30_000 });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /DisableAttachMechanism/);
    assert.equal(jvm.exitCode, null, 'the JVM is untouched');
    jvm.kill('SIGKILL');
    const bad = runCli(['profile', '--pid', String(jvm.pid), '--java', 'magic', '--duration', '1']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--java takes agent, perfmap or auto/);
    const all = runCli(['profile', '--all', '--java', 'agent', '--duration', '1']);
    assert.equal(all.code, 2);
    assert.match(all.stderr, /--java agent needs --pid/);
  });

  const T25 = JDKS[1].home;
  test('refusal: a JDK 21+ JVM with -XX:-EnableDynamicAgentLoading (exit 4, before anything is loaded, in auto mode too)', { skip: !fs.existsSync(`${T25}/bin/java`) ? `Temurin 25 is not installed at ${T25}` : undefined }, async () => {
    const { jvm, out } = startJvm(['30'], ['-XX:-EnableDynamicAgentLoading'], T25);
    await sleep(1500);
    for (const mode of ['agent', 'auto']) {
      const r = runCli(['profile', '--pid', String(jvm.pid), '--java', mode, '--duration', '1'], { timeoutMs: 30_000 });
      assert.equal(r.code, 4, `${mode}: ${r.stderr}`);
      assert.match(r.stderr, /runs with -XX:-EnableDynamicAgentLoading .*: start it with -XX:\+EnableDynamicAgentLoading, or use --java perfmap/);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line, no stack trace: ${r.stderr}`);
    }
    assert.equal(jvm.exitCode, null, 'the JVM is untouched');
    assert.doesNotMatch(out(), /agent/i, 'nothing was loaded');
    jvm.kill('SIGKILL');
    cleanup(jvm.pid);
  });
});
