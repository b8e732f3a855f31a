// A JFR event's thread and stack trace as our frames, decoded once per chunk: stack traces, frames
// and threads are constant-pool entries that events refer to by key, and a recording repeats the
// same few thousand of them in every event. Java frames keep class.method and file:line (the file
// derived from the class, as the Java agent names it). Shared by the profile and timeline builders.
// Pure: no I/O.
import type { ProfileFrame } from '../../protocol/profile';
import type { ReadBudget } from '../readLimits';
import { PoolRef, type Chunk, type JfrObject, type JfrValue } from './chunk';

export interface JfrStack {
  /** the frames as text, to tell stacks apart */
  sig: string;
  /** leaf first */
  frames: ProfileFrame[];
}

export interface JfrThread {
  /** the OS thread id (0 where the recording has none) */
  tid: number;
  name: string;
}

/** "java/util/HashMap$Node" → "java/util/HashMap.java": where the class's source sits under a source root. */
export function sourceOfClass(internalName: string): string | null {
  const outer = internalName.replace(/\./g, '/').replace(/\$.*$/, '');
  return outer && !outer.includes('/0x') ? `${outer}.java` : null;
}

const FRAME_KIND: Record<string, Pick<ProfileFrame, 'kind' | 'javaType'>> = {
  Interpreted: { kind: 'interpreted', javaType: 'interpreted' },
  'JIT compiled': { kind: 'jit', javaType: 'compiled' },
  'C1 compiled': { kind: 'jit', javaType: 'c1' },
  'C2 compiled': { kind: 'jit', javaType: 'c2' },
  Inlined: { kind: 'jit', javaType: 'inlined' },
  Native: { kind: 'native' },
};

export class JfrStacks {
  private chunk: Chunk | undefined;
  private frameCache = new Map<string, ProfileFrame>();
  private stackCache = new Map<number, JfrStack>();
  private threadCache = new Map<number, JfrThread>();

  /** `budget` counts frames and depth against the reader's limits. */
  constructor(private readonly budget: ReadBudget) {}

  /** Pool keys are per chunk: a new chunk starts new caches. */
  enter(chunk: Chunk): void {
    if (chunk === this.chunk) return;
    this.chunk = chunk;
    this.frameCache = new Map();
    this.stackCache = new Map();
    this.threadCache = new Map();
  }

  thread(ref: JfrValue | undefined): JfrThread {
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

  stack(ref: JfrValue | undefined): JfrStack {
    const key = ref instanceof PoolRef ? ref.key : -1;
    let s = this.stackCache.get(key);
    if (s) return s;
    const c = this.chunk!;
    const raw = c.get(ref, 'frames');
    const list = Array.isArray(raw) ? raw : [];
    this.budget.depth(list.length);
    const frames = list.map((f) => this.frame(f));
    s = { sig: frames.map((f) => `${f.function}:${f.line ?? ''}:${f.javaType ?? f.kind}`).join(';'), frames };
    if (ref instanceof PoolRef) this.stackCache.set(key, s);
    return s;
  }

  private frame(f: JfrValue): ProfileFrame {
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
}
