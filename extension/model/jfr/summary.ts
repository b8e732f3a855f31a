// Event counts and bytes per event type, as `jfr summary` prints them. Pure: no I/O.
import type { EventVisitor } from './chunk';
import type { JfrClass } from './metadata';

export interface JfrTypeCount {
  type: string;
  count: number;
  bytes: number;
}

export class JfrSummaryBuilder implements EventVisitor {
  private readonly counts = new Map<string, JfrTypeCount>();
  /** event types whose events carry a stack trace (what a profile can be made of) */
  readonly stackTypes = new Set<string>();

  /** events come in runs of one type (a GC's promotion events, a flush of samples): the last entry is kept at hand */
  private last: JfrTypeCount | undefined;

  count(name: string, size: number): void {
    let c = this.last?.type === name ? this.last : this.counts.get(name);
    if (!c) this.counts.set(name, (c = { type: name, count: 0, bytes: 0 }));
    c.count++;
    c.bytes += size;
    this.last = c;
  }

  private readonly looked = new WeakSet<JfrClass>();

  wants(t: JfrClass): boolean {
    if (this.looked.has(t)) return false;
    this.looked.add(t);
    if (t.fields.some((f) => f.name === 'stackTrace')) this.stackTypes.add(t.name);
    return false;
  }

  event(): void {}

  /** Most events first, then by name. */
  types(): JfrTypeCount[] {
    return [...this.counts.values()].sort((a, b) => b.count - a.count || a.type.localeCompare(b.type));
  }
}

/** Forwards every event to each visitor (one pass over the file feeds several documents). */
export function allOf(...vs: EventVisitor[]): EventVisitor {
  return {
    count: (n, s) => vs.forEach((v) => v.count?.(n, s)),
    wants: (t) => vs.some((v) => v.wants(t)),
    event: (t, value, c) => vs.forEach((v) => v.wants(t) && v.event(t, value, c)),
  };
}
