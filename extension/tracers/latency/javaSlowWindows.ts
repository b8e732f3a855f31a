// "Profile the slow calls" of a Java method timed by our agent: the windows (thread, start, end)
// of the slow calls the agent's snapshots carry, and the filter the wall-clock profile's Java join
// asks, per sample, whether it fell inside one. Windows come in sequence order; a gap in the
// numbers is windows the agent's ring overwrote before a snapshot carried them, counted. Bounded:
// at most WINDOWS_KEPT, those that ended long before the horizon are let go (no sample that old is
// still undecided). Pure.
import type { SampleFilter } from '../javaAgent/agent';
import type { JavaSnapshot } from './javaSnapshot';

const WINDOWS_KEPT = 100_000;
/** Samples are decided within ~1 s of their time (the join's delays): windows older than this before the horizon can go. */
const PRUNE_BEFORE_NS = 30_000_000_000n;

interface Span {
  startNs: bigint;
  endNs: bigint;
}

/** Sorted, overlapping windows (a recursive method's inner calls, when each call is a window) made one. */
function merged(list: Span[]): Span[] {
  const by = [...list].sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
  const out: Span[] = [];
  for (const w of by) {
    const last = out[out.length - 1];
    if (last && w.startNs <= last.endNs) {
      if (w.endNs > last.endNs) last.endNs = w.endNs;
    } else out.push({ ...w });
  }
  return out;
}

export class SlowWindows implements SampleFilter {
  /** per thread (its id in the JVM's pid namespace), in end order: a thread's outermost calls do not overlap */
  private readonly byTid = new Map<number, Span[]>();
  private kept = 0;
  private lastSeq = 0;
  private horizon = 0n;
  private final = false;
  /** windows seen, missed (overwritten in the agent), without a thread id, dropped (over WINDOWS_KEPT); samples kept, outside every window, let go */
  readonly n = { windows: 0, missed: 0, noTid: 0, dropped: 0, kept: 0, outside: 0, lost: 0, partial: 0 };

  add(snap: JavaSnapshot): void {
    for (const w of [...(snap.windows ?? [])].sort((a, b) => a.seq - b.seq)) {
      if (w.seq <= this.lastSeq) continue;
      this.n.missed += w.seq - this.lastSeq - 1;
      this.lastSeq = w.seq;
      this.addWindow(w.tid, w.startNs, w.endNs);
    }
    if (snap.horizonNs !== undefined && snap.horizonNs > this.horizon) this.horizon = snap.horizonNs;
    if (this.kept > WINDOWS_KEPT / 2) this.prune(this.horizon - PRUNE_BEFORE_NS);
  }

  /** One slow call's window (tid 0: its thread is unknown); a thread's windows come in end order, or end() sorts them. */
  addWindow(tid: number, startNs: bigint, endNs: bigint): void {
    this.n.windows++;
    if (!tid) this.n.noTid++;
    else if (this.kept >= WINDOWS_KEPT) this.n.dropped++;
    else {
      const list = this.byTid.get(tid) ?? [];
      if (!list.length) this.byTid.set(tid, list);
      list.push({ startNs, endNs });
      this.kept++;
    }
  }

  /**
   * Every window so far, from a source that reads them all each time (JFR's dumps), and a horizon
   * it vouches for; a window longer than the horizon's lag may have had its first samples decided
   * before it was known: counted (partial) when given at the end.
   */
  resetTo(spans: { tid: number; startNs: bigint; endNs: bigint }[], horizonNs?: bigint, lagNs = 0n): void {
    this.byTid.clear();
    this.kept = 0;
    Object.assign(this.n, { windows: 0, noTid: 0, dropped: 0, partial: 0 });
    for (const w of spans) {
      this.addWindow(w.tid, w.startNs, w.endNs);
      if (lagNs && w.endNs - w.startNs > lagNs) this.n.partial++;
    }
    if (horizonNs !== undefined && horizonNs > this.horizon) this.horizon = horizonNs;
  }

  private prune(beforeNs: bigint): void {
    for (const [tid, list] of this.byTid) {
      const k = list.findIndex((w) => w.endNs >= beforeNs);
      const gone = k < 0 ? list.length : k;
      list.splice(0, gone);
      this.kept -= gone;
      if (!list.length) this.byTid.delete(tid);
    }
  }

  /** The agent is stopped and its last snapshot read: every window is known. */
  end(): void {
    this.final = true;
    for (const [tid, list] of this.byTid) this.byTid.set(tid, merged(list));
  }

  horizonNs(): bigint | undefined {
    return this.final ? undefined : this.horizon;
  }

  keep(nsTid: number, tid: number, ktimeNs: bigint): boolean {
    const inside = this.inside(nsTid || tid, ktimeNs);
    if (inside) this.n.kept++;
    else this.n.outside++;
    return inside;
  }

  /** Binary search for the first window ending at or after t. */
  private inside(tid: number, t: bigint): boolean {
    const list = this.byTid.get(tid);
    if (!list) return false;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid].endNs < t) lo = mid + 1;
      else hi = mid;
    }
    return lo < list.length && list[lo].startNs <= t;
  }

  lost(n: number): void {
    this.n.lost += n;
  }
}
