// Java walk completeness on a real program: javac (test/fixtures/java/JavacLoop.java compiling
// generated sources over and over on its "javac-loop" thread), started WITHOUT
// -XX:+PreserveFramePointer and profiled with `profile --java agent`. That thread is in Java from
// its first to its last instruction (its run() is Java), so every sample of it should carry a
// Java stack; the samples that do not are counted per reason (the label frame the join leaves).
// JFR runs in the same JVM during the same window (jcmd JFR.start, settings=profile: one
// execution sample per 10 ms of a thread in Java code) as the reference: its execution samples of
// that thread, each of which has a stack by construction, against its nominal rate.
// Used by the bench row (bench/main.ts, `java-walk`) and the kernel test (test/kernel/javaWalk.test.ts).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { PROFILE_DEFAULT_STACK_COPY_KB, type ProfileResult } from '../extension/protocol/profile';
import type { Row } from './lib';

export const WALK_JDK = '/usr/lib/jvm/java-17-openjdk-amd64';
const THREAD = 'javac-loop';

export interface WalkMeasure {
  /** samples of the javac thread */
  samples: number;
  /** of those, with at least one Java frame */
  withJava: number;
  /** samples the agent found outside Java code (in VM code without a walkable last Java frame: AGCT -3/-4) */
  notInJava: number;
  /** samples without a Java stack, per label ("[Java stack not walked: ...]" or "no label") */
  reasons: Record<string, number>;
  /** samples without a Java stack, per leaf user-space frame (function or module), to see where walks fail */
  missingLeaves: Record<string, number>;
  /** samples whose native part was cut by the stack copy ("[stack deeper than ...]") */
  cutByCopy: number;
  /** of those, samples that do have a Java stack but whose native part above it was cut (a gap) */
  cutWithJava: number;
  /** deepest native stack part seen above the first Java frame (frames) */
  maxNativeFrames: number;
  /** JFR's jdk.ExecutionSample events of the same thread over the same window */
  jfrSamples: number;
  /** JFR's nominal count for the window: seconds × 100 (settings=profile samples every 10 ms) */
  jfrNominal: number;
  seconds: number;
  stackCopyKb: number;
}

/** Generated sources for javac: generics, lambdas, overloads, nested classes, enough to work for seconds. */
export function generateSources(dir: string, files: number): void {
  fs.mkdirSync(dir, { recursive: true });
  for (let i = 0; i < files; i++) {
    const prev = i > 0 ? `Gen${i - 1}` : 'Object';
    const methods: string[] = [];
    for (let m = 0; m < 12; m++) {
      methods.push(`  public <T extends Comparable<T>> java.util.List<T> m${m}(java.util.List<T> in, java.util.function.Function<T, T> f) {
    java.util.List<T> out = new java.util.ArrayList<>();
    for (T t : in) if (t.compareTo(f.apply(t)) <= ${m}) out.add(f.apply(t)); else out.add(t);
    java.util.Map<String, java.util.List<T>> g = out.stream().collect(java.util.stream.Collectors.groupingBy(x -> String.valueOf(x).substring(0, 1)));
    return g.values().stream().flatMap(java.util.List::stream).sorted().collect(java.util.stream.Collectors.toList());
  }
  public int n${m}(int a, long b) { return (int) (a * ${m + 1}L + b) ^ Integer.rotateLeft(a, ${m}); }
  public String s${m}(Object o) { return switch (String.valueOf(o).length() % 3) { case 0 -> "a" + o; case 1 -> "b" + n${m}(1, 2); default -> String.format("%s-%d", o, ${m}); }; }`);
    }
    const src = `package gen;
public class Gen${i}${i > 0 ? ` extends ${prev}` : ''} {
  public record R${i}(int a, String b, java.util.List<Integer> c) {}
  public enum E${i} { A, B, C; int w() { return ordinal() * ${i}; } }
  static final class Inner<K, V extends Number> { java.util.Map<K, V> map = new java.util.HashMap<>(); V get(K k) { return map.get(k); } }
${methods.join('\n')}
}
`;
    fs.writeFileSync(path.join(dir, `Gen${i}.java`), src);
  }
}

/** The label frames a join leaves where the Java part is missing. */
function reasonOf(functions: string[]): string {
  return functions.find((f) => f.startsWith('[Java stack not walked')) ?? 'no Java frame and no label';
}

/**
 * Starts javac in a loop, profiles it for `seconds` with the agent at `frequency` Hz while JFR
 * records, and counts.
 * `stackCopyKb` is passed as --stack-copy-kb; `extraProfileArgs` go to the CLI as well.
 */
export async function measureJavaWalk(opts: { cli: string; seconds: number; frequency: number; files?: number; stackCopyKb: number; extraProfileArgs?: string[]; log?: (m: string) => void }): Promise<WalkMeasure> {
  const log = opts.log ?? (() => {});
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-javawalk-'));
  const jdk = WALK_JDK;
  try {
    const classes = path.join(work, 'classes');
    const root = path.resolve(__dirname, '..');
    const jc = spawnSync(`${jdk}/bin/javac`, ['-d', classes, path.join(root, 'test/fixtures/java/JavacLoop.java')], { encoding: 'utf8' });
    if (jc.status !== 0) throw new Error(`javac JavacLoop.java failed: ${jc.stderr}`);
    const src = path.join(work, 'src');
    generateSources(src, opts.files ?? 150);
    // Enough seconds for warm-up + the profile + JFR's start/stop around it.
    const jvm = spawn(`${jdk}/bin/java`, ['-Xmx512m', '-cp', classes, 'JavacLoop', src, String(opts.seconds + 60)], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    jvm.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    const lines = readline.createInterface({ input: jvm.stdout! });
    try {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`javac loop not ready in 120 s: ${stderr}`)), 120_000);
        lines.on('line', (l) => l === 'ready' && (clearTimeout(t), resolve()));
        jvm.once('exit', (c) => (clearTimeout(t), reject(new Error(`javac loop exited (${c}): ${stderr}`))));
      });
      const pid = String(jvm.pid);
      const jfrFile = path.join(work, 'walk.jfr');
      const jcmd = (...a: string[]) => {
        const r = spawnSync(`${jdk}/bin/jcmd`, [pid, ...a], { encoding: 'utf8', timeout: 60_000 });
        if (r.status !== 0) throw new Error(`jcmd ${a.join(' ')}: ${r.stdout}${r.stderr}`);
      };
      jcmd('JFR.start', 'name=ebpfwalk', 'settings=profile');
      const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, [opts.cli, 'profile', '--pid', pid, '--java', 'agent', '--frequency', String(opts.frequency), '--duration', String(opts.seconds), '--json', '--stack-copy-kb', String(opts.stackCopyKb), ...(opts.extraProfileArgs ?? [])], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        c.stdout.on('data', (d) => (out += d));
        c.stderr.on('data', (d) => (err += d));
        c.once('exit', (code) => resolve({ code, stdout: out, stderr: err }));
      });
      jcmd('JFR.stop', 'name=ebpfwalk', `filename=${jfrFile}`);
      if (r.code !== 0) throw new Error(`profile exited ${r.code}: ${r.stderr.slice(-2000)}`);
      const result = JSON.parse(r.stdout) as ProfileResult;
      const m: WalkMeasure = { samples: 0, withJava: 0, notInJava: 0, reasons: {}, missingLeaves: {}, cutByCopy: 0, cutWithJava: 0, maxNativeFrames: 0, jfrSamples: 0, jfrNominal: 0, seconds: opts.seconds, stackCopyKb: opts.stackCopyKb };
      for (const s of result.stacks) {
        if (s.comm !== THREAD) continue;
        m.samples += s.count;
        const fns = s.frames.map((f) => f.function ?? '');
        const cut = fns.some((f) => f.startsWith('[stack deeper than'));
        const firstJava = s.frames.findIndex((f) => f.module === '[java]' && !(f.function ?? '').startsWith('['));
        if (cut) m.cutByCopy += s.count;
        if (cut && firstJava >= 0) m.cutWithJava += s.count;
        if (firstJava >= 0) {
          m.withJava += s.count;
          m.maxNativeFrames = Math.max(m.maxNativeFrames, s.frames.slice(0, firstJava).filter((f) => f.kind !== 'kernel').length);
        } else {
          const why = reasonOf(fns);
          m.reasons[why] = (m.reasons[why] ?? 0) + s.count;
          if (why.includes('not in Java code')) m.notInJava += s.count;
          const leaf = s.frames.find((f) => f.kind !== 'kernel');
          const at = leaf ? `${leaf.function ?? '?'} (${leaf.module ?? '?'})` : 'no user frame';
          m.missingLeaves[at] = (m.missingLeaves[at] ?? 0) + s.count;
        }
      }
      // JFR: the same thread's execution samples over the window the recording covered.
      const p = spawnSync(`${jdk}/bin/jfr`, ['print', '--events', 'jdk.ExecutionSample', '--stack-depth', '1', jfrFile], { encoding: 'utf8', maxBuffer: 256 << 20 });
      if (p.status !== 0) throw new Error(`jfr print: ${p.stderr}`);
      m.jfrSamples = p.stdout.split('\n').filter((l) => l.includes(`sampledThread = "${THREAD}"`)).length;
      m.jfrNominal = opts.seconds * 100;
      log(`  javac thread: ${m.withJava}/${m.samples} samples with a Java stack; missing: ${JSON.stringify(m.reasons)}; cut by the copy: ${m.cutByCopy} (${m.cutWithJava} of them with a Java stack); native frames above Java ≤ ${m.maxNativeFrames}; JFR ${m.jfrSamples} execution samples (nominal ${m.jfrNominal})`);
      return m;
    } finally {
      jvm.kill('SIGKILL');
      for (const f of [`/tmp/perf-${jvm.pid}.map`, `/tmp/.java_pid${jvm.pid}`]) fs.rmSync(f, { force: true });
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * `java-walk` rows: the share of javac's samples with a Java stack (target 97 %), and per sampling
 * tick how many produced a Java stack, ours against JFR's execution samples in the same window.
 */
export async function benchJavaWalk(ctx: { quick: boolean; log(m: string): void }, cli: string): Promise<Row[]> {
  const seconds = ctx.quick ? 5 : 15;
  const frequency = 199;
  const stackCopyKb = PROFILE_DEFAULT_STACK_COPY_KB;
  const m = await measureJavaWalk({ cli, seconds, frequency, stackCopyKb, log: ctx.log });
  // The default copy size is chosen from this: with the agent, the copy only has to reach the first
  // Java frame (the Java part comes from AsyncGetCallTrace), so a copy is too small only where it
  // cuts samples that have a Java stack. The full run measures the neighbours too.
  let copies = '';
  if (!ctx.quick) {
    for (const kb of [8, 32]) {
      const o = await measureJavaWalk({ cli, seconds: 10, frequency, stackCopyKb: kb, log: ctx.log });
      copies += `At --stack-copy-kb ${kb}: ${o.withJava}/${o.samples} with a Java stack, ${o.cutWithJava} of those cut, ${o.cutByCopy} cut in all. `;
    }
  }
  const share = m.samples ? (100 * m.withJava) / m.samples : NaN;
  const inJava = m.samples - m.notInJava ? (100 * m.withJava) / (m.samples - m.notInJava) : NaN;
  const perTick = (100 * m.withJava) / (seconds * frequency);
  const jfrPerTick = (100 * m.jfrSamples) / m.jfrNominal;
  const missing = Object.entries(m.reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${v}× ${k}`)
    .join(', ');
  const detail =
    `javac (JDK 17, no -XX:+PreserveFramePointer) compiling generated sources on one thread, profile --java agent at ${frequency} Hz for ${seconds} s, --stack-copy-kb ${stackCopyKb}: ` +
    `${m.withJava} of ${m.samples} samples of that thread with a Java stack; without: ${missing || 'none'}; ` +
    `${m.cutByCopy} cut by the stack copy (${m.cutWithJava} of them with a Java stack, the rest are samples the agent could not walk); at most ${m.maxNativeFrames} native frames above the first Java frame. ` +
    copies +
    `JFR (settings=profile, 10 ms) in the same JVM and window: ${m.jfrSamples} execution samples of the thread of ${m.jfrNominal} nominal ticks ` +
    `(JFR drops the ticks it cannot walk or where the thread is not in Java, and says nothing about them)`;
  return [
    { name: 'java walk completeness on javac (share of samples in Java code with a Java stack)', value: Math.round(inJava * 10) / 10, unit: '%', target: 97, better: 'higher', peer: null, detail: `${detail}. Samples the agent found in VM code without a walkable Java frame (${m.notInJava}) are left out of this row and counted in the next` },
    { name: 'java walk completeness on javac (share of all the thread\'s samples with a Java stack)', value: Math.round(share * 10) / 10, unit: '%', target: null, better: 'higher', peer: null, detail: `${m.withJava} of ${m.samples}`, ...(share < 97 ? { limit: 'samples taken in VM code whose last Java frame is not walkable (AGCT -3/-4) are not recovered' } : {}) },
    {
      name: 'java stacks per sampling tick on javac (ours / JFR execution samples, same run)',
      value: Math.round(perTick * 10) / 10,
      unit: '%',
      target: null,
      better: 'higher',
      peer: { name: 'JFR', value: Math.round(jfrPerTick * 10) / 10 },
      detail: `ours ${m.withJava} Java stacks over ${seconds} s × ${frequency} Hz; JFR ${m.jfrSamples} over ${seconds} s × 100 Hz; both count only ticks where the thread was on a CPU (a loaded machine lowers both alike)`,
    },
  ];
}
