// JSON shapes of the run-queue latency tracer (runqlat): options, the live update sent each
// interval, and the result, which is exactly the CLI's --json document.
import type { Bucket } from '../model/log2hist';

/** What a histogram is kept per: one for everything (key -1, comm "all"), or per key (cgroup: the
 * low 32 bits of the cgroup v2 id, the inode number of its directory; extension/sys/cgroup.ts names it). */
export type RunqlatPer = 'none' | 'process' | 'thread' | 'pidns' | 'cgroup';
export type RunqlatUnit = 'us' | 'ms';

export interface RunqlatOptions {
  /** only threads of this process (tgid); 0 = the whole system */
  pid: number;
  per: RunqlatPer;
  unit: RunqlatUnit;
  /** seconds between reads of the kernel histograms (one heat-map column each) */
  intervalS: number;
  /** false: updates only, the result keeps no interval columns (a long-running agent's memory stays flat) */
  retain?: boolean;
}

export interface RunqlatHistogram {
  /** tgid, tid or pid-namespace inode number; -1 without a per-key mode */
  key: number;
  /** thread or process name ("all" without a per-key mode) */
  comm: string;
  count: number;
  buckets: Bucket[];
}

export interface RunqlatInterval {
  /** end of the interval, CLOCK_MONOTONIC nanoseconds (the clock of bpf_ktime_get_ns) */
  timestampNs: number;
  /** all keys together */
  buckets: Bucket[];
}

export interface RunqlatUpdate {
  interval: RunqlatInterval;
  /** per-key histograms of this interval only (empty without a per-key mode) */
  keys: RunqlatHistogram[];
  /** waits lost so far because a kernel map was full */
  dropped: number;
}

export interface RunqlatResult {
  tracer: 'runqlat';
  unit: RunqlatUnit;
  /** cumulative over the session, ascending by key */
  histograms: RunqlatHistogram[];
  intervals: RunqlatInterval[];
  /** waits lost because a kernel map was full (enqueue timestamps or histograms) */
  dropped: number;
}

export const RUNQLAT_KEY_LABEL: Record<RunqlatPer, string> = { none: '', process: 'pid', thread: 'tid', pidns: 'pidns', cgroup: 'cgroup' };

// The bucket statistics are every log2 histogram's (model/log2hist.ts).
export { statsOf, type HistStats as RunqlatStats } from '../model/log2hist';
