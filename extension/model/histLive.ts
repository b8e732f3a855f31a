// The figures a log2-histogram tracer's live view and its saved session keep (runqlat,
// biolatency): the session's cumulative
// log2 counts, the most recent intervals (one heat-map column each, at most MAX_INTERVALS) and
// each key's cumulative counts. Each update adds one interval: O(its buckets and keys), never a
// pass over the session. The state is plain JSON: the extension host keeps one for the saved
// session, the webview one for drawing; a restored view loads the same figures. Pure.
import { addCounts, fromBuckets } from './log2hist';
import type { HistUpdate } from '../protocol/histogram';

/** Heat-map columns kept (one per interval): an hour at the default 1 s interval. */
export const MAX_INTERVALS = 3600;

/**
 * Keys (processes, threads, namespaces, disks) with a row of their own: a per-thread session on a busy
 * machine sees new thread ids all the time. The events of keys first seen after the table is full
 * are summed in one "other" row (key OTHER_KEY), so the table and its saved state stay bounded.
 */
export const MAX_KEYS = 2000;
export const OTHER_KEY = -2;
export const OTHER_COMM = 'other (keys beyond the first 2,000)';

export interface IntervalCounts {
  timestampNs: number;
  counts: number[];
}

export interface HistLiveState {
  version: 1;
  counts: number[];
  intervals: IntervalCounts[];
  droppedIntervals: number;
  keys: [number, { comm: string; counts: number[] }][];
  dropped: number;
}

export class HistLive {
  counts: number[] = [];
  intervals: IntervalCounts[] = [];
  /** intervals dropped from the front once MAX_INTERVALS was reached (their events stay in `counts`) */
  droppedIntervals = 0;
  keys = new Map<number, { comm: string; counts: number[] }>();
  dropped = 0;
  /** per-interval figures of keys beyond MAX_KEYS that went into the "other" row */
  otherUpdates = 0;

  /** Adds one interval; returns how many old intervals left the front. */
  apply(u: HistUpdate): number {
    const counts = fromBuckets(u.interval.buckets);
    addCounts(this.counts, counts);
    this.intervals.push({ timestampNs: u.interval.timestampNs, counts });
    let trimmed = 0;
    if (this.intervals.length > MAX_INTERVALS) {
      trimmed = this.intervals.length - MAX_INTERVALS;
      this.intervals.splice(0, trimmed);
      this.droppedIntervals += trimmed;
    }
    for (const h of u.keys) {
      let k = this.keys.get(h.key);
      if (!k) {
        if (this.keys.size - (this.keys.has(OTHER_KEY) ? 1 : 0) < MAX_KEYS) this.keys.set(h.key, (k = { comm: '', counts: [] }));
        else {
          k = this.keys.get(OTHER_KEY);
          if (!k) this.keys.set(OTHER_KEY, (k = { comm: OTHER_COMM, counts: [] }));
          this.otherUpdates++;
          addCounts(k.counts, fromBuckets(h.buckets));
          continue;
        }
      }
      addCounts(k.counts, fromBuckets(h.buckets));
      if (h.comm) k.comm = h.comm;
    }
    this.dropped = u.dropped;
    return trimmed;
  }

  /** Forgets the figures (the view's Clear). */
  reset(): void {
    this.counts = [];
    this.intervals = [];
    this.droppedIntervals = 0;
    this.keys.clear();
    this.otherUpdates = 0;
  }

  toJSON(): HistLiveState {
    return {
      version: 1,
      counts: [...this.counts],
      intervals: this.intervals.map((i) => ({ timestampNs: i.timestampNs, counts: [...i.counts] })),
      droppedIntervals: this.droppedIntervals,
      keys: [...this.keys].map(([k, v]) => [k, { comm: v.comm, counts: [...v.counts] }]),
      dropped: this.dropped,
    };
  }

  /** Replaces the figures with a saved state's. */
  load(s: HistLiveState): void {
    this.counts = [...s.counts];
    this.intervals = s.intervals.map((i) => ({ timestampNs: i.timestampNs, counts: [...i.counts] }));
    this.droppedIntervals = s.droppedIntervals;
    this.keys = new Map(s.keys.map(([k, v]) => [k, { comm: v.comm, counts: [...v.counts] }]));
    this.dropped = s.dropped;
  }
}

/** Whether a value is a HistLiveState (a saved session's `state`), without checking every field. */
export function isHistLiveState(v: unknown): v is HistLiveState {
  const s = v as Partial<HistLiveState> | null;
  return typeof s === 'object' && s !== null && s.version === 1 && Array.isArray(s.counts) && Array.isArray(s.intervals) && Array.isArray(s.keys);
}
