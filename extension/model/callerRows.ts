// "By caller" rows of the latency tracer, whatever named the call sites (a native return address
// symbolized, a Java call site from the agent or JFR): sites merged per calling function, so a
// caller that calls the measured function from three places is one row. Pure.
import type { CallerLatency } from '../protocol/latency';
import { addCounts, toBuckets } from './log2hist';

/** Who called: the calling function, its module (null for Java) and the call's source line. */
export type CallerId = Pick<CallerLatency, 'caller' | 'module' | 'file' | 'line'>;

export interface CallSiteFigures {
  count: number;
  sumNs: number;
  maxNs: number;
  /** log2 slots in the session's unit */
  slots: number[];
}

/** Sites merged per (module, caller), most calls first; a row's file:line is its busiest site's. */
export function mergeCallSites(sites: { who: CallerId; figures: CallSiteFigures }[]): CallerLatency[] {
  const rows = new Map<string, CallerLatency & { counts: number[]; busiest: number }>();
  for (const { who, figures: f } of sites) {
    const key = `${who.module ?? ''}\0${who.caller}`;
    let r = rows.get(key);
    if (!r) rows.set(key, (r = { ...who, sites: 0, count: 0, totalNs: 0, maxNs: 0, buckets: [], counts: [], busiest: -1 }));
    r.sites++;
    r.count += f.count;
    r.totalNs += f.sumNs;
    r.maxNs = Math.max(r.maxNs, f.maxNs);
    addCounts(r.counts, f.slots);
    if (f.count > r.busiest) Object.assign(r, { busiest: f.count, file: who.file, line: who.line });
  }
  return [...rows.values()]
    .map(({ counts, busiest: _busiest, ...r }) => ({ ...r, buckets: toBuckets(counts) }))
    .sort((a, b) => b.count - a.count || a.caller.localeCompare(b.caller));
}
