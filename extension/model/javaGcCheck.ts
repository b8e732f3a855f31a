// What java-gc traced in a JVM against the JVM's own collection counters (hsperfdata), and the
// verdict: a trace that saw nothing, or far fewer, while the JVM collected is an error naming the
// likely cause, never a quiet report. Pure.
import type { JavaGcJvmCount, JavaGcKind } from '../protocol/javaGc';

/** A collection in flight when the session starts or ends is on one side only. */
const EDGE_SLACK = 2;

/**
 * Which of our kinds a HotSpot counter set counts (JDK 11-21 names). Serial's, Parallel's and
 * G1's count exactly their GarbageCollectorMXBeans' collections; ZGC's and Shenandoah's count
 * other things (every pause, or every cycle of a kind), so they are not compared one to one.
 */
export function kindsOfCounter(name: string): JavaGcKind[] | undefined {
  if (/ young collection pauses$/.test(name)) return ['young'];
  if (/ full collection pauses$/.test(name)) return ['full'];
  if (name === 'G1 concurrent cycle pauses') return ['concurrent-pause'];
  return undefined;
}

export interface JvmCountInput {
  pid: number;
  /** our collections in this JVM over the session, by kind */
  ours: ReadonlyMap<JavaGcKind, number>;
  /** HotSpot's counters' deltas over the session; undefined when unreadable */
  jvm?: readonly { name: string; invocations: number }[];
  /** why the counters could not be read */
  unreadable?: string;
  /** --min-us: collections shorter than this were dropped on purpose */
  minUs: number;
  /** what the probes are on, for the error ("the probes are on X; the JVM runs Y") */
  attachedTo?: string;
  /** events the kernel could not deliver in the session */
  lost: number;
}

const sum = (xs: Iterable<number>) => [...xs].reduce((a, b) => a + b, 0);

export function checkJvmCount(x: JvmCountInput): JavaGcJvmCount {
  const all = sum(x.ours.values());
  const head = `pid ${x.pid}: counted`;
  if (!x.jvm) return { pid: x.pid, counted: all, verdict: 'unread', message: `${head} ${all} — the JVM's own counters could not be read (${x.unreadable ?? 'unknown reason'}), so this count is not checked` };
  const collectors = x.jvm.map((c) => ({ ...c, ...(kindsOfCounter(c.name) ? { kinds: kindsOfCounter(c.name) } : {}) }));
  const comparable = collectors.every((c) => c.kinds);
  const jvmCounted = sum(collectors.map((c) => c.invocations));
  const counted = comparable ? sum(collectors.flatMap((c) => c.kinds!).map((k) => x.ours.get(k) ?? 0)) : all;
  const base = { pid: x.pid, counted, jvmCounted, collectors };
  const says = `${head} ${counted} — the JVM counts ${jvmCounted}`;
  // Events the kernel counted as lost are said already (the result's lost, the CLI's hint): only
  // a shortfall they do not explain is a silent one.
  const seen = counted + x.lost;
  const missed = jvmCounted > 0 && (seen === 0 || (comparable && jvmCounted >= 4 && seen < jvmCounted / 2));
  if (missed && x.minUs === 0) return { ...base, verdict: 'missed', message: `${says}: ${missedCause(x, counted)}` };
  if (x.minUs > 0) return { ...base, verdict: 'filtered', message: `${says} (collections under ${x.minUs} µs were not traced: --min-us)` };
  if (!comparable) return { ...base, verdict: 'loose', message: `${says} (${collectors.map((c) => `"${c.name}"`).join(', ')}: HotSpot's counters for this collector count other things than its collections)` };
  if (Math.abs(counted - jvmCounted) <= EDGE_SLACK) return { ...base, verdict: 'agree', message: says };
  if (counted < jvmCounted) return { ...base, verdict: 'fewer', message: `${says}: ${jvmCounted - counted} collections were not traced${x.lost ? ` (${x.lost} events were lost: kernel buffer full)` : ''}` };
  return { ...base, verdict: 'more', message: `${says}: ${counted - jvmCounted} more than the JVM counted (probes attached twice to the same libjvm.so?)` };
}

function missedCause(x: JvmCountInput, counted: number): string {
  const where = x.attachedTo ? ` (the probes are on ${x.attachedTo})` : '';
  return counted === 0
    ? `no collection was traced while the JVM collected${where}. Likely cause: the probes are on another file than the libjvm.so this JVM runs (a container's own JDK, a JDK replaced after the JVM started), or its libjvm.so's USDT probes do not fire`
    : `most collections were not traced${where}; the probes may have been attached late (a JVM that started before its libjvm.so was found)`;
}

/** The error for a session whose counts disagree with a JVM's own, or undefined. */
export function countsProblem(counts: readonly JavaGcJvmCount[]): string | undefined {
  const bad = counts.filter((c) => c.verdict === 'missed');
  return bad.length ? bad.map((c) => c.message).join('; ') : undefined;
}
