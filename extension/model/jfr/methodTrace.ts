// JDK 25's method timing and tracing events (JEP 520) as our figures: jdk.MethodTrace (one event
// per timed call, with its duration and the caller's stack) folded into the latency tracer's
// shapes (log2 histogram, exact count/total/max, percentiles from the same log-linear slots the
// BPF side keeps, the slowest calls with their Java stacks), and jdk.MethodTiming (JFR's own
// per-method count/min/avg/max, written at each chunk's end) per method. Pure: no I/O.
import type { Frame } from '../../protocol/frames';
import type { ProfileFrame } from '../../protocol/profile';
import type { HistUnit } from '../../protocol/histogram';
import { bucketIndex } from '../log2hist';
import { PROFILE_LIMITS, ReadBudget } from '../readLimits';
import { JFR_LIMITS, type Chunk, type EventVisitor, type JfrObject } from './chunk';
import type { JfrClass } from './metadata';
import { JfrStacks, sourceOfClass } from './stacks';
import type { JavaCallSiteTable } from '../javaCallers';

export const METHOD_TRACE = 'jdk.MethodTrace';
export const METHOD_TIMING = 'jdk.MethodTiming';

/** One timed call kept for its stack: the method, then its caller, ... */
export interface TracedCall {
  durationNs: number;
  tid: number;
  /** wall-clock (epoch) ns when it returned */
  endEpochNs: number;
  stack: Frame[];
}

function toFrame(f: ProfileFrame): Frame {
  return { address: f.address, kind: f.kind, module: f.module ?? '[java]', ...(f.function ? { function: f.function } : {}), ...(f.file ? { file: f.file } : {}), ...(f.line ? { line: f.line } : {}), ...(f.javaType ? { javaType: f.javaType } : {}) };
}

/** "java/util/HashMap" + "resize" → "java.util.HashMap.resize" */
function methodName(c: Chunk, v: JfrObject): string {
  const cls = c.str(v, 'method', 'type', 'name') ?? '?';
  return `${cls.replace(/\//g, '.')}.${c.str(v, 'method', 'name') ?? '?'}`;
}

/** A slow call's time window: its thread (OS id) and wall-clock (epoch) ns. */
export interface TracedWindow {
  tid: number;
  startEpochNs: number;
  endEpochNs: number;
}

/** Every jdk.MethodTrace event: cumulative figures, read once per recording (or dump of it). */
export class MethodTraceBuilder implements EventVisitor {
  calls = 0;
  totalNs = 0;
  maxNs = 0;
  /** calls at least the threshold long (all of them with no threshold) */
  slowCount = 0;
  /** counts per slot of `fine.slotOf` (the latency tracer's log-linear slots: percentiles within ~3 %) */
  readonly fineCounts: number[];
  /** log2 buckets in the unit */
  readonly log2: number[] = [];
  /** the methods the events timed (a class filter times all its methods) */
  readonly methods = new Set<string>();
  private slow: TracedCall[] = [];
  /** windowsMax > 0: every slow call's window (for the profile of the slow calls), at most windowsMax */
  readonly windows: TracedWindow[] = [];
  windowsDropped = 0;
  /** by caller: each call counted at its caller's frame (set before the read) */
  callers?: JavaCallSiteTable;
  /**
   * only events of this method ("pkg.Class.method"): JFR unites the method filters of every
   * recording the JVM runs, so a recording also gets the calls another session asked for
   */
  only?: string;
  private readonly frames: JfrStacks;
  private readonly unitNs: number;

  constructor(
    unit: HistUnit,
    private readonly thresholdNs: number,
    private readonly fine: { slots: number; slotOf(ns: number): number },
    private readonly keep = 100,
    /** only the overload of this JVM descriptor, e.g. "(I)J" (JFR's filter times every overload) */
    private readonly descriptor = '',
    private readonly windowsMax = 0,
  ) {
    this.fineCounts = new Array<number>(fine.slots).fill(0);
    this.unitNs = unit === 'ms' ? 1e6 : 1e3;
    this.frames = new JfrStacks(new ReadBudget('method trace', { ...PROFILE_LIMITS, maxReadMs: JFR_LIMITS.maxReadMs }));
  }

  wants(t: JfrClass): boolean {
    return t.name === METHOD_TRACE;
  }

  event(_t: JfrClass, v: JfrObject, c: Chunk): void {
    if (this.descriptor && c.str(v, 'method', 'descriptor') !== this.descriptor) return;
    const name = methodName(c, v);
    if (this.only !== undefined && name !== this.only) return;
    const ns = typeof v.duration === 'number' ? Math.max(0, c.durationNanos(v.duration)) : 0;
    this.methods.add(name);
    this.calls++;
    this.totalNs += ns;
    if (ns > this.maxNs) this.maxNs = ns;
    this.fineCounts[this.fine.slotOf(ns)]++;
    const b = bucketIndex(Math.floor(ns / this.unitNs));
    while (this.log2.length <= b) this.log2.push(0);
    this.log2[b]++;
    if (this.callers) this.caller(c, v, ns, b);
    if (ns < this.thresholdNs) return;
    this.slowCount++;
    if (this.windowsMax) this.window(c, v, ns);
    if (this.slow.length >= this.keep && ns <= this.slow[this.slow.length - 1].durationNs) return;
    this.frames.enter(c);
    const cls = c.str(v, 'method', 'type', 'name') ?? '?';
    const own: Frame = { address: '0x0', kind: 'jit', module: '[java]', function: name, ...(sourceOfClass(cls) ? { file: sourceOfClass(cls)! } : {}) };
    const stack = [own, ...this.frames.stack(v.stackTrace).frames.map(toFrame)];
    const start = typeof v.startTime === 'number' ? c.ticksToNanos(v.startTime) : 0;
    this.slow.push({ durationNs: ns, tid: this.frames.thread(v.eventThread).tid, endEpochNs: start + ns, stack });
    this.slow.sort((a, b) => b.durationNs - a.durationNs);
    if (this.slow.length > this.keep) this.slow.length = this.keep;
  }

  private window(c: Chunk, v: JfrObject, ns: number): void {
    if (this.windows.length >= this.windowsMax) {
      this.windowsDropped++;
      return;
    }
    this.frames.enter(c);
    const start = typeof v.startTime === 'number' ? c.ticksToNanos(v.startTime) : 0;
    this.windows.push({ tid: this.frames.thread(v.eventThread).tid, startEpochNs: start, endEpochNs: start + ns });
  }

  /** The event's stack starts at the frame that called the method: its call site. */
  private caller(c: Chunk, v: JfrObject, ns: number, slot: number): void {
    this.frames.enter(c);
    const top = this.frames.stack(v.stackTrace).frames[0];
    this.callers!.add(top?.function ?? undefined, top?.file ?? null, top?.line ?? null, ns, slot);
  }

  /** The slowest calls at least the threshold long, slowest first. */
  slowest(): TracedCall[] {
    return [...this.slow];
  }
}

/** JFR's own aggregate of one method. */
export interface MethodTiming {
  method: string;
  invocations: number;
  minNs: number | null;
  avgNs: number;
  maxNs: number;
}

/**
 * jdk.MethodTiming: each chunk's end writes every filtered method's figures since timing began,
 * so the last event of a method (latest start time) is its whole-recording figure.
 */
export class MethodTimingBuilder implements EventVisitor {
  private readonly latest = new Map<string, MethodTiming & { at: number }>();
  events = 0;

  wants(t: JfrClass): boolean {
    return t.name === METHOD_TIMING;
  }

  event(_t: JfrClass, v: JfrObject, c: Chunk): void {
    this.events++;
    const desc = c.str(v, 'method', 'descriptor');
    const method = `${methodName(c, v)}${desc ? desc.replace(/\).*$/, ')') : ''}`;
    const at = typeof v.startTime === 'number' ? c.ticksToNanos(v.startTime) : 0;
    const prev = this.latest.get(method);
    if (prev && prev.at > at) return;
    const ns = (x: unknown) => (typeof x === 'number' ? Math.max(0, c.durationNanos(x)) : 0);
    const min = typeof v.minimum === 'number' && v.minimum > Number.MIN_SAFE_INTEGER ? ns(v.minimum) : null;
    this.latest.set(method, { method, invocations: typeof v.invocations === 'number' ? v.invocations : 0, minNs: min, avgNs: ns(v.average), maxNs: ns(v.maximum), at });
  }

  /** Per method, most invocations first. */
  result(): MethodTiming[] {
    return [...this.latest.values()].map(({ at: _at, ...m }) => m).sort((a, b) => b.invocations - a.invocations || a.method.localeCompare(b.method));
  }
}

/** The text view of `jfr FILE --event method-timing`. */
export function methodTimingText(rows: MethodTiming[]): string {
  if (!rows.length) return 'no jdk.MethodTiming events (record with --method-timing Class::method on JDK 25 or later)';
  const ms = (ns: number | null) => (ns === null ? '-' : (ns / 1e6).toFixed(3));
  const w = Math.max(6, ...rows.map((r) => r.method.length));
  const head = `${'Method'.padEnd(w)} ${'Calls'.padStart(10)} ${'Min ms'.padStart(10)} ${'Avg ms'.padStart(10)} ${'Max ms'.padStart(10)}`;
  return [head, ...rows.map((r) => `${r.method.padEnd(w)} ${String(r.invocations).padStart(10)} ${ms(r.minNs).padStart(10)} ${ms(r.avgNs).padStart(10)} ${ms(r.maxNs).padStart(10)}`)].join('\n');
}
