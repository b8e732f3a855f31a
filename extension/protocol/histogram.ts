// JSON shapes every log2-histogram tracer shares (runqlat, biolatency, ...): options, the live
// update sent each interval, and the result, which is exactly the CLI's --json document. The
// buckets follow extension/model/log2hist.ts (bucket i counts 2^(i-1) <= v < 2^i).

export interface Bucket {
  /** inclusive lower bound */
  low: number;
  /** inclusive upper bound (runqlat style: 2^i - 1) */
  high: number;
  count: number;
}

export type HistUnit = 'us' | 'ms';

export interface HistOptions<Per extends string = string> {
  /** only this process (tgid); 0 = the whole system */
  pid: number;
  /** only the tasks of this container (its name or id prefix), by its cgroup; tracers whose spec says so */
  container?: string;
  /** what a histogram is kept per ('none': one for everything) */
  per: Per;
  unit: HistUnit;
  /** seconds between reads of the kernel histograms (one heat-map column each) */
  intervalS: number;
  /** false: updates only, the result keeps no interval columns (a long-running agent's memory stays flat) */
  retain?: boolean;
}

export interface KeyHistogram {
  /** the key (tgid, tid, namespace inode, device number...); -1 without a per-key mode */
  key: number;
  /** the key's name (a command name, a disk); "all" without a per-key mode */
  comm: string;
  count: number;
  buckets: Bucket[];
}

export interface HistInterval {
  /** end of the interval, CLOCK_MONOTONIC nanoseconds (the clock of bpf_ktime_get_ns) */
  timestampNs: number;
  /** all keys together */
  buckets: Bucket[];
}

export interface HistUpdate {
  interval: HistInterval;
  /** per-key histograms of this interval only (empty without a per-key mode) */
  keys: KeyHistogram[];
  /** events lost so far because a kernel map was full */
  dropped: number;
}

export interface HistResult<T extends string = string> {
  tracer: T;
  unit: HistUnit;
  /** cumulative over the session, ascending by key */
  histograms: KeyHistogram[];
  intervals: HistInterval[];
  /** events lost because a kernel map was full (start timestamps or histograms) */
  dropped: number;
}
