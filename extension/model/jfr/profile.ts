// JFR events with a stack trace as our profile document (the flame graph's, pprof's and folded
// output's input): execution and CPU-time samples as CPU samples, allocation samples as bytes,
// monitor enters and parks as lock waits (µs), any other stack-carrying event counted or timed.
// Java frames keep class.method and file:line (the file derived from the class, as the Java agent
// names it: com/x/Foo$Bar → com/x/Foo.java). Pure: no I/O.
import type { ProfileEvent, ProfileFrame, ProfileResult, ProfileStack, ProfileUnit, ThreadState } from '../../protocol/profile';
import { LOCK_MODULE } from '../../protocol/javaLocks';
import { PROFILE_LIMITS, ReadBudget } from '../readLimits';
import { JFR_LIMITS, PoolRef, type Chunk, type EventVisitor, type JfrObject, type JfrValue } from './chunk';
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

/** "java/util/HashMap$Node" → "java/util/HashMap.java": where the class's source sits under a source root. */
export function sourceOfClass(internalName: string): string | null {
  const outer = internalName.replace(/\./g, '/').replace(/\$.*$/, '');
  return outer && !outer.includes('/0x') ? `${outer}.java` : null;
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

const FRAME_KIND: Record<string, Pick<ProfileFrame, 'kind' | 'javaType'>> = {
  Interpreted: { kind: 'interpreted', javaType: 'interpreted' },
  'JIT compiled': { kind: 'jit', javaType: 'compiled' },
  'C1 compiled': { kind: 'jit', javaType: 'c1' },
  'C2 compiled': { kind: 'jit', javaType: 'c2' },
  Inlined: { kind: 'jit', javaType: 'inlined' },
  Native: { kind: 'native' },
};

interface CachedStack {
  sig: string;
  frames: ProfileFrame[];
}

export class JfrProfileBuilder implements EventVisitor {
  private readonly stacks = new Map<string, ProfileStack>();
  private readonly typeOf = new WeakMap<ProfileStack, string>();
  private chunk: Chunk | undefined;
  private frameCache = new Map<string, ProfileFrame>();
  private stackCache = new Map<number, CachedStack>();
  private threadCache = new Map<number, { tid: number; name: string }>();
  private weigh: Weighing | undefined;
  private readonly budget: ReadBudget;
  private pid = 0;
  readonly seen = new Map<string, number>();

  constructor(
    readonly types: string[],
    name: string,
  ) {
    this.budget = new ReadBudget(name, { ...PROFILE_LIMITS, maxReadMs: JFR_LIMITS.maxReadMs });
  }

  wants(t: JfrClass): boolean {
    return this.types.includes(t.name) || t.name === 'jdk.JVMInformation';
  }

  event(t: JfrClass, v: JfrObject, chunk: Chunk): void {
    if (chunk !== this.chunk) this.enterChunk(chunk);
    if (t.name === 'jdk.JVMInformation') {
      if (typeof v.pid === 'number') this.pid = v.pid;
      return;
    }
    this.weigh ??= weighing(this.types, (f) => t.fields.some((x) => x.name === f));
    this.seen.set(t.name, (this.seen.get(t.name) ?? 0) + 1);
    const stack = this.stackOf(v.stackTrace);
    const thread = this.threadOf(v.sampledThread ?? v.eventThread);
    const value = this.valueOf(t, v);
    const label = this.labelOf(t, v);
    const state = this.weigh.state ?? (this.weigh.event === 'offcpu' ? (SLEEP.has(t.name) ? 'sleep' : IO.test(t.name) ? 'io' : 'lock') : undefined);
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

  private enterChunk(chunk: Chunk): void {
    this.chunk = chunk;
    this.frameCache = new Map();
    this.stackCache = new Map();
    this.threadCache = new Map();
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

  private threadOf(ref: JfrValue | undefined): { tid: number; name: string } {
    const key = ref instanceof PoolRef ? ref.key : -1;
    let th = this.threadCache.get(key);
    if (!th) {
      const c = this.chunk!;
      const tid = c.get(ref, 'osThreadId');
      th = { tid: typeof tid === 'number' ? tid : 0, name: c.str(ref, 'javaName') ?? c.str(ref, 'osName') ?? '?' };
      this.threadCache.set(key, th);
    }
    return th;
  }

  private stackOf(ref: JfrValue | undefined): CachedStack {
    const key = ref instanceof PoolRef ? ref.key : -1;
    let s = this.stackCache.get(key);
    if (s) return s;
    const c = this.chunk!;
    const raw = c.get(ref, 'frames');
    const list = Array.isArray(raw) ? raw : [];
    this.budget.depth(list.length);
    const frames = list.map((f) => this.frameOf(f));
    s = { sig: frames.map((f) => `${f.function}:${f.line ?? ''}:${f.javaType ?? f.kind}`).join(';'), frames };
    if (ref instanceof PoolRef) this.stackCache.set(key, s);
    return s;
  }

  private frameOf(f: JfrValue): ProfileFrame {
    const c = this.chunk!;
    const o = (c.resolve(f) ?? {}) as JfrObject;
    const m = o.method instanceof PoolRef ? o.method.key : -1;
    const line = typeof o.lineNumber === 'number' && o.lineNumber > 0 ? o.lineNumber : null;
    const type = o.type instanceof PoolRef ? o.type.key : -1;
    const key = `${m}:${line}:${type}`;
    let frame = this.frameCache.get(key);
    if (frame) return frame;
    const cls = c.str(o, 'method', 'type', 'name') ?? '?';
    const name = c.str(o, 'method', 'name') ?? '?';
    const how = FRAME_KIND[c.str(o, 'type', 'description') ?? ''] ?? { kind: 'jit' as const };
    frame = { address: '0x0', module: '[java]', function: `${cls.replace(/\//g, '.')}.${name}`, file: how.kind === 'native' ? null : sourceOfClass(cls), line: how.kind === 'native' ? null : line, ...how };
    if (how.javaType === 'inlined') frame.inlined = true;
    this.frameCache.set(key, frame);
    this.budget.frame();
    return frame;
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
