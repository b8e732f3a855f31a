// The JVM timeline: one session of one JVM seen by three existing tracers on one clock
// (CLOCK_MONOTONIC, which is bpf_ktime_get_ns): GC collections and safepoints (java-gc), the
// run-queue waits of each thread (runqlat, per thread, one histogram per interval) and CPU
// samples (profile, its cumulative counts diffed into time slices). JvmResult is exactly the
// document `ebpf-studio jvm --json` prints and the view exports. JvmTimeline is the pure model
// over it (thread groups, lanes, range selection and per-range aggregation), shared by the
// tracer, the CLI and the webview; unit-tested.
import type { JavaGcCollectorSummary, JavaGcEvent, JavaGcKind, JavaSafepoint, JavaSafepointSummary } from '../protocol/javaGc';
import { collectorSummaries, summarizeSafepoints } from './javaGcStats';
import { GcLive, type GcLiveState } from './javaGcLive';
import { QuantileSketch, type SketchState } from './quantileSketch';
import { BoundedLane, type BoundedLaneState } from './boundedLane';
import { AllocRate, type AllocRangeStats, type AllocRateState } from './allocRate';
import { isPause } from './javaGcKinds';
import { addCounts, fromBuckets, toBuckets, type Bucket } from './log2hist';
import { statsOf, type HistStats as RunqlatStats } from './log2hist';
import type { ProfileStack } from '../protocol/profile';
import type { JvmCpuSlice, JvmEvents, JvmOffcpuSlice, JvmOptions, JvmResult, JvmRunqSlice, JvmStack, JvmThread, JvmUpdate, OffState, ThreadGroup } from '../protocol/jvm';

export type { JvmCpuSlice, JvmEvents, JvmOffcpuSlice, JvmOptions, JvmResult, JvmRunqSlice, JvmStack, JvmThread, JvmUpdate, OffState, ThreadGroup };

declare module '../protocol/jvm' {
  /** The result document's model parts (see JvmResultExtras). */
  interface JvmResultExtras {
    /** `ebpf-studio jvm --range FROM:TO --json`: the statistics of that range */
    range?: RangeStats;
    /** a view's export or checkpoint: the lanes and whole-session figures (JvmTimelineState) */
    timeline?: JvmTimelineState;
  }
}

// thread groups live in ./jvmThreads.ts (the flame graph uses them too); re-exported for this module's users
import { THREAD_GROUPS } from './jvmThreads';
import { checkSessionJson } from './readLimits';
export { GROUP_LABEL, THREAD_GROUPS, threadGroup } from './jvmThreads';

/** The off-CPU states the timeline shows (the off-CPU tracer's states but on-CPU). */
export const OFF_STATES: OffState[] = ['sleep', 'io', 'lock', 'preempted'];
export const OFF_STATE_LABEL: Record<OffState, string> = { sleep: 'sleeping', io: 'I/O', lock: 'lock (futex)', preempted: 'preempted' };


/** One thread group's off-CPU time in one slice: µs per state (OFF_STATES order). */
export interface OffcpuCell {
  startNs: number;
  endNs: number;
  us: number[];
}





/** The session file: the envelope every eBPF Studio session export shares. */
export interface JvmSessionFile {
  format: 'ebpf-studio-session';
  version: 1;
  tracer: 'jvm';
  savedAt: string;
  result: JvmResult;
  /** how the session ended (a panel's stored document: a reload shows it stopped, saying why) */
  ended?: { reason: 'stopped' | 'target-exited' | 'error'; message?: string };
}

export function toSessionFile(r: JvmResult, now = new Date(), ended?: JvmSessionFile['ended']): JvmSessionFile {
  return { format: 'ebpf-studio-session', version: 1, tracer: 'jvm', savedAt: now.toISOString(), result: r, ...(ended ? { ended } : {}) };
}

/** Reads an exported session back, or throws an Error saying what is wrong with the file. */
export function fromSessionFile(text: string, name = 'the file'): JvmResult {
  checkSessionJson(text, name);
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
  /** off-CPU time per thread group and state in the range, µs (OFF_STATES order) */
  offcpu: { group: ThreadGroup; us: number[] }[];
  /** what the application allocated in the range, from eden before/after each GC (model/allocRate.ts) */
  alloc: AllocRangeStats;
  /**
   * Set when the range reaches before the retained raw events (a session longer than the raw
   * window): its GC list, safepoints, run-queue waits, CPU samples and allocation figures cover
   * only from here (the lanes still show the whole session).
   */
  coveredFromNs?: number;
}

export interface HeatCell {
  startNs: number;
  endNs: number;
  samples: number;
}

const overlaps = (a0: number, a1: number, b0: number, b1: number) => a0 < b1 && b0 < a1;

export interface RunqLaneRow {
  startNs: number;
  endNs: number;
  maxUs: number;
  p99Us: number;
  count: number;
}

/** A GC as its lane needs it once its raw event is gone: no memory pools. */
const gcMark = (e: JavaGcEvent): JavaGcEvent => (e.pools.length ? { ...e, pools: [] } : e);
const gcStart = (e: JavaGcEvent) => e.timestampNs;

/** How long raw events (each GC, safepoint, run-queue histogram, CPU slice) are kept: the lanes and whole-session figures cover the whole session. */
export const RAW_WINDOW_NS = 10 * 60e9;

/** The lanes and whole-session figures that outlive the raw events (a session file's `timeline`, for views; CLI readers can ignore it). */
export interface JvmTimelineState {
  version: 1;
  rawWindowNs: number;
  droppedBeforeNs: number;
  gcKinds: [string, [JavaGcKind, number][]][];
  gcLanes: [string, BoundedLaneState<JavaGcEvent>][];
  safepoints: BoundedLaneState<JavaSafepoint>;
  heat: [ThreadGroup, { upTo: number; lane: BoundedLaneState<HeatCell> }][];
  runq: [ThreadGroup, { upTo: number; lane: BoundedLaneState<RunqLaneRow> }][];
  wholeGc: GcLiveState;
  wholeSpDurations: SketchState;
  wholeSpTts: SketchState;
  runqByTid: [number, number[]][];
  cpuByStack: [number, number][];
  alloc: AllocRateState;
  offcpu?: [ThreadGroup, { upTo: number; lane: BoundedLaneState<OffcpuCell> }][];
  offByTid?: [number, number[]][];
}

/**
 * The session model. Lanes (collectors, heap and allocation, safepoints, CPU heat, run-queue
 * bars) and the whole session's statistics are kept up to date as updates arrive, so a live
 * view's redraw costs O(what is new), not O(session): per-group lanes extend from where they
 * stopped, and the whole-session aggregates (per collector, per thread, per stack) are running
 * sums. Memory is bounded however long the session runs: each lane is a BoundedLane (time bins
 * over the whole session, items only for the last `rawWindowNs`), and raw events older than that
 * are dropped; a range's statistics (and an export's raw events) then cover the retained window
 * (droppedBeforeNs says from when). A thread that changes group (renamed) drops the per-group
 * lanes, which rebuild from the retained raw events.
 */
export class JvmTimeline {
  pid = 0;
  frequency = 0;
  sliceMs = 0;
  startNs = 0;
  endNs = 0;
  /** raw events that started before this were dropped (0: none were) */
  droppedBeforeNs = 0;
  readonly threads = new Map<number, JvmThread>();
  safepointsAvailable = false;
  safepointsReason = '';
  // Run-queue waits and CPU samples are the bulk of a long session: kept compact (dense counts,
  // flat [stack, samples, ...] pairs) and turned back into the wire shapes only for export.
  /** per slice: [tid, first bucket, n, n counts, tid, ...] for every thread that waited in it */
  private runqStore: { startNs: number; endNs: number; packed: Uint32Array }[] = [];
  private cpuStore: { startNs: number; endNs: number; flat: number[] }[] = [];
  /** slices dropped from the front of runqStore / cpuStore (lanes index them absolutely) */
  private runqBase = 0;
  private cpuBase = 0;
  private offStore: JvmOffcpuSlice[] = [];
  private offBase = 0;
  private offCache = new Map<ThreadGroup, { upTo: number; lane: BoundedLane<OffcpuCell> }>();
  /** whole-session off-CPU µs per thread and state */
  private offByTid = new Map<number, number[]>();
  /** true once the session has off-CPU figures; offcpuReason says why not */
  offcpuAvailable = false;
  offcpuReason = '';
  private gcRecent: JavaGcEvent[] = [];

  constructor(public rawWindowNs = RAW_WINDOW_NS) {}

  /** The retained GC events of every collector, in arrival order. */
  get gc(): JavaGcEvent[] {
    return this.gcRecent;
  }
  /** The retained safepoints. */
  get safepoints(): readonly JavaSafepoint[] {
    return this.spLane.recent();
  }

  get runq(): JvmRunqSlice[] {
    return this.runqFrom(-Infinity);
  }

  /** The retained run-queue slices that start at or after `fromNs`, in the wire shape. */
  private runqFrom(fromNs: number): JvmRunqSlice[] {
    const out: JvmRunqSlice[] = [];
    let i = 0;
    while (i < this.runqStore.length && this.runqStore[i].startNs < fromNs) i++;
    this.eachRunq(this.runqBase + i, this.runqBase + this.runqStore.length, (startNs, endNs, tid, counts) => out.push({ startNs, endNs, tid, buckets: toBuckets(counts).filter((b) => b.count > 0) }));
    return out;
  }

  /** Each thread's waits in slices [from, to) (absolute indices), as dense log2 counts. */
  private eachRunq(from: number, to: number, fn: (startNs: number, endNs: number, tid: number, counts: number[]) => void): void {
    for (let i = Math.max(from, this.runqBase); i < to; i++) {
      const { startNs, endNs, packed } = this.runqStore[i - this.runqBase];
      for (let k = 0; k < packed.length; ) {
        const tid = packed[k];
        const first = packed[k + 1];
        const n = packed[k + 2];
        const counts: number[] = new Array<number>(first + n).fill(0);
        for (let j = 0; j < n; j++) counts[first + j] = packed[k + 3 + j];
        fn(startNs, endNs, tid, counts);
        k += 3 + n;
      }
    }
  }

  get cpu(): JvmCpuSlice[] {
    return this.cpuFrom(-Infinity);
  }

  private cpuFrom(fromNs: number): JvmCpuSlice[] {
    return this.cpuStore.filter((c) => c.startNs >= fromNs).map((c) => {
      const samples: [number, number][] = [];
      for (let k = 0; k < c.flat.length; k += 2) samples.push([c.flat[k], c.flat[k + 1]]);
      return { startNs: c.startNs, endNs: c.endNs, samples };
    });
  }
  stacks: JvmStack[] = [];
  lost = 0;
  dropped = 0;
  warnings: string[] = [];
  private gcKinds = new Map<string, Map<JavaGcKind, number>>();
  private gcLanes = new Map<string, BoundedLane<JavaGcEvent>>();
  private spLane = new BoundedLane<JavaSafepoint>((s) => s.timestampNs);
  private heatCache = new Map<ThreadGroup, { upTo: number; lane: BoundedLane<HeatCell> }>();
  private runqCache = new Map<ThreadGroup, { upTo: number; slices: Map<number, { startNs: number; counts: number[]; pos: number }>; lane: BoundedLane<RunqLaneRow> }>();
  /** whole-session running figures (range() over the whole session reads these) */
  private wholeGc = new GcLive();
  private wholeSpDurations = new QuantileSketch();
  private wholeSpTts = new QuantileSketch();
  private runqByTid = new Map<number, number[]>();
  private cpuByStack = new Map<number, number>();
  /** the allocation rate between collections and the heap after each (from the GC events' pools) */
  alloc = new AllocRate();

  /** A session from its result; with `timeline` (a view's export or checkpoint), its lanes and figures over the whole session. */
  static fromResult(r: JvmResult): JvmTimeline {
    // With a timeline, every raw event of the document is kept as it was saved (no trim while applying).
    const t = new JvmTimeline(r.timeline ? Infinity : RAW_WINDOW_NS);
    t.pid = r.pid;
    t.frequency = r.frequency;
    t.sliceMs = r.sliceMs;
    t.apply({ ...r, nowNs: r.endNs, stacks: r.stacks });
    t.warnings = [...r.warnings];
    if (r.timeline) {
      t.rawWindowNs = r.timeline.rawWindowNs || RAW_WINDOW_NS;
      t.restore(r.timeline);
    }
    else if (r.droppedBeforeNs) t.droppedBeforeNs = r.droppedBeforeNs;
    return t;
  }

  apply(u: JvmUpdate | (Omit<JvmUpdate, 'nowNs'> & { nowNs: number })): void {
    if (!this.startNs) this.startNs = u.startNs;
    this.endNs = Math.max(this.endNs, u.nowNs);
    for (const th of u.threads) {
      const was = this.threads.get(th.tid);
      if (was && was.group !== th.group) this.dropCaches();
      this.threads.set(th.tid, th);
    }
    // Names repeat in every event but arrive as fresh strings (each message is a copy): one copy
    // of each is kept, which is most of a long session's GC memory.
    for (const e of u.gc) {
      e.collector = this.intern(e.collector);
      e.operation = this.intern(e.operation);
      for (const p of e.pools) p.name = this.intern(p.name);
      this.gcRecent.push(e);
      let lane = this.gcLanes.get(e.collector);
      if (!lane) this.gcLanes.set(e.collector, (lane = new BoundedLane(gcStart, gcMark)));
      lane.push(e, e.timestampNs, e.timestampNs + e.durationNs, e.durationNs);
      let k = this.gcKinds.get(e.collector);
      if (!k) this.gcKinds.set(e.collector, (k = new Map()));
      k.set(e.kind, (k.get(e.kind) ?? 0) + 1);
      this.alloc.add(e);
    }
    this.wholeGc.addEvents(u.gc);
    for (const sp of u.safepoints) {
      sp.operation = this.intern(sp.operation);
      this.spLane.push(sp, sp.timestampNs, sp.timestampNs + sp.durationNs, sp.durationNs);
      this.wholeSpDurations.add(sp.durationNs);
      this.wholeSpTts.add(sp.timeToSafepointNs);
    }
    this.safepointsAvailable = u.safepointsAvailable;
    this.safepointsReason = u.safepointsReason ?? '';
    // Packed per slice: a long session holds hundreds of thousands of (thread, slice) histograms.
    for (let i = 0; i < u.runq.length; ) {
      const { startNs, endNs } = u.runq[i];
      const words: number[] = [];
      for (; i < u.runq.length && u.runq[i].startNs === startNs && u.runq[i].endNs === endNs; i++) {
        const r = u.runq[i];
        const counts = fromBuckets(r.buckets);
        this.runqByTid.set(r.tid, addCounts(this.runqByTid.get(r.tid) ?? [], counts));
        let first = 0;
        while (first < counts.length && !counts[first]) first++;
        words.push(r.tid, first, counts.length - first, ...counts.slice(first));
      }
      this.runqStore.push({ startNs, endNs, packed: Uint32Array.from(words) });
    }
    for (const c of u.cpu) {
      const flat: number[] = [];
      for (const [i, n] of c.samples) {
        flat.push(i, n);
        this.cpuByStack.set(i, (this.cpuByStack.get(i) ?? 0) + n);
      }
      this.cpuStore.push({ startNs: c.startNs, endNs: c.endNs, flat });
    }
    for (const o of u.offcpu ?? []) {
      this.offcpuAvailable = true;
      for (let k = 0; k + 2 < o.rows.length; k += 3) {
        const per = this.offByTid.get(o.rows[k]) ?? [0, 0, 0, 0];
        per[o.rows[k + 1]] += o.rows[k + 2];
        this.offByTid.set(o.rows[k], per);
      }
      this.offStore.push(o);
    }
    if (u.offcpuReason) this.offcpuReason = u.offcpuReason;
    for (const st of u.stacks) this.stacks.push(st);
    this.lost = u.lost;
    this.dropped = u.dropped;
    for (const w of u.warnings ?? []) if (!this.warnings.includes(w)) this.warnings.push(w);
    // Drop what fell out of the raw window, a tenth of the window at a time (amortized).
    const cutoff = this.endNs - this.rawWindowNs;
    if (cutoff > Math.max(this.droppedBeforeNs, this.startNs) + this.rawWindowNs / 10) this.trim(cutoff);
  }

  /** Drops raw events that started before `cutoff`; the lanes first take in every slice they have not seen. */
  private trim(cutoff: number): void {
    for (const g of THREAD_GROUPS) {
      this.cpuHeat(g);
      this.runqLane(g);
      this.offcpuLane(g);
    }
    let k = 0;
    while (k < this.gcRecent.length && this.gcRecent[k].timestampNs < cutoff) k++;
    this.gcRecent = this.gcRecent.slice(k);
    for (const lane of this.gcLanes.values()) lane.trim(cutoff);
    this.spLane.trim(cutoff);
    this.alloc.trim(cutoff);
    k = 0;
    while (k < this.runqStore.length && this.runqStore[k].startNs < cutoff) k++;
    this.runqStore = this.runqStore.slice(k);
    this.runqBase += k;
    k = 0;
    while (k < this.cpuStore.length && this.cpuStore[k].startNs < cutoff) k++;
    this.cpuStore = this.cpuStore.slice(k);
    this.cpuBase += k;
    k = 0;
    while (k < this.offStore.length && this.offStore[k].startNs < cutoff) k++;
    this.offStore = this.offStore.slice(k);
    this.offBase += k;
    for (const c of this.offCache.values()) c.lane.trim(cutoff);
    for (const c of this.heatCache.values()) c.lane.trim(cutoff);
    for (const c of this.runqCache.values()) c.lane.trim(cutoff);
    this.droppedBeforeNs = cutoff;
  }

  /** The symbolized stacks of the final result replace the live (address-only) ones (same order, same threads). */
  replaceStacks(stacks: JvmStack[]): void {
    this.stacks = stacks;
  }

  private names = new Map<string, string>();
  private intern(s: string): string {
    const had = this.names.get(s);
    if (had !== undefined) return had;
    this.names.set(s, s);
    return s;
  }

  private dropCaches(): void {
    this.offCache.clear();
    this.heatCache.clear();
    this.runqCache.clear();
  }

  /**
   * The session's document; `withTimeline` adds the lanes over the whole session (a view's export
   * or checkpoint); `rawFromNs` leaves out raw events before it (a checkpoint kept small: the
   * lanes still cover everything, and the document says from when its raw events start).
   */
  toResult(opts: { withTimeline?: boolean; rawFromNs?: number } = {}): JvmResult {
    const from = Math.max(opts.rawFromNs ?? -Infinity, this.droppedBeforeNs || -Infinity);
    const cut = from > -Infinity;
    const dropped = cut && from > this.startNs ? from : 0;
    return {
      tracer: 'jvm',
      pid: this.pid,
      frequency: this.frequency,
      sliceMs: this.sliceMs,
      startNs: this.startNs,
      endNs: this.endNs,
      threads: [...this.threads.values()].sort((a, b) => a.tid - b.tid),
      gc: cut ? this.gc.filter((e) => e.timestampNs >= from) : this.gc,
      safepoints: this.safepoints.filter((e) => e.timestampNs >= from),
      safepointsAvailable: this.safepointsAvailable,
      ...(this.safepointsReason ? { safepointsReason: this.safepointsReason } : {}),
      runq: this.runqFrom(from),
      cpu: this.cpuFrom(from),
      stacks: this.stacks,
      ...(this.offcpuAvailable ? { offcpu: this.offStore.filter((o) => o.startNs >= from) } : {}),
      ...(this.offcpuReason ? { offcpuReason: this.offcpuReason } : {}),
      lost: this.lost,
      dropped: this.dropped,
      warnings: this.warnings,
      ...(dropped ? { droppedBeforeNs: dropped } : {}),
      ...(opts.withTimeline ? { timeline: this.state(from) } : {}),
    };
  }

  /** The lanes and whole-session figures (see JvmTimelineState), with lane items from `fromNs` on. */
  state(fromNs = -Infinity): JvmTimelineState {
    for (const g of THREAD_GROUPS) {
      this.cpuHeat(g);
      this.runqLane(g);
      this.offcpuLane(g);
    }
    const dropped = fromNs > this.startNs ? Math.max(fromNs, this.droppedBeforeNs) : this.droppedBeforeNs;
    return {
      version: 1,
      rawWindowNs: this.rawWindowNs,
      droppedBeforeNs: dropped,
      gcKinds: [...this.gcKinds].map(([c, k]) => [c, [...k]]),
      gcLanes: [...this.gcLanes].map(([c, l]) => [c, l.toJSON(true, fromNs)]),
      // The safepoint lane's recent items are the result's safepoints: saved once, there.
      safepoints: this.spLane.toJSON(false, fromNs),
      heat: [...this.heatCache].map(([g, c]) => [g, { upTo: c.upTo, lane: c.lane.toJSON(true, fromNs) }]),
      runq: [...this.runqCache].map(([g, c]) => [g, { upTo: c.upTo, lane: c.lane.toJSON(true, fromNs) }]),
      wholeGc: this.wholeGc.toJSON(),
      wholeSpDurations: this.wholeSpDurations.toJSON(),
      wholeSpTts: this.wholeSpTts.toJSON(),
      runqByTid: [...this.runqByTid],
      cpuByStack: [...this.cpuByStack],
      alloc: this.alloc.toJSON(fromNs),
      offcpu: [...this.offCache].map(([g, c]) => [g, { upTo: c.upTo, lane: c.lane.toJSON(true, fromNs) }]),
      offByTid: [...this.offByTid],
    };
  }

  /** Takes the lanes and whole-session figures of a saved state (after the raw events were applied). */
  private restore(s: JvmTimelineState): void {
    this.droppedBeforeNs = s.droppedBeforeNs;
    this.gcKinds = new Map(s.gcKinds.map(([c, k]) => [c, new Map(k)]));
    this.gcLanes = new Map(s.gcLanes.map(([c, l]) => [c, BoundedLane.from(l, gcStart, gcMark)]));
    this.spLane = BoundedLane.from(s.safepoints, (x) => x.timestampNs, undefined, this.spLane.recent());
    // The raw slices were applied from index 0: the lanes index them from where they were.
    this.runqBase = Math.max(0, Math.max(...s.runq.map(([, c]) => c.upTo), 0) - this.runqStore.length);
    this.cpuBase = Math.max(0, Math.max(...s.heat.map(([, c]) => c.upTo), 0) - this.cpuStore.length);
    this.heatCache = new Map(s.heat.map(([g, c]) => [g, { upTo: c.upTo, lane: BoundedLane.from(c.lane, (x: HeatCell) => x.startNs) }]));
    this.runqCache = new Map(s.runq.map(([g, c]) => [g, { upTo: c.upTo, slices: new Map(), lane: BoundedLane.from(c.lane, (x: RunqLaneRow) => x.startNs) }]));
    this.wholeGc = GcLive.from(s.wholeGc);
    this.wholeSpDurations = QuantileSketch.from(s.wholeSpDurations);
    this.wholeSpTts = QuantileSketch.from(s.wholeSpTts);
    this.runqByTid = new Map(s.runqByTid);
    this.cpuByStack = new Map(s.cpuByStack);
    this.alloc = AllocRate.from(s.alloc);
    if (s.offcpu) {
      this.offBase = Math.max(0, Math.max(...s.offcpu.map(([, c]) => c.upTo), 0) - this.offStore.length);
      this.offCache = new Map(s.offcpu.map(([g, c]) => [g, { upTo: c.upTo, lane: BoundedLane.from(c.lane, (x: OffcpuCell) => x.startNs) }]));
    }
    if (s.offByTid) this.offByTid = new Map(s.offByTid);
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
    // First-seen order, concurrent cycles last; a collector's kind is its most frequent one.
    const rows = [...this.gcKinds].map(([collector, kinds]) => {
      let kind: JavaGcKind | undefined;
      let n = -1;
      for (const [k, c] of kinds) if (c > n) [kind, n] = [k, c];
      return { collector, cycle: kind === 'concurrent-cycle' };
    });
    return rows.sort((a, b) => Number(a.cycle) - Number(b.cycle)).map((c) => c.collector);
  }

  /** One collector's lane: its events (the recent ones) and time bins over the whole session. */
  gcLane(collector: string): BoundedLane<JavaGcEvent> {
    let l = this.gcLanes.get(collector);
    if (!l) this.gcLanes.set(collector, (l = new BoundedLane(gcStart, gcMark)));
    return l;
  }
  safepointLane(): BoundedLane<JavaSafepoint> {
    return this.spLane;
  }
  /** One collector's retained events, in arrival order. */
  gcOf(collector: string): readonly JavaGcEvent[] {
    return this.gcLanes.get(collector)?.recent() ?? [];
  }

  /** CPU samples of one group per slice: the heat strip of its lane (extended as slices arrive). */
  heatLane(group: ThreadGroup): BoundedLane<HeatCell> {
    let c = this.heatCache.get(group);
    if (!c) this.heatCache.set(group, (c = { upTo: this.cpuBase, lane: new BoundedLane((h) => h.startNs) }));
    for (c.upTo = Math.max(c.upTo, this.cpuBase); c.upTo < this.cpuBase + this.cpuStore.length; c.upTo++) {
      const slice = this.cpuStore[c.upTo - this.cpuBase];
      let n = 0;
      for (let k = 0; k < slice.flat.length; k += 2) if (this.groupOf(this.stacks[slice.flat[k]]?.tid ?? -1) === group) n += slice.flat[k + 1];
      c.lane.push({ startNs: slice.startNs, endNs: slice.endNs, samples: n }, slice.startNs, slice.endNs, n || -Infinity);
    }
    return c.lane;
  }
  /** The retained heat cells of a group. */
  cpuHeat(group: ThreadGroup): readonly HeatCell[] {
    return this.heatLane(group).recent();
  }

  /** Off-CPU time of one group per slice, by state (extended as slices arrive). */
  offcpuLane(group: ThreadGroup): BoundedLane<OffcpuCell> {
    let c = this.offCache.get(group);
    if (!c) this.offCache.set(group, (c = { upTo: this.offBase, lane: new BoundedLane((x) => x.startNs) }));
    for (c.upTo = Math.max(c.upTo, this.offBase); c.upTo < this.offBase + this.offStore.length; c.upTo++) {
      const o = this.offStore[c.upTo - this.offBase];
      const us = [0, 0, 0, 0];
      for (let k = 0; k + 2 < o.rows.length; k += 3) if (this.groupOf(o.rows[k]) === group) us[o.rows[k + 1]] += o.rows[k + 2];
      const total = us[0] + us[1] + us[2] + us[3];
      c.lane.push({ startNs: o.startNs, endNs: o.endNs, us }, o.startNs, o.endNs, total || -Infinity);
    }
    return c.lane;
  }

  /** Threads of a group (its lane's scale: all of them off CPU for a whole slice fills it). */
  threadsIn(group: ThreadGroup): number {
    let n = 0;
    for (const t of this.threads.values()) if (t.group === group) n++;
    return n;
  }

  /** The worst run-queue wait of a group per slice (upper bound of the highest bucket, µs), by slice end. */
  runqLaneOf(group: ThreadGroup): BoundedLane<RunqLaneRow> {
    let c = this.runqCache.get(group);
    if (!c) this.runqCache.set(group, (c = { upTo: this.runqBase, slices: new Map(), lane: new BoundedLane((r) => r.startNs) }));
    const cache = c;
    const dirty = new Set<number>();
    this.eachRunq(c.upTo, this.runqBase + this.runqStore.length, (startNs, endNs, tid, counts) => {
      if (this.groupOf(tid) !== group) return;
      let s = cache.slices.get(endNs);
      if (!s) {
        const row = { startNs, endNs, maxUs: 0, p99Us: 0, count: 0 };
        cache.slices.set(endNs, (s = { startNs, counts: [], pos: cache.lane.push(row, startNs, endNs, -Infinity) }));
      }
      addCounts(s.counts, counts);
      dirty.add(endNs);
    });
    c.upTo = this.runqBase + this.runqStore.length;
    for (const endNs of dirty) {
      const s = c.slices.get(endNs)!;
      const st = statsOf(toBuckets(s.counts));
      c.lane.set(s.pos, { startNs: s.startNs, endNs, maxUs: st.max, p99Us: st.p99, count: st.count }, s.startNs, endNs, st.count ? st.max : -Infinity);
    }
    // A slice's waits arrive together; only the latest slices can still grow. Older ones keep
    // their row and bin, not their counts.
    if (c.slices.size > 64) {
      for (const endNs of c.slices.keys()) {
        if (c.slices.size <= 32) break;
        c.slices.delete(endNs);
      }
    }
    return c.lane;
  }
  /** The retained run-queue rows of a group. */
  runqLane(group: ThreadGroup): readonly RunqLaneRow[] {
    return this.runqLaneOf(group).recent();
  }

  /** Everything that happened in [startNs, endNs): GC, safepoints, run-queue waits, CPU samples and their stacks. */
  range(startNs: number, endNs: number): RangeStats {
    const [a, b] = startNs <= endNs ? [startNs, endNs] : [endNs, startNs];
    // The whole session (a live view's default window): from the running figures.
    if (a <= this.startNs && b >= this.endNs) return this.wholeRange(a, b);
    return this.scanRange(a, b);
  }

  /** range() over the whole session from the running figures: O(collectors + threads + stacks). */
  wholeRange(a: number, b: number): RangeStats {
    const rq = new Map<ThreadGroup, number[]>();
    for (const [tid, counts] of this.runqByTid) {
      const g = this.groupOf(tid);
      rq.set(g, addCounts(rq.get(g) ?? [], counts));
    }
    const off = new Map<ThreadGroup, number[]>();
    for (const [tid, per] of this.offByTid) {
      const g = this.groupOf(tid);
      const sum = off.get(g) ?? [0, 0, 0, 0];
      per.forEach((v, i) => (sum[i] += v));
      off.set(g, sum);
    }
    return this.finishRange(a, b, this.gc, this.wholeGc.collectors(), this.wholeGc.pauses.sum, this.wholeSafepoints(), rq, this.cpuByStack, false, off);
  }

  private wholeSafepoints(): JavaSafepointSummary {
    const d = this.wholeSpDurations;
    const t = this.wholeSpTts;
    return { count: d.n, totalNs: d.sum, ttsP50Ns: t.quantile(0.5), ttsP99Ns: t.quantile(0.99), ttsMaxNs: t.max, p50Ns: d.quantile(0.5), p99Ns: d.quantile(0.99), maxNs: d.max };
  }

  /** range() by a pass over the retained events (a zoomed window or a selection). */
  scanRange(a: number, b: number): RangeStats {
    const gc = this.gc.filter((e) => overlaps(e.timestampNs, e.timestampNs + Math.max(1, e.durationNs), a, b));
    const pauseNs = gc.filter((e) => isPause(e.kind)).reduce((s, e) => s + Math.min(b, e.timestampNs + e.durationNs) - Math.max(a, e.timestampNs), 0);
    const sps = this.safepoints.filter((s) => overlaps(s.timestampNs, s.timestampNs + Math.max(1, s.durationNs), a, b));
    const rq = new Map<ThreadGroup, number[]>();
    this.eachRunq(this.runqBase, this.runqBase + this.runqStore.length, (s0, s1, tid, counts) => {
      if (!overlaps(s0, s1, a, b)) return;
      const g = this.groupOf(tid);
      rq.set(g, addCounts(rq.get(g) ?? [], counts));
    });
    const perStack = new Map<number, number>();
    for (const c of this.cpuStore) {
      if (!overlaps(c.startNs, c.endNs, a, b)) continue;
      for (let k = 0; k < c.flat.length; k += 2) perStack.set(c.flat[k], (perStack.get(c.flat[k]) ?? 0) + c.flat[k + 1]);
    }
    // Off-CPU time of the slices that ended in the range (each interval counts where it ended).
    const off = new Map<ThreadGroup, number[]>();
    for (const o of this.offStore) {
      if (!overlaps(o.startNs, o.endNs, a, b)) continue;
      for (let k = 0; k + 2 < o.rows.length; k += 3) {
        const g = this.groupOf(o.rows[k]);
        const sum = off.get(g) ?? [0, 0, 0, 0];
        sum[o.rows[k + 1]] += o.rows[k + 2];
        off.set(g, sum);
      }
    }
    return this.finishRange(a, b, gc, collectorSummaries(gc), pauseNs, summarizeSafepoints(sps), rq, perStack, a < this.droppedBeforeNs, off);
  }

  private finishRange(a: number, b: number, gc: JavaGcEvent[], collectors: JavaGcCollectorSummary[], pauseNs: number, safepoints: JavaSafepointSummary, rq: Map<ThreadGroup, number[]>, perStack: Map<number, number>, partial: boolean, off: Map<ThreadGroup, number[]>): RangeStats {
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
      collectors,
      pauseNs,
      safepoints,
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
      offcpu: THREAD_GROUPS.filter((g) => off.has(g)).map((g) => ({ group: g, us: off.get(g)! })),
      alloc: this.alloc.range(a, b),
      ...(partial ? { coveredFromNs: this.droppedBeforeNs } : {}),
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
