// The JVM timeline view's state: the session's data (extension/model/jvmTimeline.ts), the
// visible time window (zoom, pan, follow the live edge), the selected range and what is drawn in
// each lane. Pure: no DOM, unit-tested.
import { GROUP_LABEL, JvmTimeline, type JvmResult, type JvmUpdate, type RangeStats, type ThreadGroup } from '../../extension/model/jvmTimeline';
import type { JavaGcEvent } from '../../extension/protocol/javaGc';
import { fromProfileResult, type FlameProfile } from '../../extension/model/flamegraph/profileData';

export type SessionState = 'running' | 'stopped' | 'target-exited' | 'error' | 'imported';

export type Lane =
  | { kind: 'gc'; id: string; label: string; collector: string }
  | { kind: 'safepoint'; id: string; label: string }
  | { kind: 'group'; id: string; label: string; group: ThreadGroup };

/** A mark in a lane, in CSS pixels of the plot. */
export interface Mark {
  x: number;
  w: number;
  /** 0..1: the heat of a CPU cell, the height of a run-queue bar */
  level: number;
  /** what the tooltip says */
  label: string;
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
    // The final result carries the symbolized stacks.
    if (final) {
      const { window, selection } = this;
      this.data = JvmTimeline.fromResult(final);
      this.window = window;
      this.selection = selection;
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
    out.push({ kind: 'safepoint', id: 'safepoints', label: this.data.safepointsAvailable ? 'Safepoints' : 'Safepoints (not available)' });
    for (const g of this.data.groups()) out.push({ kind: 'group', id: `group:${g}`, label: GROUP_LABEL[g], group: g });
    return out;
  }

  private clip(a: number, b: number, width: number): { x: number; w: number } | undefined {
    const [v0, v1] = this.visible();
    if (b < v0 || a > v1) return undefined;
    const x = this.nsToX(Math.max(a, v0), width);
    return { x, w: Math.max(1, this.nsToX(Math.min(b, v1), width) - x) };
  }

  private gcMarks(events: JavaGcEvent[], width: number): Mark[] {
    const out: Mark[] = [];
    for (const e of events) {
      const c = this.clip(e.timestampNs, e.timestampNs + e.durationNs, width);
      if (c) out.push({ ...c, level: 1, label: `${e.collector} ${e.kind}${e.escalated ? ' (escalated)' : ''}: ${ms(e.durationNs)}${e.operation ? ` (${e.operation})` : ''}` });
    }
    return out;
  }

  /** What a lane shows in the visible window: GC bars, safepoint bars, or CPU heat cells. */
  marks(lane: Lane, width: number): Mark[] {
    if (lane.kind === 'gc') return this.gcMarks(this.data.gc.filter((e) => e.collector === lane.collector), width);
    if (lane.kind === 'safepoint') {
      const out: Mark[] = [];
      for (const s of this.data.safepoints) {
        const c = this.clip(s.timestampNs, s.timestampNs + s.durationNs, width);
        if (c) out.push({ ...c, level: 1, label: `safepoint ${ms(s.durationNs)}, time to safepoint ${ms(s.timeToSafepointNs)}${s.operation ? ` (${s.operation})` : ''}` });
      }
      return out;
    }
    const heat = this.data.cpuHeat(lane.group);
    // Samples per slice per CPU-second: a full CPU is frequency × slice length.
    const full = Math.max(1, (this.data.frequency || 99) * ((this.data.sliceMs || 250) / 1000));
    const out: Mark[] = [];
    for (const h of heat) {
      if (!h.samples) continue;
      const c = this.clip(h.startNs, h.endNs, width);
      if (c) out.push({ ...c, level: Math.min(1, h.samples / full), label: `${h.samples} CPU samples (${((100 * h.samples) / full).toFixed(0)} % of a CPU)` });
    }
    return out;
  }

  /** The run-queue bars of a thread-group lane: height by the worst wait in the slice (log scale, 1 µs .. 1 s). */
  runqMarks(group: ThreadGroup, width: number): Mark[] {
    const out: Mark[] = [];
    for (const r of this.data.runqLane(group)) {
      if (!r.count) continue;
      const c = this.clip(r.startNs, r.endNs, width);
      if (c) out.push({ ...c, level: Math.min(1, Math.log10(Math.max(1, r.maxUs)) / 6), label: `${r.count} run-queue waits, max ≤ ${us(r.maxUs)}, p99 ≤ ${us(r.p99Us)}` });
    }
    return out;
  }

  /** Statistics of the selection, or of the visible window when nothing is selected. */
  rangeStats(): RangeStats {
    const [a, b] = this.selection ?? this.visible();
    return this.data.range(a, b);
  }

  /** The flame graph of the selection (or of the visible window), rooted by thread ("name [tid]"). */
  rangeProfile(): FlameProfile {
    const r = this.rangeStats();
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

function us(v: number): string {
  return v >= 1000 ? `${(v / 1000).toFixed(v >= 1e5 ? 0 : 1)} ms` : `${v} µs`;
}
