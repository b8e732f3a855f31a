// The JVM timeline view's state: the session's data (extension/model/jvmTimeline.ts), the
// visible time window (zoom, pan, follow the live edge), the selected range and what is drawn in
// each lane. Pure: no DOM, unit-tested.
import type { BoundedLane } from '../../extension/model/boundedLane';
import { formatBucketBound } from '../../extension/model/units';
import { formatMb, formatRate } from '../../extension/model/allocRate';
import { GROUP_LABEL, OFF_STATE_LABEL, OFF_STATES, type OffcpuCell, JvmTimeline, type JvmResult, type JvmUpdate, type RangeStats, type ThreadGroup } from '../../extension/model/jvmTimeline';
import type { JavaGcEvent } from '../../extension/protocol/javaGc';
import { fromProfileResult, type FlameProfile } from '../../extension/model/flamegraph/profileData';

export type SessionState = 'running' | 'stopped' | 'target-exited' | 'error' | 'imported';

export type Lane =
  | { kind: 'gc'; id: string; label: string; collector: string }
  | { kind: 'safepoint'; id: string; label: string }
  /** the heap used after each GC (every heap pool; the tooltip lists them) */
  | { kind: 'heap'; id: string; label: string }
  /** the allocation rate between GCs (model/allocRate.ts) */
  | { kind: 'alloc'; id: string; label: string }
  | { kind: 'group'; id: string; label: string; group: ThreadGroup }
  /** a thread group's time off CPU per slice, by state */
  | { kind: 'offcpu'; id: string; label: string; group: ThreadGroup };

/** A mark in a lane, in CSS pixels of the plot. */
export interface Mark {
  x: number;
  w: number;
  /** 0..1: the heat of a CPU cell, the height of a run-queue bar */
  level: number;
  /** what the tooltip says */
  readonly label: string;
  /** the item the mark describes (the highest of those it merges) */
  readonly item?: unknown;
}

/** A mark whose label is written only when read (a tooltip), not for every mark drawn. */
class LazyMark<T> implements Mark {
  constructor(
    public x: number,
    public w: number,
    public level: number,
    readonly item: T,
    private readonly n: number,
    private readonly describe: (best: T, n: number) => string,
  ) {}
  get label(): string {
    return this.describe(this.item, this.n);
  }
}

/** The smallest window one can zoom into. */
const MIN_SPAN_NS = 5e6;

export class TimelineView {
  data = new JvmTimeline();
  state: SessionState = 'running';
  message = '';
  target = '';
  /** visible window, absolute CLOCK_MONOTONIC ns; undefined = the whole session (follows live) */
  window: [number, number] | undefined;
  selection: [number, number] | undefined;

  apply(u: JvmUpdate): void {
    this.data.apply(u);
  }

  load(r: JvmResult, state: SessionState = 'imported'): void {
    this.data = JvmTimeline.fromResult(r);
    this.state = state;
    this.window = undefined;
    this.selection = undefined;
  }

  end(reason: Exclude<SessionState, 'running' | 'imported'>, message?: string, final?: JvmResult): void {
    this.state = reason;
    this.message = message ?? '';
    // The final result carries the symbolized stacks (same order as streamed); the rest of it
    // streamed already, and the lanes hold more of the session than its raw events do.
    if (final) {
      if (!this.data.startNs) {
        this.data = JvmTimeline.fromResult(final);
        return;
      }
      if (final.stacks.length >= this.data.stacks.length) this.data.replaceStacks(final.stacks);
      this.data.lost = final.lost;
      this.data.dropped = final.dropped;
      this.data.endNs = Math.max(this.data.endNs, final.endNs);
      for (const w of final.warnings) if (!this.data.warnings.includes(w)) this.data.warnings.push(w);
    }
  }

  /** The session's whole span (at least 1 s so an empty session still has an axis). */
  span(): [number, number] {
    const s = this.data.startNs;
    return [s, Math.max(this.data.endNs, s + 1e9)];
  }

  visible(): [number, number] {
    return this.window ?? this.span();
  }

  xToNs(x: number, width: number): number {
    const [a, b] = this.visible();
    return a + (Math.min(Math.max(x, 0), width) / Math.max(1, width)) * (b - a);
  }

  nsToX(ns: number, width: number): number {
    const [a, b] = this.visible();
    return ((ns - a) / Math.max(1, b - a)) * width;
  }

  /** Zooms by `factor` (< 1 in, > 1 out) around `anchorNs`, within the session. */
  zoom(factor: number, anchorNs: number): void {
    const [a, b] = this.visible();
    const [s0, s1] = this.span();
    const span = Math.min(s1 - s0, Math.max(MIN_SPAN_NS, (b - a) * factor));
    const f = (anchorNs - a) / Math.max(1, b - a);
    let start = anchorNs - f * span;
    start = Math.min(Math.max(start, s0), s1 - span);
    this.window = span >= s1 - s0 ? undefined : [start, start + span];
  }

  pan(deltaNs: number): void {
    if (!this.window) return;
    const [s0, s1] = this.span();
    const [a, b] = this.window;
    const d = Math.min(Math.max(deltaNs, s0 - a), s1 - b);
    this.window = [a + d, b + d];
  }

  zoomToSelection(): void {
    if (this.selection && this.selection[1] - this.selection[0] >= MIN_SPAN_NS) this.window = [...this.selection];
  }

  resetZoom(): void {
    this.window = undefined;
  }

  select(a: number, b: number): void {
    this.selection = a <= b ? [a, b] : [b, a];
  }

  clearSelection(): void {
    this.selection = undefined;
  }

  lanes(): Lane[] {
    const out: Lane[] = this.data.collectors().map((c) => ({ kind: 'gc' as const, id: `gc:${c}`, label: c, collector: c }));
    const alloc = this.data.alloc;
    if (alloc.heap.length) out.push({ kind: 'heap', id: 'heap', label: `Heap after GC (max ${formatMb(alloc.maxHeap)})` });
    if (alloc.intervals.length) out.push({ kind: 'alloc', id: 'alloc', label: `Allocation (max ${formatRate(alloc.maxRate)})` });
    else if (alloc.unavailable()) out.push({ kind: 'alloc', id: 'alloc', label: 'Allocation (not available)' });
    out.push({ kind: 'safepoint', id: 'safepoints', label: this.data.safepointsAvailable ? 'Safepoints' : 'Safepoints (not available)' });
    for (const g of this.data.groups()) {
      out.push({ kind: 'group', id: `group:${g}`, label: GROUP_LABEL[g], group: g });
      if (this.data.offcpuAvailable) out.push({ kind: 'offcpu', id: `offcpu:${g}`, label: `${GROUP_LABEL[g].replace(/ threads?$/, '')} off CPU`, group: g });
    }
    return out;
  }

  /**
   * Marks of time-ordered items in the visible window, at most one per pixel column: items that
   * fall in the same pixel merge into one mark (its level the highest, its label saying how many).
   * So a lane costs the same to draw after an hour as after a minute, and labels are built only
   * for the marks drawn. `start` must be (nearly) ascending: a binary search skips what lies
   * before the window (allowing `slackNs` of disorder and of items reaching into it). `steps`:
   * items that follow one another without a gap (a rate between GCs) merge only when they start
   * in the same pixel column, not because one reaches into the next.
   */
  private binned<T>(lane: BoundedLane<T>, width: number, start: (t: T) => number, end: (t: T) => number, level: (t: T) => number, describe: (best: T, n: number) => string, slackNs = 10e9, steps = false): Mark[] {
    const [v0, v1] = this.visible();
    // A window wider than a bin per pixel, or reaching before the retained items: read the bins.
    if ((v1 - v0) / Math.max(1, width) >= lane.bins.binNs || (lane.first > 0 && v0 - slackNs < lane.recentFromNs())) return this.fromBins(lane, width, level, describe, slackNs, steps);
    const items = lane.recent();
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (start(items[mid]) < v0 - slackNs) lo = mid + 1;
      else hi = mid;
    }
    const out: Mark[] = [];
    let cur: { x: number; end: number; lastX: number; realEnd: number; level: number; best: T; n: number } | undefined;
    const flush = () => {
      if (cur) out.push(new LazyMark(cur.x, Math.max(1, cur.end - cur.x), cur.level, cur.best, cur.n, describe));
    };
    for (let i = lo; i < items.length; i++) {
      const it = items[i];
      const a = start(it);
      if (a > v1 + slackNs) break;
      const b = end(it);
      if (b < v0 || a > v1) continue;
      const x = this.nsToX(Math.max(a, v0), width);
      // Where it really ends, and where its mark ends (at least a pixel wide).
      const xr = this.nsToX(Math.min(b, v1), width);
      const xe = Math.max(x + 1, xr);
      const lv = level(it);
      if (cur && Math.floor(x) <= Math.floor(steps ? cur.lastX : Math.max(cur.lastX, cur.realEnd - 1e-6))) {
        cur.lastX = x;
        cur.realEnd = Math.max(cur.realEnd, xr);
        cur.end = Math.max(cur.end, xe);
        cur.n++;
        if (lv > cur.level) {
          cur.level = lv;
          cur.best = it;
        }
        continue;
      }
      flush();
      cur = { x, end: xe, lastX: x, realEnd: xr, level: lv, best: it, n: 1 };
    }
    flush();
    return out;
  }

  /**
   * binned() from a lane's TimeBins: bins in the window, merged per pixel column. A bin's level
   * is its highest item's raw figure (duration, samples, worst wait), which the lane's `level`
   * maps monotonically, so the best item is chosen on it and mapped once per mark.
   */
  private fromBins<T>(lane: BoundedLane<T>, width: number, level: (t: T) => number, describe: (best: T, n: number) => string, reachNs: number, steps = false): Mark[] {
    const bins = lane.bins;
    const [v0, v1] = this.visible();
    const [first, last] = bins.span(v0, v1, reachNs);
    const scale = width / Math.max(1, v1 - v0);
    const out: Mark[] = [];
    let on = false;
    let x0 = 0;
    let end = 0;
    let lastX = 0;
    let realEnd = 0;
    let raw = -Infinity;
    let best = -1;
    let n = 0;
    const flush = () => {
      const it = best >= 0 ? lane.get(best) : undefined;
      if (on && it !== undefined) out.push(new LazyMark(x0, Math.max(1, end - x0), level(it), it, n, describe));
    };
    for (let i = first; i <= last; i++) {
      const c = bins.count[i];
      if (!c) continue;
      const a = bins.start[i];
      const b = bins.end[i];
      if (b < v0 || a > v1) continue;
      const x = (Math.max(a, v0) - v0) * scale;
      const xr = (Math.min(b, v1) - v0) * scale;
      const xe = Math.max(x + 1, xr);
      if (on && Math.floor(x) <= Math.floor(steps ? lastX : Math.max(lastX, realEnd - 1e-6))) {
        lastX = x;
        realEnd = Math.max(realEnd, xr);
        end = Math.max(end, xe);
        n += c;
        if (bins.level[i] > raw) [raw, best] = [bins.level[i], bins.best[i]];
        continue;
      }
      flush();
      [on, x0, end, lastX, realEnd, raw, best, n] = [true, x, xe, x, xr, bins.level[i], bins.best[i], c];
    }
    flush();
    return out;
  }

  private gcMarks(events: BoundedLane<JavaGcEvent>, width: number): Mark[] {
    const describe = (e: JavaGcEvent, n: number) =>
      `${n > 1 ? `${n} collections here, the longest: ` : ''}${e.collector} ${e.kind}${e.escalated ? ' (escalated: followed another collection in the same pause)' : ''}: ${ms(e.durationNs)}${e.operation ? ` (${e.operation})` : ''}`;
    return this.binned(events, width, (e) => e.timestampNs, (e) => e.timestampNs + e.durationNs, (e) => e.durationNs, describe, 10e9);
  }

  /** What a lane shows in the visible window: GC bars, safepoint bars, or CPU heat cells. */
  marks(lane: Lane, width: number): Mark[] {
    if (lane.kind === 'gc') return this.gcMarks(this.data.gcLane(lane.collector), width);
    if (lane.kind === 'alloc') {
      const a = this.data.alloc;
      const max = Math.max(1, a.maxRate);
      return this.binned(
        a.intervals,
        width,
        (iv) => iv.startNs,
        (iv) => iv.endNs,
        (iv) => iv.rate / max,
        (iv, n) => `${n > 1 ? `highest of ${n} intervals here: ` : ''}${formatRate(iv.rate)}: ${formatMb(iv.bytes)} allocated in ${ms(iv.endNs - iv.startNs)} between two GCs (${this.label(iv.startNs)} – ${this.label(iv.endNs)})`,
        10e9,
        true,
      );
    }
    if (lane.kind === 'heap') {
      const a = this.data.alloc;
      const max = Math.max(1, a.maxHeap);
      return this.binned(
        a.heap,
        width,
        (h) => h.startNs,
        (h) => h.ns,
        (h) => h.totalBytes / max,
        (h, n) => `${n > 1 ? `highest of ${n} GCs here: ` : ''}heap after GC ${formatMb(h.totalBytes)} (${h.pools.map(([name, b]) => `${name} ${formatMb(b)}`).join(', ')})`,
        10e9,
      );
    }
    if (lane.kind === 'safepoint') {
      return this.binned(
        this.data.safepointLane(),
        width,
        (s) => s.timestampNs,
        (s) => s.timestampNs + s.durationNs,
        (s) => s.durationNs,
        (s, n) => `${n > 1 ? `${n} safepoints here, the longest: ` : 'safepoint '}${ms(s.durationNs)}, time to safepoint ${ms(s.timeToSafepointNs)}${s.operation ? ` (${s.operation})` : ''}`,
        10e9,
      );
    }
    if (lane.kind === 'offcpu') {
      // Full height: every thread of the group off CPU for the whole slice.
      const threads = Math.max(1, this.data.threadsIn(lane.group));
      const total = (c: OffcpuCell) => c.us[0] + c.us[1] + c.us[2] + c.us[3];
      return this.binned(
        this.data.offcpuLane(lane.group),
        width,
        (c) => c.startNs,
        (c) => (total(c) ? c.endNs : -Infinity),
        (c) => Math.min(1, (total(c) * 1e3) / Math.max(1, threads * (c.endNs - c.startNs))),
        (c, n) =>
          `${n > 1 ? `most of ${n} slices here: ` : ''}${GROUP_LABEL[lane.group]} off CPU ${(total(c) / 1e6).toFixed(2)} thread-s in ${ms(c.endNs - c.startNs)} (${threads} threads): ${OFF_STATES.map((st, i) => `${OFF_STATE_LABEL[st]} ${(c.us[i] / 1e6).toFixed(2)} s`).join(', ')}`,
        0,
      );
    }
    const heat = this.data.heatLane(lane.group);
    // Samples per slice per CPU-second: a full CPU is frequency × slice length.
    const full = Math.max(1, (this.data.frequency || 99) * ((this.data.sliceMs || 250) / 1000));
    return this.binned(
      heat,
      width,
      (h) => h.startNs,
      (h) => (h.samples ? h.endNs : -Infinity),
      (h) => Math.min(1, h.samples / full),
      (h, n) => `${n > 1 ? `busiest of ${n} slices here: ` : ''}${h.samples} CPU samples (${((100 * h.samples) / full).toFixed(0)} % of a CPU)`,
      0,
    );
  }

  /** The run-queue bars of a thread-group lane: height by the worst wait in the slice (log scale, 1 µs .. 1 s). */
  runqMarks(group: ThreadGroup, width: number): Mark[] {
    return this.binned(
      this.data.runqLaneOf(group),
      width,
      (r) => r.startNs,
      (r) => (r.count ? r.endNs : -Infinity),
      (r) => Math.min(1, Math.log10(Math.max(1, r.maxUs)) / 6),
      (r, n) => `${n > 1 ? `worst of ${n} slices here: ` : ''}${r.count} run-queue waits, max ≤ ${us(r.maxUs)}, p99 ≤ ${us(r.p99Us)}`,
      0,
    );
  }

  /** Statistics of the selection, or of the visible window when nothing is selected. */
  rangeStats(): RangeStats {
    const [a, b] = this.selection ?? this.visible();
    return this.data.range(a, b);
  }

  /** The flame graph of the selection (or of the visible window), rooted by thread ("name [tid]"). */
  rangeProfile(r: RangeStats = this.rangeStats()): FlameProfile {
    return fromProfileResult({ tracer: 'profile', frequency: this.data.frequency, samples: r.cpuTotal, lost: 0, stacks: r.stacks.map((s) => ({ ...s, pid: s.tid })) }, { groupByProcess: true, name: 'range' });
  }

  /** "1.234 s" since the session start. */
  label(ns: number): string {
    return `${((ns - this.data.startNs) / 1e9).toFixed(3)} s`;
  }
}

function ms(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(ns >= 1e8 ? 0 : 1)} ms` : `${(ns / 1e3).toFixed(0)} µs`;
}

/** A run-queue bucket bound in µs, in the one bucket-label format of every view. */
function us(v: number): string {
  return formatBucketBound(v, 'us');
}
