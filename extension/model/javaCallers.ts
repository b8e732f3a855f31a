// "By caller" for Java methods: figures per call site (the calling method and the line of the
// call), whether they come from our agent's snapshot (counted in the JVM) or from the stacks of
// JFR's jdk.MethodTrace events (counted here), merged per calling method into the latency
// tracer's CallerLatency rows. Bounded like the agent: the first JAVA_CALLER_SITES call sites get
// their own figures, the calls from any later one are counted as "other". Pure.
import type { CallerLatency } from '../protocol/latency';
import { toBuckets } from './log2hist';
import { mergeCallSites } from './callerRows';

/** Call sites kept apart (the agent's Callers.MAX_SITES). */
export const JAVA_CALLER_SITES = 256;

export interface JavaCallFigures {
  count: number;
  sumNs: number;
  maxNs: number;
  /** log2 slots in the session's unit */
  log2: number[];
}

export interface JavaCallSite extends JavaCallFigures {
  /** Class.method of the caller, e.g. com.x.Foo.run */
  caller: string;
  /** its source, com/x/Foo.java, when known */
  file: string | null;
  line: number | null;
}

const zero = (): JavaCallFigures => ({ count: 0, sumNs: 0, maxNs: 0, log2: [] });

function add(f: JavaCallFigures, ns: number, slot: number): void {
  f.count++;
  f.sumNs += ns;
  if (ns > f.maxNs) f.maxNs = ns;
  while (f.log2.length <= slot) f.log2.push(0);
  f.log2[slot]++;
}

/** Counts calls per call site as they are read (JFR's events), at most `max` sites apart. */
export class JavaCallSiteTable {
  private readonly sites = new Map<string, JavaCallSite>();
  readonly other = zero();

  constructor(private readonly max = JAVA_CALLER_SITES) {}

  /** One call of `ns` (log2 slot `slot`) from `caller` at file:line; no caller known: "other". */
  add(caller: string | undefined, file: string | null, line: number | null, ns: number, slot: number): void {
    if (!caller) return add(this.other, ns, slot);
    const key = `${caller}\0${line ?? ''}`;
    let s = this.sites.get(key);
    if (!s) {
      if (this.sites.size >= this.max) return add(this.other, ns, slot);
      this.sites.set(key, (s = { caller, file, line, ...zero() }));
    }
    add(s, ns, slot);
  }

  list(): JavaCallSite[] {
    return [...this.sites.values()];
  }
}

/** The row of the calls from sites beyond the cap. */
export function otherCallersName(max: number): string {
  return `(other callers: beyond the first ${max} call sites, or unknown)`;
}

/** Call sites merged per calling method, most calls first, then the "other" row when it has calls. */
export function javaCallerRows(sites: JavaCallSite[], other?: JavaCallFigures, max = JAVA_CALLER_SITES): CallerLatency[] {
  const out = mergeCallSites(sites.map((s) => ({ who: { caller: s.caller, module: null, file: s.file, line: s.line }, figures: { ...s, slots: s.log2 } })));
  if (other?.count) out.push({ caller: otherCallersName(max), module: null, file: null, line: null, sites: 0, count: other.count, totalNs: other.sumNs, maxNs: other.maxNs, buckets: toBuckets(other.log2) });
  return out;
}
