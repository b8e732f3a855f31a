// The JVM timeline: one session of one JVM seen by three existing tracers on one clock
// (CLOCK_MONOTONIC, which is bpf_ktime_get_ns): GC collections and safepoints (java-gc), the
// run-queue waits of each thread (runqlat, per thread, one histogram per interval) and CPU
// samples (profile, its cumulative counts diffed into time slices). JvmResult is exactly the
// document `ebpf-studio jvm --json` prints and the view exports. JvmTimeline is the pure model
// over it (thread groups, lanes, range selection and per-range aggregation), shared by the
// tracer, the CLI and the webview; unit-tested.
import type { JavaGcCollectorSummary, JavaGcEvent, JavaSafepoint, JavaSafepointSummary } from '../protocol/javaGc';
import { collectorSummaries, summarizeSafepoints } from './javaGcStats';
import { isPause } from './javaGcKinds';
import { addCounts, fromBuckets, toBuckets, type Bucket } from './log2hist';
import { statsOf, type RunqlatStats } from '../protocol/runqlat';
import type { ProfileFrame, ProfileStack } from '../protocol/profile';

export interface JvmOptions {
  pid: number;
  /** CPU samples per second per CPU */
  frequency: number;
  /** width of a time slice: how often the run-queue histograms are read and CPU counts diffed */
  sliceMs: number;
}

/** HotSpot names its threads; the kernel keeps the first 15 bytes of each name. */
export type ThreadGroup = 'application' | 'gc' | 'vm' | 'compiler' | 'jvm';
export const THREAD_GROUPS: ThreadGroup[] = ['application', 'gc', 'vm', 'compiler', 'jvm'];
export const GROUP_LABEL: Record<ThreadGroup, string> = { application: 'Application threads', gc: 'GC threads', vm: 'VM thread', compiler: 'Compiler threads', jvm: 'Other JVM threads' };

const GC_THREAD = /^(GC Thread|ParGC Thread|G1 |Z[A-Z][a-z]|Shenandoah|Shen|Conc(urrent)? ?(GC|Mark)|VM Periodic GC)/;
const COMPILER_THREAD = /^(C1 CompilerThre|C2 CompilerThre|CompilerThread|Sweeper thread|JVMCI)/;
const JVM_THREAD = /^(Signal Dispatch|Finalizer|Reference Handl|Service Thread|Monitor Deflati|Notification Th|Common-Cleaner|Attach Listener|VM Periodic Tas|JFR |Process Reaper|process reaper)/;

export function threadGroup(comm: string): ThreadGroup {
  if (comm === 'VM Thread') return 'vm';
  if (GC_THREAD.test(comm)) return 'gc';
  if (COMPILER_THREAD.test(comm)) return 'compiler';
  if (JVM_THREAD.test(comm)) return 'jvm';
  return 'application';
}

export interface JvmThread {
  tid: number;
  comm: string;
  group: ThreadGroup;
}

/** One thread's run-queue waits during one slice, µs log2 buckets. */
export interface JvmRunqSlice {
  /** end of the slice, CLOCK_MONOTONIC ns */
  endNs: number;
  /** start of the slice (the previous read) */
  startNs: number;
  tid: number;
  buckets: Bucket[];
}

/** CPU samples taken during one slice: [stack index, samples] pairs. */
export interface JvmCpuSlice {
  startNs: number;
  endNs: number;
  samples: [number, number][];
}

/** A distinct (thread, stack), leaf first; symbolized when the session stops. */
export interface JvmStack {
  tid: number;
  comm: string;
  frames: ProfileFrame[];
}

/** What a live update (what is new since the last one) and the final result both carry. */
interface JvmEvents {
  gc: JavaGcEvent[];
  safepoints: JavaSafepoint[];
  safepointsAvailable: boolean;
  safepointsReason?: string;
  runq: JvmRunqSlice[];
  cpu: JvmCpuSlice[];
  stacks: JvmStack[];
}

export interface JvmUpdate extends JvmEvents {
  startNs: number;
  nowNs: number;
  /** stacks first seen since the previous update, in index order (index = position in the session's list) */
  stacks: JvmStack[];
  /** threads first seen or renamed since the previous update */
  threads: JvmThread[];
  lost: number;
  dropped: number;
  warnings?: string[];
}

export interface JvmResult extends JvmEvents {
  tracer: 'jvm';
  pid: number;
  frequency: number;
  sliceMs: number;
  startNs: number;
  endNs: number;
  threads: JvmThread[];
  /** GC events, safepoints and CPU samples the kernel could not keep */
  lost: number;
  /** run-queue waits dropped (a kernel map full) */
  dropped: number;
  warnings: string[];
  /** `ebpf-studio jvm --range FROM:TO --json`: the statistics of that range */
  range?: RangeStats;
}

/** The session file: the envelope every eBPF Studio session export shares. */
export interface JvmSessionFile {
  format: 'ebpf-studio-session';
  version: 1;
  tracer: 'jvm';
  savedAt: string;
  result: JvmResult;
}

export function toSessionFile(r: JvmResult, now = new Date()): JvmSessionFile {
  return { format: 'ebpf-studio-session', version: 1, tracer: 'jvm', savedAt: now.toISOString(), result: r };
}

/** Reads an exported session back, or throws an Error saying what is wrong with the file. */
export function fromSessionFile(text: string): JvmResult {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`not a JSON file (${(e as Error).message})`);
  }
  const d = doc as Partial<JvmSessionFile> & Partial<JvmResult>;
  // A bare `ebpf-studio jvm --json` document is accepted too.
  const r = (d?.format === 'ebpf-studio-session' ? d.result : d) as Partial<JvmResult> | undefined;
  if (d?.format === 'ebpf-studio-session' && d.version !== 1) throw new Error(`session format version ${String(d.version)} is not supported (this version reads 1)`);
  if (d?.format === 'ebpf-studio-session' && d.tracer !== 'jvm') throw new Error(`this session was recorded by "${String(d.tracer)}", not the JVM timeline: open it from its own view`);
  if (!r || r.tracer !== 'jvm') throw new Error('not a JVM timeline session (expected {"format":"ebpf-studio-session","tracer":"jvm",...} or the output of "ebpf-studio jvm --json")');
  for (const k of ['threads', 'gc', 'safepoints', 'runq', 'cpu', 'stacks'] as const) {
    if (!Array.isArray(r[k])) throw new Error(`the session has no "${k}" list`);
  }
  if (!Number.isFinite(r.startNs) || !Number.isFinite(r.endNs)) throw new Error('the session has no startNs/endNs');
  return { warnings: [], lost: 0, dropped: 0, safepointsAvailable: false, frequency: 0, sliceMs: 0, pid: 0, ...r } as JvmResult;
}

// ---- the model ------------------------------------------------------------------------------
export interface RangeStats {
  startNs: number;
  endNs: number;
  gc: JavaGcEvent[];
  collectors: JavaGcCollectorSummary[];
  /** pause time inside the range (pauses clipped to it) */
  pauseNs: number;
  safepoints: JavaSafepointSummary;
  /** per thread group with waits in the range, µs */
  runq: { group: ThreadGroup; stats: RunqlatStats; buckets: Bucket[] }[];
  /** CPU samples per thread group, and per thread (most first) */
  cpu: { group: ThreadGroup; samples: number }[];
  cpuThreads: { tid: number; comm: string; group: ThreadGroup; samples: number }[];
  cpuTotal: number;
  /** the stacks sampled in the range with their counts, for a flame graph */
  stacks: ProfileStack[];
}

export interface HeatCell {
  startNs: number;
  endNs: number;
  samples: number;
}

const overlaps = (a0: number, a1: number, b0: number, b1: number) => a0 < b1 && b0 < a1;

export class JvmTimeline {
  pid = 0;
  frequency = 0;
  sliceMs = 0;
  startNs = 0;
  endNs = 0;
  readonly threads = new Map<number, JvmThread>();
  gc: JavaGcEvent[] = [];
  safepoints: JavaSafepoint[] = [];
  safepointsAvailable = false;
  safepointsReason = '';
  runq: JvmRunqSlice[] = [];
  cpu: JvmCpuSlice[] = [];
  stacks: JvmStack[] = [];
  lost = 0;
  dropped = 0;
  warnings: string[] = [];

  static fromResult(r: JvmResult): JvmTimeline {
    const t = new JvmTimeline();
    t.pid = r.pid;
    t.frequency = r.frequency;
    t.sliceMs = r.sliceMs;
    t.apply({ ...r, nowNs: r.endNs, stacks: r.stacks });
    t.warnings = [...r.warnings];
    return t;
  }

  apply(u: JvmUpdate | (Omit<JvmUpdate, 'nowNs'> & { nowNs: number })): void {
    if (!this.startNs) this.startNs = u.startNs;
    this.endNs = Math.max(this.endNs, u.nowNs);
    for (const th of u.threads) this.threads.set(th.tid, th);
    this.gc.push(...u.gc);
    this.safepoints.push(...u.safepoints);
    this.safepointsAvailable = u.safepointsAvailable;
    this.safepointsReason = u.safepointsReason ?? '';
    this.runq.push(...u.runq);
    this.cpu.push(...u.cpu);
    this.stacks.push(...u.stacks);
    this.lost = u.lost;
    this.dropped = u.dropped;
    for (const w of u.warnings ?? []) if (!this.warnings.includes(w)) this.warnings.push(w);
  }

  /** The symbolized stacks of the final result replace the live (address-only) ones. */
  replaceStacks(stacks: JvmStack[]): void {
    this.stacks = stacks;
  }

  toResult(): JvmResult {
    return {
      tracer: 'jvm',
      pid: this.pid,
      frequency: this.frequency,
      sliceMs: this.sliceMs,
      startNs: this.startNs,
      endNs: this.endNs,
      threads: [...this.threads.values()].sort((a, b) => a.tid - b.tid),
      gc: this.gc,
      safepoints: this.safepoints,
      safepointsAvailable: this.safepointsAvailable,
      ...(this.safepointsReason ? { safepointsReason: this.safepointsReason } : {}),
      runq: this.runq,
      cpu: this.cpu,
      stacks: this.stacks,
      lost: this.lost,
      dropped: this.dropped,
      warnings: this.warnings,
    };
  }

  groupOf(tid: number): ThreadGroup {
    return this.threads.get(tid)?.group ?? 'application';
  }

  /** Groups that have a thread, in THREAD_GROUPS order. */
  groups(): ThreadGroup[] {
    const have = new Set([...this.threads.values()].map((t) => t.group));
    for (const s of this.stacks) have.add(this.groupOf(s.tid));
    return THREAD_GROUPS.filter((g) => have.has(g));
  }

  /** Collectors with a lane: pauses by collector, concurrent cycles last. */
  collectors(): string[] {
    return collectorSummaries(this.gc)
      .sort((a, b) => Number(a.kind === 'concurrent-cycle') - Number(b.kind === 'concurrent-cycle'))
      .map((c) => c.collector);
  }

  /** CPU samples of one group per slice: the heat strip of its lane. */
  cpuHeat(group: ThreadGroup): HeatCell[] {
    return this.cpu.map((c) => {
      let n = 0;
      for (const [i, count] of c.samples) if (this.groupOf(this.stacks[i]?.tid ?? -1) === group) n += count;
      return { startNs: c.startNs, endNs: c.endNs, samples: n };
    });
  }

  /** The worst run-queue wait of a group per slice (upper bound of the highest bucket, µs). */
  runqLane(group: ThreadGroup): { startNs: number; endNs: number; maxUs: number; p99Us: number; count: number }[] {
    const bySlice = new Map<number, { startNs: number; counts: number[] }>();
    for (const r of this.runq) {
      if (this.groupOf(r.tid) !== group) continue;
      let s = bySlice.get(r.endNs);
      if (!s) bySlice.set(r.endNs, (s = { startNs: r.startNs, counts: [] }));
      addCounts(s.counts, fromBuckets(r.buckets));
    }
    return [...bySlice]
      .sort((a, b) => a[0] - b[0])
      .map(([endNs, s]) => {
        const st = statsOf(toBuckets(s.counts));
        return { startNs: s.startNs, endNs, maxUs: st.max, p99Us: st.p99, count: st.count };
      });
  }

  /** Everything that happened in [startNs, endNs): GC, safepoints, run-queue waits, CPU samples and their stacks. */
  range(startNs: number, endNs: number): RangeStats {
    const [a, b] = startNs <= endNs ? [startNs, endNs] : [endNs, startNs];
    const gc = this.gc.filter((e) => overlaps(e.timestampNs, e.timestampNs + Math.max(1, e.durationNs), a, b));
    const pauseNs = gc.filter((e) => isPause(e.kind)).reduce((s, e) => s + Math.min(b, e.timestampNs + e.durationNs) - Math.max(a, e.timestampNs), 0);
    const sps = this.safepoints.filter((s) => overlaps(s.timestampNs, s.timestampNs + Math.max(1, s.durationNs), a, b));
    const rq = new Map<ThreadGroup, number[]>();
    for (const r of this.runq) {
      if (!overlaps(r.startNs, r.endNs, a, b)) continue;
      const g = this.groupOf(r.tid);
      rq.set(g, addCounts(rq.get(g) ?? [], fromBuckets(r.buckets)));
    }
    const perStack = new Map<number, number>();
    for (const c of this.cpu) {
      if (!overlaps(c.startNs, c.endNs, a, b)) continue;
      for (const [i, n] of c.samples) perStack.set(i, (perStack.get(i) ?? 0) + n);
    }
    const perGroup = new Map<ThreadGroup, number>();
    const perThread = new Map<number, number>();
    const stacks: ProfileStack[] = [];
    let cpuTotal = 0;
    for (const [i, count] of perStack) {
      const s = this.stacks[i];
      if (!s) continue;
      const g = this.groupOf(s.tid);
      perGroup.set(g, (perGroup.get(g) ?? 0) + count);
      perThread.set(s.tid, (perThread.get(s.tid) ?? 0) + count);
      cpuTotal += count;
      stacks.push({ count, pid: this.pid, tid: s.tid, comm: this.threads.get(s.tid)?.comm ?? s.comm, frames: s.frames });
    }
    stacks.sort((x, y) => y.count - x.count);
    return {
      startNs: a,
      endNs: b,
      gc,
      collectors: collectorSummaries(gc),
      pauseNs,
      safepoints: summarizeSafepoints(sps),
      runq: THREAD_GROUPS.filter((g) => rq.has(g)).map((g) => {
        const buckets = toBuckets(rq.get(g)!);
        return { group: g, stats: statsOf(buckets), buckets };
      }),
      cpu: THREAD_GROUPS.filter((g) => perGroup.has(g)).map((g) => ({ group: g, samples: perGroup.get(g)! })),
      cpuThreads: [...perThread]
        .map(([tid, samples]) => ({ tid, comm: this.threads.get(tid)?.comm ?? '?', group: this.groupOf(tid), samples }))
        .sort((x, y) => y.samples - x.samples),
      cpuTotal,
      stacks,
    };
  }
}

// ---- CPU slices from cumulative profile snapshots --------------------------------------------
/** A stack's identity across snapshots: its thread and addresses (inlined frames, which repeat
 * their caller's address once symbolized, collapse into one). */
export function stackKey(s: Pick<ProfileStack, 'tid' | 'frames'>): string {
  let key = String(s.tid);
  let last = '';
  for (const f of s.frames) {
    const a = f.function?.startsWith('[lost ') ? f.function : f.address;
    if (a === last) continue;
    last = a;
    key += `|${a}`;
  }
  return key;
}

/** Turns the profiler's cumulative per-stack counts into per-slice deltas. */
export class CpuSlicer {
  private readonly index = new Map<string, number>();
  private readonly seen = new Map<string, number>();
  readonly stacks: JvmStack[] = [];

  /** The samples since the previous call, and the stacks seen for the first time. */
  next(snapshot: readonly ProfileStack[], startNs: number, endNs: number): { slice: JvmCpuSlice; fresh: JvmStack[] } {
    const samples: [number, number][] = [];
    const fresh: JvmStack[] = [];
    for (const s of snapshot) {
      const key = stackKey(s);
      const before = this.seen.get(key) ?? 0;
      if (s.count <= before) continue;
      this.seen.set(key, s.count);
      let i = this.index.get(key);
      if (i === undefined) {
        i = this.stacks.length;
        this.index.set(key, i);
        const st = { tid: s.tid, comm: s.comm, frames: s.frames };
        this.stacks.push(st);
        fresh.push(st);
      }
      samples.push([i, s.count - before]);
    }
    return { slice: { startNs, endNs, samples }, fresh };
  }

  /** The stack list with the final (symbolized) frames where a final stack matches. */
  symbolized(final: readonly ProfileStack[]): JvmStack[] {
    const byKey = new Map(final.map((s) => [stackKey(s), s]));
    return this.stacks.map((s) => {
      const f = byKey.get(stackKey(s));
      return f ? { tid: s.tid, comm: f.comm || s.comm, frames: f.frames } : s;
    });
  }
}
