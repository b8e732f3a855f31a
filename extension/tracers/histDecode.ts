// Decoder of the histogram map every log2-histogram tracer leaves (layout: bpf/hist_tracer.bpf.h),
// and the aggregation of each interval's histograms into heat-map columns and per-key totals.
// Pure: unit-tested without a kernel.
import type { MapDump } from '../../native/index';
import type { HistInterval, HistResult, HistUnit, HistUpdate, KeyHistogram } from '../protocol/histogram';
import { addCounts, toBuckets, total } from '../model/log2hist';
import { cString } from './bpfObject';

export const HIST_MAX_SLOTS = 32;
export const HIST_KEY_SIZE = 8;
export const HIST_VALUE_SIZE = 272;
const COMM_OFFSET = 256;
const COMM_LEN = 16;
export const CTR_START_FULL = 0;
export const CTR_HIST_FULL = 1;

export interface HistEntry {
  /** the tracer's key; -1 without a per-key mode (the kernel's 0xffffffff) */
  key: number;
  epoch: number;
  slots: number[];
  comm: string;
}

/** struct hist_key (8 bytes) + struct hist_value (272 bytes) of each dumped map entry. */
export function decodeHistEntries(dump: MapDump, per: string): HistEntry[] {
  const out: HistEntry[] = [];
  for (let i = 0; i < dump.count; i++) {
    const k = dump.keys.subarray(i * HIST_KEY_SIZE, (i + 1) * HIST_KEY_SIZE);
    const v = dump.values.subarray(i * HIST_VALUE_SIZE, (i + 1) * HIST_VALUE_SIZE);
    const slots: number[] = [];
    for (let s = 0; s < HIST_MAX_SLOTS; s++) slots.push(Number(v.readBigUInt64LE(s * 8)));
    const raw = k.readUInt32LE(0);
    out.push({ key: per === 'none' ? -1 : raw, epoch: k.readUInt32LE(4), slots, comm: cString(v, COMM_OFFSET, COMM_LEN) });
  }
  return out;
}

/** Cumulative per-key histograms plus one column per interval. */
export class HistAggregate<T extends string = string> {
  private readonly byKey = new Map<number, { comm: string; counts: number[] }>();
  private readonly intervals: HistInterval[] = [];

  constructor(
    readonly tracer: T,
    readonly per: string,
    readonly unit: HistUnit,
    /** false: no interval columns are kept for the result */
    readonly keepIntervals = true,
  ) {}

  /** Folds one interval's entries in and returns that interval's update. */
  addInterval(entries: HistEntry[], timestampNs: number, dropped: number): HistUpdate {
    const sum: number[] = [];
    const fresh = new Map<number, { comm: string; counts: number[] }>();
    for (const e of entries) {
      addCounts(sum, e.slots);
      const f = fresh.get(e.key) ?? { comm: '', counts: [] };
      addCounts(f.counts, e.slots);
      if (e.comm) f.comm = e.comm;
      fresh.set(e.key, f);
      const acc = this.byKey.get(e.key) ?? { comm: '', counts: [] };
      addCounts(acc.counts, e.slots);
      if (e.comm) acc.comm = e.comm;
      this.byKey.set(e.key, acc);
    }
    const interval = { timestampNs, buckets: toBuckets(sum) };
    if (this.keepIntervals) this.intervals.push(interval);
    const keys = this.per === 'none' ? [] : [...fresh].map(([key, f]) => this.histogram(key, f)).sort((a, b) => a.key - b.key);
    return { interval, keys, dropped };
  }

  private histogram(key: number, h: { comm: string; counts: number[] }): KeyHistogram {
    return { key, comm: this.per === 'none' ? 'all' : h.comm, count: total(h.counts), buckets: toBuckets(h.counts) };
  }

  result(dropped: number): HistResult<T> {
    const histograms = [...this.byKey].map(([key, h]) => this.histogram(key, h)).sort((a, b) => a.key - b.key);
    if (this.per === 'none' && histograms.length === 0) histograms.push({ key: -1, comm: 'all', count: 0, buckets: [] });
    return { tracer: this.tracer, unit: this.unit, histograms, intervals: [...this.intervals], dropped };
  }
}
