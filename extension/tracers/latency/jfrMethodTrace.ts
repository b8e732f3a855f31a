// Java method latency on JDK 25 and later through JFR's method tracing (JEP 520): the JVM itself
// instruments the method (bytecode, at its entry and exits) and writes one jdk.MethodTrace event
// per call with its duration and the caller's stack. We start a recording of that event alone
// (threshold 0: every call) through our attach path, as the JVM's owner; every few seconds a
// JFR.dump of it gives the live figures, and at the end JFR.stop writes the whole of it, read
// with our own JFR reader into the latency tracer's document. The recording is stopped (and its
// files removed) whatever happens: nothing stays running in the JVM.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CallerLatency, LatencyOptions, LatencyResult, LatencyStats, LatencyUpdate, SlowCall } from '../../protocol/latency';
import type { HistInterval } from '../../protocol/histogram';
import { inputError } from '../../protocol/errors';
import { toBuckets } from '../../model/log2hist';
import { MethodTraceBuilder, type TracedCall } from '../../model/jfr/methodTrace';
import { JavaCallSiteTable, javaCallerRows } from '../../model/javaCallers';
import { JfrError } from '../../model/jfr/cursor';
import { readJfrFile } from '../../sys/jfrFile';
import { checkPid, identify, processInfo, type ProcessIdentity } from '../../sys/proc/processes';
import { assertOwnProcess, requester } from '../../sys/ownership';
import { dumpRecording, methodFilter, requireMethodTracing, startRecording, stopRecording } from '../../sys/jvm/jfrRecord';
import { guardRecording } from '../../sys/jvm/recordingGuard';
import { watchTarget } from '../targetWatch';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { FINE_SLOTS, fineSlot, percentile } from './decode';
import { endJavaSlowProfile, startJavaSlowProfile, withProfileStats, type JavaSlowProfile } from './javaSlowProfile';

/** Live figures come from a JFR.dump of the whole recording: at most this often. */
export const JFR_DUMP_MIN_S = 2;
/** Beyond this size a dump is not taken for live figures (the final read still is). */
const LIVE_DUMP_MAX_BYTES = 256 * 1024 * 1024;
const SLOW_KEPT = 100;
const ATTACH = { timeoutMs: 20_000 };

/** The JVM descriptor of a `Class.method(descriptor)` target ('' for every overload). */
export function javaDescriptor(target: string): string {
  const paren = target.indexOf('(');
  return paren < 0 ? '' : target.trim().slice(paren).slice(0, 1000);
}

/**
 * "com.x.Foo.parse" or "com.x.Foo::parse" → JFR's "com.x.Foo::parse" (a descriptor after it,
 * "(I)J", is ours to match: JFR's filter times every overload); undefined when it names no Java method.
 */
export function javaMethodFilter(target: string): string | undefined {
  const paren = target.indexOf('(');
  const t = (paren < 0 ? target : target.slice(0, paren)).trim();
  if (t.includes('::')) return t;
  const m = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\.([A-Za-z_$][\w$]*|<init>|<clinit>)$/.exec(t);
  return m ? `${m[1]}::${m[2]}` : undefined;
}

/**
 * Whether this latency session goes through JFR: a Java method (Class.method, Class::method) of
 * a JVM of JDK 25 or later. A native function of a JVM is named by its (mangled) symbol.
 */
export function usesJfrMethodTrace(pid: number, target: string): boolean {
  return javaMethodFilter(target) !== undefined && (processInfo(pid)?.jvm?.feature ?? 0) >= 25;
}

function monotonicOffsetNs(): number {
  return Date.now() * 1e6 - Number(process.hrtime.bigint());
}

/** Slow-call windows kept from a read for their profile (each a few dozen bytes). */
const WINDOWS_MAX = 100_000;
/**
 * JFR writes a call's event when it returns, so a dump says nothing of the calls still running:
 * the profile's samples wait this long behind the last dump before they are decided. A slow call
 * longer than this may lose its first samples (counted).
 */
const WINDOW_LAG_NS = 10_000_000_000n;

/**
 * Wall clock minus CLOCK_MONOTONIC to the microsecond, for JFR's epoch times of the slow calls
 * against the profile's bpf_ktime_get_ns: read at a millisecond edge of Date.now (≤ 1 ms of spin).
 */
function preciseMonotonicOffsetNs(): number {
  const d0 = Date.now();
  let d = d0;
  for (let i = 0; d === d0 && i < 10_000_000; i++) d = Date.now();
  return d * 1e6 - Number(process.hrtime.bigint());
}

class JfrLatencySession {
  private builder: MethodTraceBuilder;
  private prevLog2: number[] = [];
  private readonly intervals: HistInterval[] = [];
  private readonly t0 = Date.now();
  private readonly monoOffset = monotonicOffsetNs();
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-jfr-'));
  private timer?: NodeJS.Timeout;
  private readonly unwatch: () => void;
  private reading: Promise<void> = Promise.resolve();
  private seq = 0;
  private liveOff = false;
  private readonly warnings: string[] = [];
  closed = false;

  constructor(
    private readonly o: LatencyOptions,
    private readonly name: string,
    private readonly filter: string,
    private readonly jdk: string,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'latency'>,
    target: ProcessIdentity,
  ) {
    this.builder = this.fresh();
    this.schedule(0);
    this.unwatch = watchTarget(target, () => this.targetGone());
  }

  /** profileSlow: the JVM's wall-clock profile, kept to the windows of the final read's slow calls */
  prof?: JavaSlowProfile;
  private readonly preciseOffset = preciseMonotonicOffsetNs();

  private fresh(windows = false): MethodTraceBuilder {
    const b = new MethodTraceBuilder(this.o.unit, Math.round(this.o.thresholdMs * 1e6), { slots: FINE_SLOTS, slotOf: fineSlot }, SLOW_KEPT, javaDescriptor(this.o.target), windows ? WINDOWS_MAX : 0);
    if (this.o.byCaller) b.callers = new JavaCallSiteTable();
    b.only = this.filter.replace('::', '.');
    return b;
  }

  /** byCaller: the calls of the last read per calling method (each call's caller is its event's top frame). */
  private callers(): { callers?: CallerLatency[] } {
    const t = this.builder.callers;
    return t ? { callers: javaCallerRows(t.list(), t.other) } : {};
  }

  /** A read's slow calls as the profile's windows, on its clock (bpf_ktime_get_ns), with the horizon the read vouches for. */
  private windowsOf(b: MethodTraceBuilder | undefined, dumpedAtNs?: bigint): void {
    const prof = this.prof;
    if (!prof || !b) return;
    const mono = (epochNs: number) => BigInt(Math.round(epochNs - this.preciseOffset));
    prof.windows.resetTo(
      b.windows.map((w) => ({ tid: w.tid, startNs: mono(w.startEpochNs), endNs: mono(w.endEpochNs) })),
      dumpedAtNs === undefined ? undefined : dumpedAtNs - WINDOW_LAG_NS,
      dumpedAtNs === undefined ? WINDOW_LAG_NS : 0n,
    );
    prof.windows.n.dropped += b.windowsDropped;
  }

  /** The final read's slow calls as the profile's windows; then the profile of the samples inside them. */
  private async endProfile(b: MethodTraceBuilder | undefined): Promise<void> {
    if (!this.prof) return;
    this.windowsOf(b);
    await endJavaSlowProfile(this.prof, this.env.log);
  }

  private serial(f: () => Promise<void>): Promise<void> {
    this.reading = this.reading.then(f).catch((e) => this.env.log(`latency (JFR): ${(e as Error).message}`));
    return this.reading;
  }

  /** Reads a recording file whole into a new builder, then removes it. */
  private readFile(file: string, windows = false): MethodTraceBuilder {
    const b = this.fresh(windows);
    try {
      const info = readJfrFile(file, b);
      // JFR keeps a recording under its size limit (250 MB) by dropping its oldest chunks
      if (info.chunks && info.startNanos > this.t0 * 1e6 + 5e9 && !this.warnings.some((w) => w.startsWith('JFR dropped')))
        this.warnings.push(`JFR dropped the recording's oldest part (over its 250 MB limit): the figures cover its last ${Math.round(info.durationNanos / 1e9)} s only`);
    } catch (e) {
      if (e instanceof JfrError) throw inputError(`the JVM's recording could not be read: ${e.message}`);
      throw e;
    } finally {
      fs.rmSync(file, { force: true });
    }
    return b;
  }

  /** One interval: what the new read adds to the log2 histogram since the last. */
  private advance(b: MethodTraceBuilder): LatencyUpdate {
    const now = b.log2.map((c, i) => c - (this.prevLog2[i] ?? 0));
    this.prevLog2 = [...b.log2];
    this.builder = b;
    const interval = { timestampNs: Number(process.hrtime.bigint()), buckets: toBuckets(now.map((c) => Math.max(0, c))) };
    if (this.o.retain !== false) this.intervals.push(interval);
    return { interval, keys: [], dropped: 0, stats: this.stats(), slow: this.slow().slice(0, 50), ...this.callers(), ...(this.warnings.length ? { warnings: [...this.warnings] } : {}) };
  }

  /**
   * The next live read: each one dumps and reads the whole recording so far, so it is spaced to
   * at least ten times what the last one took (its cost stays under a tenth of a CPU).
   */
  private schedule(lastMs: number): void {
    if (this.closed || this.liveOff) return;
    const ms = Math.max(JFR_DUMP_MIN_S * 1000, this.o.intervalS * 1000, 10 * lastMs);
    this.timer = setTimeout(() => {
      const t = Date.now();
      void this.serial(() => this.live()).then(() => this.schedule(Date.now() - t));
    }, ms);
  }

  private async live(): Promise<void> {
    if (this.closed || this.liveOff) return;
    const dumpedAt = process.hrtime.bigint(); // every call that ended before is in the dump
    const file = await dumpRecording(this.o.pid, this.name, path.join(this.dir, `live-${++this.seq}.jfr`), ATTACH);
    if (fs.statSync(file).size > LIVE_DUMP_MAX_BYTES) this.liveOff = true;
    const b = this.readFile(file, Boolean(this.prof));
    if (this.closed) return;
    this.windowsOf(b, dumpedAt);
    this.events.update(this.advance(b));
  }

  stats(): LatencyStats {
    return withProfileStats(this.callStats(), this.prof);
  }

  private callStats(): LatencyStats {
    const b = this.builder;
    const seconds = Math.max(0.001, (Date.now() - this.t0) / 1000);
    // interpolated inside a slot, a percentile could pass the exact maximum
    const pct = (p: number) => Math.min(b.maxNs, Math.round(percentile(b.fineCounts, p)));
    return {
      count: b.calls,
      totalNs: b.totalNs,
      p50Ns: pct(50),
      p90Ns: pct(90),
      p99Ns: pct(99),
      maxNs: b.maxNs,
      callsPerS: b.calls / seconds,
      abandoned: 0,
      exited: 0,
      tooDeep: 0,
      slowLost: 0,
      ...(this.o.thresholdMs ? { slowCalls: b.slowCount } : {}),
    };
  }

  private slow(): SlowCall[] {
    return this.builder.slowest().map((c: TracedCall) => ({ durationNs: c.durationNs, tid: c.tid, endNs: Math.max(0, c.endEpochNs - this.monoOffset), stack: c.stack }));
  }

  result(): LatencyResult {
    const h = toBuckets(this.builder.log2);
    const methods = [...this.builder.methods];
    return {
      tracer: 'latency',
      unit: this.o.unit,
      histograms: [{ key: -1, comm: 'all', count: this.builder.calls, buckets: h }],
      intervals: [...this.intervals],
      dropped: 0,
      probe: { function: methods.length === 1 ? methods[0] : this.filter, module: `JVM pid ${this.o.pid} (JDK ${this.jdk}): JFR method tracing`, address: '0x0', returns: 'jfr-method-trace' },
      stats: this.stats(),
      slow: this.slow(),
      ...this.callers(),
      ...(this.prof?.result ? { profile: this.prof.result } : {}),
    };
  }

  /** Stops the recording: its whole content read when the JVM still runs (`keep`), else discarded. */
  async finish(keep: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.unwatch();
    await this.reading;
    let b: MethodTraceBuilder | undefined;
    try {
      const file = await stopRecording(this.o.pid, this.name, keep ? path.join(this.dir, 'final.jfr') : undefined, ATTACH).catch(async (e) => {
        // never leave the tracing running in the JVM: stop it without a file, then say why
        await stopRecording(this.o.pid, this.name, undefined, ATTACH).catch(() => undefined);
        throw e;
      });
      if (!file) return;
      b = this.readFile(file, Boolean(this.prof));
      if (!b.calls) this.warnings.push(`no call of ${this.filter}${javaDescriptor(this.o.target)} was timed: it was not called while measured, or the name is not the method's (JFR needs the class's full name, e.g. com.example.Foo.parse)`);
      this.events.update(this.advance(b));
    } finally {
      fs.rmSync(this.dir, { recursive: true, force: true });
      await this.endProfile(b);
    }
  }

  private targetGone(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    void this.reading.then(async () => {
      fs.rmSync(this.dir, { recursive: true, force: true });
      await this.endProfile(undefined);
      this.events.ended('target-exited', `process ${this.o.pid} exited (the figures are those of the last read)`);
    });
  }
}

/** The latency session of a Java method on a JDK 25+ JVM. */
export async function startJfrLatency(o: LatencyOptions, env: TracerEnv, events: SessionEvents<'latency'>): Promise<Session<'latency'>> {
  checkPid(o.pid);
  assertOwnProcess(o.pid, 'measuring a Java method', env.requester ?? requester());
  const target = identify(o.pid);
  if (!target) throw inputError(`no process with pid ${o.pid} is running (check with: ps -p ${o.pid})`);
  const { version } = requireMethodTracing(o.pid);
  const method = javaMethodFilter(o.target);
  if (!method) throw inputError(`${JSON.stringify(o.target.slice(0, 200))} names no Java method: give Class.method or Class::method (e.g. com.example.Foo.parse)`);
  const filter = methodFilter([method], 'the method');
  const name = `ebpf-studio-latency-${process.pid}-${Date.now()}`;
  const prof = o.profileSlow ? await startJavaSlowProfile(o, env) : undefined;
  try {
    await startRecording(o.pid, name, `settings=none +jdk.MethodTrace#enabled=true +jdk.MethodTrace#filter=${filter} +jdk.MethodTrace#threshold=0ms +jdk.MethodTrace#stackTrace=true`, ATTACH);
  } catch (e) {
    await prof?.off.stop().catch(() => undefined);
    throw e;
  }
  // a killed CLI or editor must not leave the JVM tracing the method for nobody
  const guard = guardRecording(o.pid, name, env.log);
  env.log(`latency: JFR recording ${name} traces ${filter} in pid ${o.pid} (JDK ${version})`);
  let s: JfrLatencySession;
  try {
    s = new JfrLatencySession(o, name, filter, version, env, events, target);
    s.prof = prof;
  } catch (e) {
    await stopRecording(o.pid, name, undefined, ATTACH).catch(() => undefined);
    await prof?.off.stop().catch(() => undefined);
    guard.release();
    throw e;
  }
  return {
    targets: [o.pid],
    warnings: [],
    snapshot: () => s.result(),
    async stop() {
      try {
        await s.finish(true);
      } finally {
        guard.release();
      }
      return s.result();
    },
  };
}
