// A JFR recording as the JVM timeline's document (what `ebpf-studio jvm --json` prints and the
// timeline view opens): GC pauses and safepoints from ./gc.ts, CPU samples per thread and time
// slice, and the waits JFR times (parks and monitor enters as lock waits, sleeps and monitor waits
// as sleeping, socket and file I/O) as each thread's off-CPU time by state. JFR has no run-queue
// waits: those lanes stay empty, and the document says so. Times are ns since the recording's
// start plus one second (0 means "not yet" to the view). Pure: no I/O.
import type { JvmCpuSlice, JvmOffcpuSlice, JvmResult, JvmStack, JvmThread, OffState } from '../../protocol/jvm';
import { PROFILE_LIMITS, ReadBudget } from '../readLimits';
import { threadGroup } from '../jvmThreads';
import { JFR_LIMITS, type Chunk, type EventVisitor, type JfrObject } from './chunk';
import type { JfrClass } from './metadata';
import { JfrGcBuilder } from './gc';
import { CPU_EVENTS, waitStateOf } from './profile';
import { JfrStacks } from './stacks';

export const WAIT_EVENTS = ['jdk.ThreadPark', 'jdk.JavaMonitorEnter', 'jdk.ThreadSleep', 'jdk.JavaMonitorWait', 'jdk.SocketRead', 'jdk.SocketWrite', 'jdk.FileRead', 'jdk.FileWrite', 'jdk.FileForce'];
/** The timeline view's off-CPU states, in its order (model/jvmTimeline.ts OFF_STATES). */
const STATES: OffState[] = ['sleep', 'io', 'lock', 'preempted'];
const BASE_NS = 1e9;
const SLICE_MS = 250;
/** Slices kept: a longer recording gets wider slices (doubled as it goes), never more of them. */
const MAX_SLICES = 4096;
/** JDK's default.jfc samples running Java threads every 20 ms: used when the recording does not say. */
const DEFAULT_PERIOD_MS = 20;

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** "20 ms", "10ms", "1 s", "500 us" → ms; undefined for anything else ("off", "500/s"). */
export function periodMs(text: string | undefined): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\s*$/.exec(text ?? '');
  if (!m) return undefined;
  const scale: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000 };
  const ms = Number(m[1]) * scale[m[2]];
  return ms > 0 ? ms : undefined;
}

/** Per slice: CPU samples by stack index, wait µs by "tid state". */
interface Slice {
  cpu: Map<number, number>;
  waits: Map<string, number>;
}

export class JfrTimelineBuilder implements EventVisitor {
  private readonly gc = new JfrGcBuilder();
  private readonly frames: JfrStacks;
  private readonly stackIndex = new Map<string, number>();
  private readonly stacks: JvmStack[] = [];
  private readonly threads = new Map<number, JvmThread>();
  /** CPU samples by type: a timeline is made of one (CPU_EVENTS), the first the recording has */
  private readonly slices = new Map<string, Map<number, Slice>>();
  private readonly samples = new Map<string, number>();
  private sliceNs = SLICE_MS * 1e6;
  private origin: number | undefined;
  private endNs = 0;
  private period: number | undefined;

  constructor(name: string) {
    this.frames = new JfrStacks(new ReadBudget(name, { ...PROFILE_LIMITS, maxReadMs: JFR_LIMITS.maxReadMs }));
  }

  wants(t: JfrClass): boolean {
    return this.gc.wants(t) || CPU_EVENTS.includes(t.name) || WAIT_EVENTS.includes(t.name) || t.name === 'jdk.ActiveSetting';
  }

  event(t: JfrClass, v: JfrObject, c: Chunk): void {
    this.origin ??= c.header.startNanos;
    this.endNs = Math.max(this.endNs, c.header.startNanos + c.header.durationNanos - this.origin);
    if (this.gc.wants(t)) return this.gc.event(t, v, c);
    if (t.name === 'jdk.ActiveSetting') return this.setting(v, c);
    this.frames.enter(c);
    const startNs = c.ticksToNanos(num(v.startTime)) - this.origin;
    const thread = this.frames.thread(v.sampledThread ?? v.eventThread);
    if (!this.threads.has(thread.tid)) this.threads.set(thread.tid, { tid: thread.tid, comm: thread.name, group: threadGroup(thread.name) });
    if (CPU_EVENTS.includes(t.name)) {
      const stack = this.frames.stack(v.stackTrace);
      const key = `${thread.tid}\0${stack.sig}`;
      let index = this.stackIndex.get(key);
      if (index === undefined) {
        this.stackIndex.set(key, (index = this.stacks.length));
        this.stacks.push({ tid: thread.tid, comm: thread.name, frames: stack.frames });
      }
      const cpu = this.slice(t.name, startNs).cpu;
      cpu.set(index, (cpu.get(index) ?? 0) + 1);
      this.samples.set(t.name, (this.samples.get(t.name) ?? 0) + 1);
      return;
    }
    // a wait counts in the slice in which it ended, as the kernel tracer counts a thread's wake-up
    const durationNs = c.durationNanos(num(v.duration));
    const waits = this.slice('', startNs + durationNs).waits;
    const key = `${thread.tid} ${STATES.indexOf(waitStateOf(t.name))}`;
    waits.set(key, (waits.get(key) ?? 0) + durationNs / 1000);
  }

  /** The execution samples' period, where the recording states it (jdk.ActiveSetting). */
  private setting(v: JfrObject, c: Chunk): void {
    if (c.metadata.classes.get(num(v.id))?.name !== 'jdk.ExecutionSample' || c.str(v, 'name') !== 'period') return;
    this.period = periodMs(c.str(v, 'value')) ?? this.period;
  }

  private slice(type: string, ns: number): Slice {
    let index = Math.max(0, Math.floor(ns / this.sliceNs));
    while (index >= MAX_SLICES) {
      this.widen();
      index = Math.floor(ns / this.sliceNs);
    }
    let byType = this.slices.get(type);
    if (!byType) this.slices.set(type, (byType = new Map()));
    let s = byType.get(index);
    if (!s) byType.set(index, (s = { cpu: new Map(), waits: new Map() }));
    return s;
  }

  /** Doubles the slice width, merging each pair of slices. */
  private widen(): void {
    this.sliceNs *= 2;
    for (const [type, byType] of this.slices) {
      const merged = new Map<number, Slice>();
      for (const [i, s] of byType) {
        const into = merged.get(i >> 1);
        if (!into) merged.set(i >> 1, s);
        else {
          for (const [k, n] of s.cpu) into.cpu.set(k, (into.cpu.get(k) ?? 0) + n);
          for (const [k, n] of s.waits) into.waits.set(k, (into.waits.get(k) ?? 0) + n);
        }
      }
      this.slices.set(type, merged);
    }
  }

  /** The CPU event type the timeline shows: the first of CPU_EVENTS the recording has. */
  private cpuType(): string | undefined {
    return CPU_EVENTS.find((t) => (this.samples.get(t) ?? 0) > 0);
  }

  result(): JvmResult {
    const gc = this.gc.result();
    const at = (i: number) => ({ startNs: BASE_NS + i * this.sliceNs, endNs: BASE_NS + (i + 1) * this.sliceNs });
    const type = this.cpuType();
    const sorted = (m: Map<number, Slice> | undefined) => [...(m ?? new Map<number, Slice>()).entries()].sort((a, b) => a[0] - b[0]);
    const cpu: JvmCpuSlice[] = sorted(type ? this.slices.get(type) : undefined).map(([i, s]) => ({ ...at(i), samples: [...s.cpu.entries()] }));
    const offcpu: JvmOffcpuSlice[] = sorted(this.slices.get('')).map(([i, s]) => ({
      ...at(i),
      rows: [...s.waits.entries()].flatMap(([k, us]) => [...k.split(' ').map(Number), Math.round(us)]),
    }));
    const used = new Set(type ? cpu.flatMap((s) => s.samples.map(([i]) => i)) : []);
    const warnings = ['JFR records no run-queue waits: those lanes are empty (an eBPF Studio JVM timeline of a running JVM has them).'];
    if (!type) warnings.push('The recording has no CPU samples (jdk.ExecutionSample or jdk.CPUTimeSample).');
    return {
      tracer: 'jvm',
      pid: gc.pids[0] ?? 0,
      frequency: 1000 / (this.period ?? DEFAULT_PERIOD_MS),
      sliceMs: this.sliceNs / 1e6,
      startNs: BASE_NS,
      endNs: BASE_NS + this.endNs,
      threads: [...this.threads.values()],
      gc: gc.events.map((e) => ({ ...e, timestampNs: e.timestampNs + BASE_NS })),
      safepoints: gc.safepoints.events.map((s) => ({ ...s, timestampNs: s.timestampNs + BASE_NS })),
      safepointsAvailable: gc.safepoints.available,
      ...(gc.safepoints.reason ? { safepointsReason: gc.safepoints.reason } : {}),
      runq: [],
      cpu,
      // the other CPU type's stacks are left out; indexes stay those of `stacks`
      stacks: this.stacks.map((s, i) => (used.has(i) ? s : { ...s, frames: [] })),
      offcpu,
      lost: 0,
      dropped: 0,
      warnings,
    };
  }
}
