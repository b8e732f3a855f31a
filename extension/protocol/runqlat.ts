// JSON shapes of the run-queue latency tracer (runqlat): the log2-histogram kit's
// (protocol/histogram.ts) with runqlat's keys.
import type { HistInterval, HistOptions, HistResult, HistUnit, HistUpdate, KeyHistogram } from './histogram';

/** What a histogram is kept per: one for everything (key -1, comm "all"), or per key (cgroup: the
 * low 32 bits of the cgroup v2 id, the inode number of its directory; extension/sys/cgroup.ts names it). */
export type RunqlatPer = 'none' | 'process' | 'thread' | 'pidns' | 'cgroup';
export type RunqlatUnit = HistUnit;
export type RunqlatOptions = HistOptions<RunqlatPer>;
export type RunqlatHistogram = KeyHistogram;
export type RunqlatInterval = HistInterval;
export type RunqlatUpdate = HistUpdate;
export type RunqlatResult = HistResult<'runqlat'>;
