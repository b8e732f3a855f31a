// "By caller": the latency tracer's per-call-site figures (bpf/latency.bpf.c's `callers` map,
// keyed by the return address each call went back to), named by the function the address is in
// and merged per function: a caller that calls the measured function from three places is one
// row. Decoding and merging are pure; naming goes through the session's symbolizer.
import type { MapDump } from '../../../native/index';
import type { CallerLatency } from '../../protocol/latency';
import type { Frame } from '../../protocol/frames';
import { mergeCallSites } from '../../model/callerRows';

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
  return mergeCallSites(sites.map((site, i) => ({ who: callerOf(site, frames[i]), figures: site })));
}
