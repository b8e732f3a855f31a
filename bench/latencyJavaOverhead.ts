// `latency Java agent`: what timing a Java method with our agent costs per call on JDK 17
// (`ebpf-studio latency --pid P Class.method`: the class rewritten in the running JVM, System.nanoTime
// at entry and exit, the histograms and counters updated per call), beside JFR's method timing
// (jdk.MethodTiming, JEP 520) on Temurin 25 in the same run. The workload is the kernel test's
// fixture (test/fixtures/java/LatencyAgentTarget.java): `bench N` times N calls of its small
// method tiny() itself, best of 5. Ours: rounds of untimed / timed (a session attached to the same
// JVM) / untimed after stop. JFR: a Temurin 25 JVM started with method timing on tiny(), beside
// one without. The figure is timed minus untimed, ns per call. A second row times the same calls
// split by caller (`--by-caller`: the agent walks to the calling frame on every call), on fewer
// calls as it costs more, beside JFR's method tracing on Temurin 25 (jdk.MethodTrace with its
// stack, one event per call: what our JDK 25 path reads its callers from), both in the same rounds.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { JAVA_HOME, median, root, round, startCli, type BenchContext, type Row } from './lib';
import { JDK25 } from './jfrMethodTrace';

class Jvm {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];

  constructor(java: string, flags: string[], dir: string) {
    this.child = spawn(java, [...flags, '-cp', dir, 'LatencyAgentTarget'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
    readline.createInterface({ input: this.child.stdout! }).on('line', (l) => this.lines.push(l));
  }

  async line(prefix: string): Promise<string> {
    for (let t = 0; t < 6000; t++) {
      const i = this.lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return this.lines.splice(i, 1)[0];
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the JVM did not say ${prefix}`);
  }

  async bench(n: number): Promise<number> {
    this.child.stdin!.write(`bench ${n}\n`);
    return Number(/nsPerCall=([\d.]+)/.exec(await this.line('bench'))![1]);
  }
}

interface ByCallerRounds {
  bcBase: number[];
  bcTimed: number[];
  jfrBase2: number[];
  jfrTraced: number[];
}

/** One round of the by-caller row, n calls each: ours untimed then split by caller, JFR without then with method tracing. */
async function byCallerRound(ctx: BenchContext, ours: Jvm, j25: Jvm[], n: number, r: ByCallerRounds): Promise<void> {
  r.bcBase.push(await ours.bench(n));
  const s = await startCli(['latency', '--pid', String(ours.child.pid), 'LatencyAgentTarget.tiny(J)J', '--by-caller']);
  r.bcTimed.push(await ours.bench(n));
  await s.stop();
  if (j25.length > 2) {
    r.jfrBase2.push(await j25[0].bench(n));
    r.jfrTraced.push(await j25[2].bench(n));
  }
  ctx.log(`latency-java by caller: ours ${r.bcBase.at(-1)} → ${r.bcTimed.at(-1)} ns/call${j25.length > 2 ? `; JFR tracing ${r.jfrBase2.at(-1)} → ${r.jfrTraced.at(-1)}` : ''}`);
}

export async function benchLatencyJava(ctx: BenchContext): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-latjava-'));
  const jvms: Jvm[] = [];
  try {
    const jc = spawnSync(path.join(JAVA_HOME, 'bin', 'javac'), ['-d', dir, path.join(root, 'test', 'fixtures', 'java', 'LatencyAgentTarget.java')], { encoding: 'utf8' });
    if (jc.status !== 0) throw new Error(jc.stderr);
    const n = ctx.quick ? 2_000_000 : 5_000_000;
    const ours = new Jvm(path.join(JAVA_HOME, 'bin', 'java'), [], dir);
    jvms.push(ours);
    const jfr = fs.existsSync(path.join(JDK25, 'bin', 'java'));
    const j25 = jfr
      ? [
          new Jvm(path.join(JDK25, 'bin', 'java'), [], dir),
          new Jvm(path.join(JDK25, 'bin', 'java'), [`-XX:StartFlightRecording:method-timing=LatencyAgentTarget::tiny,filename=${path.join(dir, 'mt.jfr')}`], dir),
          new Jvm(path.join(JDK25, 'bin', 'java'), [`-XX:StartFlightRecording:method-trace=LatencyAgentTarget::tiny,maxsize=64m,filename=${path.join(dir, 'trace.jfr')}`], dir),
        ]
      : [];
    jvms.push(...j25);
    for (const j of jvms) await j.line('ready');
    const r = { base: [] as number[], timed: [] as number[], after: [] as number[], jfrBase: [] as number[], jfrTimed: [] as number[], bcBase: [] as number[], bcTimed: [] as number[], jfrBase2: [] as number[], jfrTraced: [] as number[] };
    const nc = Math.round(n / 10);
    for (let round_ = 0; round_ < (ctx.quick ? 2 : 5); round_++) {
      r.base.push(await ours.bench(n));
      const s = await startCli(['latency', '--pid', String(ours.child.pid), 'LatencyAgentTarget.tiny(J)J']);
      r.timed.push(await ours.bench(n));
      await s.stop();
      r.after.push(await ours.bench(n));
      if (jfr) {
        r.jfrBase.push(await j25[0].bench(n));
        r.jfrTimed.push(await j25[1].bench(n));
      }
      ctx.log(`latency-java round ${round_ + 1}: ours ${r.base.at(-1)} → ${r.timed.at(-1)} → ${r.after.at(-1)} ns/call${jfr ? `; JFR ${r.jfrBase.at(-1)} → ${r.jfrTimed.at(-1)}` : ''}`);
      await byCallerRound(ctx, ours, j25, nc, r);
    }
    const base = median(r.base);
    const load = os.loadavg()[0].toFixed(2);
    return [
      {
        name: 'Java latency on JDK 17 (our agent): added time per call',
        value: round(median(r.timed) - base, 0),
        unit: 'ns',
        target: null,
        better: 'lower',
        peer: jfr ? { name: 'JFR method timing on Temurin 25 (jdk.MethodTiming)', value: round(median(r.jfrTimed) - median(r.jfrBase), 0) } : null,
        detail: `${n.toLocaleString('en-US')} calls of a small static method timed by the program (best of 5 per round), median of ${r.base.length} rounds, load ${load}: JDK 17 ${round(base, 1)} ns per call untimed, ${round(median(r.timed), 1)} timed by our agent, ${round(median(r.after), 1)} after the session stopped (class restored)${jfr ? `; Temurin 25 ${round(median(r.jfrBase), 1)} without, ${round(median(r.jfrTimed), 1)} with method timing` : ''}`,
      },
      {
        name: 'Java latency by caller on JDK 17 (our agent, --by-caller): added time per call',
        value: round(median(r.bcTimed) - median(r.bcBase), 0),
        unit: 'ns',
        target: null,
        better: 'lower',
        peer: jfr ? { name: 'JFR method tracing with stacks on Temurin 25 (jdk.MethodTrace)', value: round(median(r.jfrTraced) - median(r.jfrBase2), 0) } : null,
        detail: `${nc.toLocaleString('en-US')} calls of the same method (best of 5 per round), median of ${r.bcBase.length} rounds, load ${load}: JDK 17 ${round(median(r.bcBase), 1)} ns per call untimed, ${round(median(r.bcTimed), 1)} timed with its caller counted (a StackWalker walk to the calling frame per call)${jfr ? `; Temurin 25 ${round(median(r.jfrBase2), 1)} without, ${round(median(r.jfrTraced), 1)} with a jdk.MethodTrace event and its stack per call` : ''}`,
      },
    ];
  } finally {
    for (const j of jvms) j.child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
