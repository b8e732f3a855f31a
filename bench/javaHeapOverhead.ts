// `java heap` rows: what JVMTI heap sampling (profile --event alloc / memleak on a JVM) costs a
// thread allocating ~500 MB/s (bench/workloads/AllocHeavy.java, paced in 1 ms slices), at the
// default interval (512 KiB), with JFR's allocation sampling (jdk.ObjectAllocationSample at the
// `profile` settings' 300/s) as the peer in the same run. The measure is the allocating thread's
// own CPU time (ThreadMXBean, in the JVM) per second of wall time: unsampled, sampled by us,
// sampled by JFR, interleaved round by round; the cost is the extra CPU as a share of one thread.
// A context row gives the agent's own figure: its callback's time in the allocating thread.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { cli, interleave, JAVA_HOME, LineProcess, median, round, startCli, type BenchContext, type Row } from './lib';

const JFC = `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="allocation samples only">
  <event name="jdk.ObjectAllocationSample">
    <setting name="enabled">true</setting>
    <setting name="throttle">300/s</setting>
    <setting name="stackTrace">true</setting>
  </event>
</configuration>
`;

export async function benchJavaHeap(ctx: BenchContext): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 9;
  const seconds = ctx.quick ? '1' : '2';
  const java = path.join(JAVA_HOME, 'bin', 'java');
  const jcmd = (pid: number, ...args: string[]) => {
    const r = spawnSync(path.join(JAVA_HOME, 'bin', 'jcmd'), [String(pid), ...args], { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`jcmd ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  };
  // As in the CPU agent's rows: the JVM on CPU 1, the CLI on CPU 0.
  const pin = os.cpus().length >= 2;
  const args = ['-Xms256m', '-Xmx256m', '-cp', ctx.buildDir, 'AllocHeavy', '500000000'];
  const p = pin ? new LineProcess('taskset', ['-c', '1', java, '-XX:ActiveProcessorCount=1', ...args]) : new LineProcess(java, args);
  const jfc = path.join(os.tmpdir(), `ebpf-studio-bench-alloc-${process.pid}.jfc`);
  fs.writeFileSync(jfc, JFC);
  let callbackNs = 0;
  let callbackSamples = 0;
  let sampledWallNs = 0;
  try {
    await p.next('ready');
    // one answer: CPU ns of the allocating thread per wall second, and the bytes it allocated
    const measure = async (): Promise<{ cpuPerS: number; bytes: number; wallNs: number }> => {
      p.send(seconds);
      const f = (await p.next('alloc_cpu')).split(/\s+/).map(Number);
      return { cpuPerS: f[1] / (f[3] / 1e9), bytes: f[2], wallNs: f[3] };
    };
    for (let i = 0; i < 2; i++) await measure(); // JIT warm-up
    const variants = {
      plain: async () => (await measure()).cpuPerS,
      ebpfStudio: async () => {
        const t = await startCli(['profile', '--pid', String(p.pid), '--event', 'alloc', '--verbose'], pin ? '0' : undefined);
        let m;
        try {
          await measure(); // settles the attach (not counted)
          m = await measure();
        } finally {
          await t.stop();
        }
        const cb = /callback ([\d.]+) ms in the JVM \(([\d.]+) µs per sample\)/.exec(t.output());
        const n = /java-heap: (\d+) samples/.exec(t.output());
        if (cb && n) {
          callbackNs += Number(cb[1]) * 1e6;
          callbackSamples += Number(n[1]);
        }
        sampledWallNs += m.wallNs;
        return m.cpuPerS;
      },
      jfr: async () => {
        jcmd(p.pid, 'JFR.start', 'name=bench-alloc', `settings=${jfc}`);
        try {
          await measure();
          return (await measure()).cpuPerS;
        } finally {
          jcmd(p.pid, 'JFR.stop', 'name=bench-alloc');
        }
      },
    };
    const r = await interleave(rounds, variants, ctx.log);
    // command → first figures: spawn `memleak --pid` and wait for its first report line
    const firstMs: number[] = [];
    for (let i = 0; i < (ctx.quick ? 2 : 5); i++) {
      const t0 = performance.now();
      const child = spawn(process.execPath, [cli, 'memleak', '--pid', String(p.pid), '--duration', '4'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const busy = measure(); // the JVM keeps allocating meanwhile
      const ms = await new Promise<number>((resolve) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          if (/bytes live/.test(out)) resolve(performance.now() - t0);
        });
        child.once('exit', () => resolve(NaN));
      });
      await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
      await busy;
      firstMs.push(ms);
    }
    ctx.log(`  command → first figures: ${firstMs.map((x) => round(x, 0)).join(', ')} ms`);
    const cost = (xs: number[]) => median(xs.map((x, i) => ((x - r.plain[i]) / 1e9) * 100));
    const ours = cost(r.ebpfStudio);
    const jfr = cost(r.jfr);
    const plainMs = median(r.plain) / 1e6;
    const perSample = callbackSamples ? callbackNs / callbackSamples / 1000 : NaN;
    return [
      {
        name: 'java heap sampling cost, 512 KiB interval (thread allocating 500 MB/s, % of one thread)',
        value: round(ours, 2),
        unit: '%',
        target: 1,
        better: 'lower',
        peer: { name: 'JFR jdk.ObjectAllocationSample 300/s', value: round(jfr, 2) },
        detail: `extra CPU of the allocating thread per wall second, median of ${rounds} interleaved rounds of ${seconds} s; unsampled it used ${round(plainMs, 1)} ms/s; JVM on CPU 1, CLI on CPU 0`,
      },
      {
        name: 'java heap leaks: command → first figures (memleak --pid on a running JVM)',
        value: round(median(firstMs), 0),
        unit: 'ms',
        target: 2000,
        better: 'lower',
        peer: null,
        detail: `median of ${firstMs.length} runs: CLI start-up, agent load through the attach socket, then the first report once a GC has judged samples (or after 1 s)`,
      },
      {
        name: 'java heap sampling: agent callback per sample',
        value: round(perSample, 2),
        unit: 'µs',
        target: null,
        better: 'lower',
        peer: null,
        detail: `${callbackSamples} samples over ${rounds} sessions of two measures each (GetStackTrace, class name, weak reference, queueing): ≈ ${round((callbackNs / Math.max(1, sampledWallNs * 2)) * 100, 2)} % of the allocating thread's wall time`,
      },
    ];
  } finally {
    await p.close();
    fs.rmSync(jfc, { force: true });
  }
}
