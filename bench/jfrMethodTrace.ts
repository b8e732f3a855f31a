// `jfr-method-trace`: what JDK 25's JFR method tracing costs per call of the traced method, the
// instrumentation `ebpf-studio latency --pid P Class.method` asks a JDK 25 JVM for (jdk.MethodTrace,
// threshold 0, a stack per call), beside JFR's method timing (jdk.MethodTiming, counts and
// min/avg/max only) on the same method in the same run. bench/workloads/MethodCalls.java times
// N calls of a small method itself (System.nanoTime(), after a warm-up); each variant is a fresh
// Temurin 25 JVM started with the recording already on (-XX:StartFlightRecording, the same
// event settings our attach path sets), rounds interleaved. The figure is the added ns per call.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { interleave, median, round, type BenchContext, type Row } from './lib';

export const JDK25 = '/usr/lib/jvm/temurin-25-jdk-amd64';

function nsPerCall(dir: string, calls: number, flags: string[]): number {
  const r = spawnSync(path.join(JDK25, 'bin', 'java'), [...flags, '-cp', dir, 'MethodCalls', String(calls)], { encoding: 'utf8', timeout: 300_000 });
  const m = /nsPerCall=([\d.]+)/.exec(r.stdout);
  if (r.status !== 0 || !m) throw new Error(`MethodCalls ${flags.join(' ')} failed: ${r.stderr.slice(-400)}`);
  return Number(m[1]);
}

export async function benchJfrMethodTrace(ctx: BenchContext): Promise<Row[]> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-jfr-mt-'));
  const calls = ctx.quick ? 500_000 : 2_000_000;
  try {
    const rec = (what: string) => [`-XX:StartFlightRecording:${what}=MethodCalls::step,filename=${path.join(out, `${what}.jfr`)}`];
    const r = await interleave(
      ctx.quick ? 2 : 5,
      {
        base: async () => nsPerCall(ctx.buildDir, calls, []),
        timing: async () => nsPerCall(ctx.buildDir, calls, rec('method-timing')),
        trace: async () => nsPerCall(ctx.buildDir, calls, rec('method-trace')),
      },
      ctx.log,
    );
    const base = median(r.base);
    const load = os.loadavg()[0].toFixed(2);
    return [
      {
        name: 'Java latency on JDK 25 (JFR method tracing): added time per call',
        value: round(median(r.trace) - base, 0),
        unit: 'ns',
        target: null,
        better: 'lower',
        peer: { name: 'JFR method timing (jdk.MethodTiming)', value: round(median(r.timing) - base, 0) },
        detail: `Temurin 25, ${calls.toLocaleString('en-US')} calls of a small static method timed by the program, median of ${r.base.length} interleaved rounds, load ${load}: ${round(base, 1)} ns per call untraced, ${round(median(r.timing), 1)} with method timing, ${round(median(r.trace), 1)} with method tracing (an event and a stack trace per call)`,
      },
    ];
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}
