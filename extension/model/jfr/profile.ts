// JFR events with a stack trace as our profile document (the flame graph's, pprof's and folded
// output's input): execution and CPU-time samples as CPU samples, allocation samples as bytes,
// monitor enters and parks as lock waits (µs), any other stack-carrying event counted or timed.
// Frames and threads come from ./stacks.ts. Pure: no I/O.
import type { ProfileEvent, ProfileFrame, ProfileResult, ProfileStack, ProfileUnit, ThreadState } from '../../protocol/profile';
import { LOCK_MODULE } from '../../protocol/javaLocks';
import { PROFILE_LIMITS, ReadBudget } from '../readLimits';
import { JFR_LIMITS, type Chunk, type EventVisitor, type JfrObject } from './chunk';
import { JfrStacks } from './stacks';
import type { JfrClass } from './metadata';

/**
 * Event types sampled on CPU, the better first: JDK 25's CPU-time samples (JEP 509: each thread's
 * CPU time, where enabled) and HotSpot's execution samples (running Java threads on a wall-clock
 * period). A profile of both is one of them: the first the recording has, never their sum.
 */
export const CPU_EVENTS = ['jdk.CPUTimeSample', 'jdk.ExecutionSample'];
export const ALLOC_EVENTS = ['jdk.ObjectAllocationSample'];
export const LOCK_EVENTS = ['jdk.JavaMonitorEnter', 'jdk.ThreadPark'];
/** Module of the leaf frame naming what an allocation sample allocated. */
export const ALLOC_MODULE = '[alloc]';

const SLEEP = new Set(['jdk.ThreadSleep', 'jdk.JavaMonitorWait']);
const IO = /^jdk\.(Socket|File)(Read|Write|Force)$/;

/** The thread state a timed event of this type stands for: sleeping, I/O, else a lock wait. */
export function waitStateOf(type: string): 'sleep' | 'io' | 'lock' {
  return SLEEP.has(type) ? 'sleep' : IO.test(type) ? 'io' : 'lock';
}

/** How the events of one profile are weighed. */
interface Weighing {
  unit: ProfileUnit;
  event: ProfileEvent;
  state?: ThreadState;
}

function weighing(types: string[], has: (field: string) => boolean): Weighing {
  if (types.every((t) => CPU_EVENTS.includes(t))) return { unit: 'samples', event: 'cpu' };
  if (types.every((t) => ALLOC_EVENTS.includes(t))) return { unit: 'bytes', event: 'cpu' };
  if (types.every((t) => LOCK_EVENTS.includes(t))) return { unit: 'us', event: 'lock', state: 'lock' };
  if (has('duration')) return { unit: 'us', event: 'offcpu' };
  return { unit: 'samples', event: 'cpu' };
}

const ARRAY_OF: Record<string, string> = { B: 'byte', C: 'char', D: 'double', F: 'float', I: 'int', J: 'long', S: 'short', Z: 'boolean' };

/** A class as Java source names it: "[B" → "byte[]", "[[Ljava/lang/String;" → "java.lang.String[][]". */
export function javaClassName(name: string): string {
  let dims = 0;
  while (name[dims] === '[') dims++;
  let base = name.slice(dims);
  if (dims) base = base.startsWith('L') && base.endsWith(';') ? base.slice(1, -1) : (ARRAY_OF[base] ?? base);
  return base.replace(/\//g, '.') + '[]'.repeat(dims);
}

export class JfrProfileBuilder implements EventVisitor {
  private readonly stacks = new Map<string, ProfileStack>();
  private readonly typeOf = new WeakMap<ProfileStack, string>();
  private chunk: Chunk | undefined;
  private readonly frames: JfrStacks;
  private weigh: Weighing | undefined;
  private readonly budget: ReadBudget;
  private pid = 0;
  readonly seen = new Map<string, number>();

  constructor(
    readonly types: string[],
    name: string,
  ) {
    this.budget = new ReadBudget(name, { ...PROFILE_LIMITS, maxReadMs: JFR_LIMITS.maxReadMs });
    this.frames = new JfrStacks(this.budget);
  }

  wants(t: JfrClass): boolean {
    return this.types.includes(t.name) || t.name === 'jdk.JVMInformation';
  }

  event(t: JfrClass, v: JfrObject, chunk: Chunk): void {
    this.chunk = chunk;
    this.frames.enter(chunk);
    if (t.name === 'jdk.JVMInformation') {
      if (typeof v.pid === 'number') this.pid = v.pid;
      return;
    }
    this.weigh ??= weighing(this.types, (f) => t.fields.some((x) => x.name === f));
    this.seen.set(t.name, (this.seen.get(t.name) ?? 0) + 1);
    const stack = this.frames.stack(v.stackTrace);
    const thread = this.frames.thread(v.sampledThread ?? v.eventThread);
    const value = this.valueOf(t, v);
    const label = this.labelOf(t, v);
    const state = this.weigh.state ?? (this.weigh.event === 'offcpu' ? waitStateOf(t.name) : undefined);
    const key = `${t.name}\0${thread.tid}\0${label?.function ?? ''}\0${stack.sig}`;
    let s = this.stacks.get(key);
    if (!s) {
      const frames = label ? [label, ...stack.frames] : stack.frames;
      this.budget.stack(frames.length);
      s = { count: 0, value: 0, pid: 0, tid: thread.tid, comm: thread.name, frames, ...(state ? { state } : {}) };
      this.stacks.set(key, s);
      this.typeOf.set(s, t.name);
    }
    s.count++;
    s.value! += value;
  }

  private valueOf(t: JfrClass, v: JfrObject): number {
    const w = this.weigh!;
    if (w.unit === 'samples') return 1;
    if (w.unit === 'bytes') return typeof v.weight === 'number' ? v.weight : typeof v.allocationSize === 'number' ? v.allocationSize : 0;
    return typeof v.duration === 'number' ? this.chunk!.durationNanos(v.duration) / 1000 : 0;
  }

  /** The leaf frame that says what was allocated or waited for. */
  private labelOf(t: JfrClass, v: JfrObject): ProfileFrame | undefined {
    const c = this.chunk!;
    const cls = (f: string) => javaClassName(c.str(v, f, 'name') ?? '?');
    const frame = (module: string, fn: string): ProfileFrame => ({ address: '0x0', module, function: fn, file: null, line: null, kind: 'native' });
    if (t.name === 'jdk.JavaMonitorEnter') return frame(LOCK_MODULE, `[lock ${cls('monitorClass')}]`);
    if (t.name === 'jdk.ThreadPark') return frame(LOCK_MODULE, v.parkedClass === null ? '[park (no blocker)]' : `[park ${cls('parkedClass')}]`);
    if (this.weigh!.unit === 'bytes' && 'objectClass' in v) return frame(ALLOC_MODULE, `[${cls('objectClass')}]`);
    return undefined;
  }

  /** The event types the profile is made of: CPU samples are one type (CPU_EVENTS), others all asked. */
  get used(): string[] {
    if (!this.types.every((t) => CPU_EVENTS.includes(t))) return this.types;
    const first = CPU_EVENTS.find((t) => this.types.includes(t) && (this.seen.get(t) ?? 0) > 0);
    return first ? [first] : [];
  }

  /** The profile document: stacks heaviest first. */
  result(): ProfileResult {
    const w = this.weigh ?? weighing(this.types, () => false);
    const used = new Set(this.used);
    const stacks = [...this.stacks.values()].filter((s) => used.has(this.typeOf.get(s)!)).sort((a, b) => b.value! - a.value!);
    for (const s of stacks) s.pid = this.pid;
    const states: Partial<Record<ThreadState, number>> = {};
    for (const s of stacks) if (s.state) states[s.state] = (states[s.state] ?? 0) + s.value!;
    return { tracer: 'profile', unit: w.unit, event: w.event, ...(Object.keys(states).length ? { states } : {}), frequency: 0, samples: this.events, lost: 0, stacks };
  }

  /** Events that went into the profile. */
  get events(): number {
    return this.used.reduce((a, t) => a + (this.seen.get(t) ?? 0), 0);
  }
}
