// Java frame types through the agent, on real JVMs started without
// -XX:+PreserveFramePointer: the fixture FrameTypes (main → run → hot → step, step tiny) run
// until C2 has compiled it shows C2 frames and frames inlined into them; under -Xint only
// interpreted frames; under -XX:TieredStopAtLevel=1 C1 frames and no C2. Each JVM is profiled
// once its code is in the state the case is about, which the test learns from the JVM itself
// (jcmd Compiler.codelist), not from a clock. The fixture's work starts after a first profile
// has loaded the agent (see startJvm); the C2 case runs with -XX:+DebugNonSafepoints, so an
// inlined leaf is named exactly (a stopped agent leaves HotSpot's code-cache events off, and
// without them or the flag an interrupted PC maps only to the nearest safepoint's scope).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { JavaFrameType, ProfileFrame, ProfileResult } from '../../extension/protocol/profile';
import { compileJavaFixture, javaAgentSkipReason, removeJavaFixture, runCli, sleep } from '../helpers';

const JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const skip = javaAgentSkipReason(JDK);
const children: ChildProcess[] = [];
let work = '';
let classes = '';

before(() => {
  if (!skip) ({ work, classes } = compileJavaFixture('java-frame-types-', 'FrameTypes.java'));
});

after(() => removeJavaFixture(children, work));

let gates = 0;

/**
 * Starts the fixture held at its gate, loads the agent with a short profile, then opens the
 * gate: the fixture's code is all compiled after the agent was loaded and stopped, as in a JVM
 * profiled before.
 */
async function startJvm(flags: string[]): Promise<ChildProcess> {
  const gate = path.join(work, `gate-${++gates}`);
  const jvm = spawn(`${JDK}/bin/java`, [...flags, '-cp', classes, 'FrameTypes', '600', gate], { cwd: work, stdio: 'ignore' });
  children.push(jvm);
  await sleep(500); // the attach listener needs a started JVM; runCli's attach retries cover the rest
  const r = runCli(['profile', '--pid', String(jvm.pid), '--java', 'agent', '--duration', '1'], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  fs.writeFileSync(gate, '');
  return jvm;
}

/** Waits until the JVM's code list has `method` at one of `levels` (a readiness wait: the JIT works at its own pace). */
async function waitForCode(pid: number, want: { method: string; levels: number[] }[], limitMs = 120_000): Promise<string> {
  const end = Date.now() + limitMs;
  let out = '';
  while (Date.now() < end) {
    out = spawnSync(`${JDK}/bin/jcmd`, [String(pid), 'Compiler.codelist'], { encoding: 'utf8', cwd: work }).stdout ?? '';
    const has = (w: { method: string; levels: number[] }) => out.split('\n').some((l) => {
      const m = /^\d+ (\d+) \d+ (\S+)\(/.exec(l);
      return m !== null && m[2] === w.method && w.levels.includes(Number(m[1]));
    });
    if (want.every(has)) return out;
    await sleep(500);
  }
  assert.fail(`the JVM never had ${want.map((w) => `${w.method} at level ${w.levels.join('/')}`).join(' and ')}:\n${out.slice(0, 2000)}`);
}

function profile(pid: number): { result: ProfileResult; stderr: string } {
  const r = runCli(['profile', '--pid', String(pid), '--java', 'agent', '--frequency', '299', '--duration', '4', '--json', '--verbose'], { timeoutMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  return { result: JSON.parse(r.stdout) as ProfileResult, stderr: r.stderr };
}

const ours = (f: ProfileFrame) => f.module === '[java]' && /^FrameTypes\./.test(f.function ?? '');

/** Samples per type over the fixture's own frames, and the count of its frames (weighted by samples). */
function tally(r: ProfileResult): { frames: number; typed: Record<string, number>; samples: number } {
  const typed: Record<string, number> = {};
  let frames = 0;
  let samples = 0;
  for (const s of r.stacks) {
    const mine = s.frames.filter(ours);
    if (!mine.length) continue;
    samples += s.count;
    for (const f of mine) {
      frames += s.count;
      const k = f.javaType ?? 'unknown';
      typed[k] = (typed[k] ?? 0) + s.count;
    }
  }
  return { frames, typed, samples };
}

const samplesWhere = (r: ProfileResult, pred: (frames: ProfileFrame[]) => boolean) => r.stacks.filter((s) => pred(s.frames)).reduce((n, s) => n + s.count, 0);
const describeTally = (t: ReturnType<typeof tally>) => `${t.samples} samples, ${t.frames} fixture frames: ${Object.entries(t.typed).map(([k, v]) => `${k} ${((100 * v) / t.frames).toFixed(1)}%`).join(', ')}`;

/** Every inlined frame sits in a run of inlined frames that ends, towards the root, in a compiled frame. */
function inlinedRunsEndCompiled(r: ProfileResult): void {
  const compiled: (JavaFrameType | undefined)[] = ['c1', 'c2', 'compiled'];
  for (const s of r.stacks) {
    s.frames.forEach((f, i) => {
      if (f.javaType !== 'inlined') return;
      let j = i + 1;
      while (j < s.frames.length && s.frames[j].javaType === 'inlined') j++;
      assert.ok(compiled.includes(s.frames[j]?.javaType), `${f.function} is inlined into ${s.frames[j]?.function} (${s.frames[j]?.javaType}), which is not compiled code`);
    });
  }
}

describe('Java frame types through the agent (kernel)', { skip }, () => {
  test('C2-compiled code: C2 frames, and the small callees inlined into them', async (t) => {
    const jvm = await startJvm(['-XX:+UnlockDiagnosticVMOptions', '-XX:+DebugNonSafepoints']);
    // main's loop in C2 code (OSR) with run, hot and step inlined into it, and hot's own C2 code
    await waitForCode(jvm.pid!, [{ method: 'FrameTypes.hot', levels: [4] }, { method: 'FrameTypes.main', levels: [4] }]);
    const { result, stderr } = profile(jvm.pid!);
    const types = tally(result);
    t.diagnostic(describeTally(types));
    t.diagnostic(/Java frame types: .*/.exec(stderr)?.[0] ?? '');
    assert.ok(types.samples >= 300, `only ${types.samples} samples in the fixture`);
    assert.ok((types.typed.unknown ?? 0) <= 0.1 * types.frames, `${types.typed.unknown} of ${types.frames} fixture frames have no type`);
    const withC2 = samplesWhere(result, (fs) => fs.some((f) => ours(f) && f.javaType === 'c2'));
    assert.ok(withC2 >= 0.5 * types.samples, `only ${withC2} of ${types.samples} samples have a C2 frame`);
    // step is tiny: in C2 code it is always inlined into its caller (hot, itself in C2 code or inlined)
    const stepInlined = samplesWhere(result, (fs) => fs.some((f, i) => f.function === 'FrameTypes.step' && f.javaType === 'inlined' && fs[i + 1]?.function === 'FrameTypes.hot'));
    const stepUnderC2 = samplesWhere(result, (fs) => fs.some((f, i) => f.function === 'FrameTypes.step' && fs[i + 1]?.function === 'FrameTypes.hot' && ['c2', 'inlined'].includes(fs[i + 1].javaType ?? '')));
    t.diagnostic(`${stepInlined} samples with step inlined into hot; ${stepUnderC2} with step under C2-compiled or inlined hot`);
    assert.ok(stepInlined >= 10, `only ${stepInlined} samples show step inlined into hot`);
    assert.equal(stepInlined, stepUnderC2, 'under compiled hot, step is always inlined');
    inlinedRunsEndCompiled(result);
    const c1 = result.stacks.filter((s) => s.frames.some((f) => ours(f) && f.javaType === 'c1'));
    t.diagnostic(`C1 stacks: ${c1.map((s) => `${s.count}× ${s.frames.filter(ours).map((f) => `${f.function}/${f.javaType}`).join(' < ')}`).join('; ')}`);
    jvm.kill('SIGKILL');
  });

  test('-Xint: every fixture frame is interpreted', async (t) => {
    const jvm = await startJvm(['-Xint']);
    await sleep(1500); // nothing compiles under -Xint: only wait for main's loop to start
    const { result } = profile(jvm.pid!);
    const types = tally(result);
    t.diagnostic(describeTally(types));
    assert.ok(types.samples >= 300, `only ${types.samples} samples in the fixture`);
    assert.equal(types.typed.interpreted, types.frames, `not all fixture frames are interpreted: ${JSON.stringify(types.typed)}`);
    const compiledAnywhere = samplesWhere(result, (fs) => fs.some((f) => f.javaType !== undefined && f.javaType !== 'interpreted'));
    assert.equal(compiledAnywhere, 0, 'no compiled or inlined Java frame anywhere');
    jvm.kill('SIGKILL');
  });

  test('-XX:TieredStopAtLevel=1: C1 frames (and C1 inlining), never C2', async (t) => {
    const jvm = await startJvm(['-XX:TieredStopAtLevel=1']);
    await waitForCode(jvm.pid!, [{ method: 'FrameTypes.hot', levels: [1] }, { method: 'FrameTypes.main', levels: [1] }]);
    const { result } = profile(jvm.pid!);
    const types = tally(result);
    t.diagnostic(describeTally(types));
    assert.ok(types.samples >= 300, `only ${types.samples} samples in the fixture`);
    assert.equal(samplesWhere(result, (fs) => fs.some((f) => f.javaType === 'c2')), 0, 'no C2 frame anywhere');
    const withC1 = samplesWhere(result, (fs) => fs.some((f) => ours(f) && f.javaType === 'c1'));
    assert.ok(withC1 >= 0.5 * types.samples, `only ${withC1} of ${types.samples} samples have a C1 frame`);
    assert.ok((types.typed.unknown ?? 0) <= 0.1 * types.frames, `${types.typed.unknown} of ${types.frames} fixture frames have no type`);
    inlinedRunsEndCompiled(result);
    jvm.kill('SIGKILL');
  });
});
