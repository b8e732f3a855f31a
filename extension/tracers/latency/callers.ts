// "By caller": the latency tracer's per-call-site figures (bpf/latency.bpf.c's `callers` map,
// keyed by the return address each call went back to), named by the function the address is in
// and merged per function: a caller that calls the measured function from three places is one
// row. Decoding and merging are pure; naming goes through the session's symbolizer.
import type { MapDump } from '../../../native/index';
import type { CallerLatency } from '../../protocol/latency';
import type { Frame } from '../../protocol/frames';
import { addCounts, toBuckets } from '../../model/log2hist';

export const CALLER_VALUE_SIZE = 280;
const SLOTS = 32;

export interface CallSite {
  address: bigint;
  count: number;
  sumNs: number;
  maxNs: number;
  slots: number[];
}

/** The callers map: u64 return address → struct caller_val. */
export function decodeCallers(dump: MapDump): CallSite[] {
  const out: CallSite[] = [];
  for (let i = 0; i < dump.count; i++) {
    const v = dump.values.subarray(i * CALLER_VALUE_SIZE, (i + 1) * CALLER_VALUE_SIZE);
    const slots: number[] = [];
    for (let s = 0; s < SLOTS; s++) slots.push(Number(v.readBigUInt64LE(24 + s * 8)));
    out.push({ address: dump.keys.readBigUInt64LE(i * 8), count: Number(v.readBigUInt64LE(0)), sumNs: Number(v.readBigUInt64LE(8)), maxNs: Number(v.readBigUInt64LE(16)), slots });
  }
  return out;
}

/** The name a call site's frame gives its caller: the innermost function inlined there, else the function. */
function callerOf(site: CallSite, f: Frame | undefined): { caller: string; module: string | null; file: string | null; line: number | null } {
  const inner = f?.inlined?.[0];
  const fn = inner?.function ?? f?.function;
  return {
    caller: fn ?? `0x${site.address.toString(16)}${f?.module ? ` in ${f.module}` : ''}`,
    module: f?.module && f.module !== '[unknown]' ? f.module : null,
    file: (inner ? inner.file : f?.file) ?? null,
    line: (inner ? inner.line : f?.line) ?? null,
  };
}

/** Call sites merged per calling function, most calls first; `frames[i]` names `sites[i]`. */
export function mergeCallers(sites: CallSite[], frames: (Frame | undefined)[]): CallerLatency[] {
  const rows = new Map<string, CallerLatency & { counts: number[]; busiest: number }>();
  sites.forEach((site, i) => {
    const who = callerOf(site, frames[i]);
    const key = `${who.module ?? ''}\0${who.caller}`;
    let r = rows.get(key);
    if (!r) rows.set(key, (r = { ...who, sites: 0, count: 0, totalNs: 0, maxNs: 0, buckets: [], counts: [], busiest: -1 }));
    r.sites++;
    r.count += site.count;
    r.totalNs += site.sumNs;
    r.maxNs = Math.max(r.maxNs, site.maxNs);
    addCounts(r.counts, site.slots);
    // the row's source line is that of its busiest call site
    if (site.count > r.busiest) Object.assign(r, { busiest: site.count, file: who.file, line: who.line });
  });
  return [...rows.values()]
    .map(({ counts, busiest: _busiest, ...r }) => ({ ...r, buckets: toBuckets(counts) }))
    .sort((a, b) => b.count - a.count || a.caller.localeCompare(b.caller));
}
