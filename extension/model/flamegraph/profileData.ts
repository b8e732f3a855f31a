// The one profile shape every importer produces and the flame-graph model consumes: distinct
// frames plus weighted stacks of frame indices, root first. Pure (no DOM, no node).
import type { FlameFrame, FrameKind, JavaFrameType } from '../../protocol/frames';
import { stackValue, THREAD_STATE_LABEL, type ProfileResult, type ProfileUnit, type ThreadState } from '../../protocol/profile';
import type { ReadBudget } from '../readLimits';
import { GROUP_LABEL, isHotspotThreadName, threadGroup } from '../jvmThreads';

// FlameFrame is one of the frame family of protocol/frames.ts.
export type { FlameFrame, FrameKind, JavaFrameType };

export interface FlameStack {
  /** indices into frames, root first */
  frames: number[];
  weight: number;
}

export interface FlameProfile {
  name: string;
  frames: FlameFrame[];
  stacks: FlameStack[];
  /** sum of stack weights */
  total: number;
  /** samples lost in the kernel, when known */
  lost?: number;
  frequency?: number;
  /** what weights measure (absent: samples) */
  unit?: ProfileUnit;
  /**
   * Off-CPU and wall profiles of a JVM: the frames of its service-thread groups ("[GC threads]",
   * "[Compiler threads]"...), whose mostly idle waits the view hides until asked to show them.
   */
  serviceFrames?: number[];
}

function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? p : p.slice(i + 1);
}

/** Interns frames by (name, kind, module) and tallies the weight of each source line. */
export class FrameTable {
  readonly frames: FlameFrame[] = [];
  private readonly index = new Map<string, number>();
  /** per frame, the weight of each "line\0file" (created at its first line: most frames have none) */
  private readonly lineWeights: (Map<string, number> | undefined)[] = [];

  /** With a budget (reading a file), the distinct frames are counted against its limit. */
  constructor(private readonly budget?: ReadBudget) {}

  intern(name: string, kind: FrameKind, module?: string, file?: string, line?: number, weight = 0, javaType?: JavaFrameType): number {
    const key = `${kind}\u0000${module ?? ''}\u0000${name}\u0000${javaType ?? ''}`;
    let id = this.index.get(key);
    if (id === undefined) {
      this.budget?.frame();
      id = this.frames.length;
      this.index.set(key, id);
      const f: FlameFrame = { name, kind };
      if (module) f.module = module;
      if (javaType) f.javaType = javaType;
      this.frames.push(f);
      this.lineWeights.push(undefined);
    }
    if (file && line) {
      const lk = `${line}\u0000${file}`;
      let m = this.lineWeights[id];
      if (!m) this.lineWeights[id] = m = new Map();
      m.set(lk, (m.get(lk) ?? 0) + weight);
    }
    return id;
  }

  /** Sets each frame's file:line to its most sampled line. */
  finish(): FlameFrame[] {
    this.frames.forEach((f, i) => {
      let best = -1;
      for (const [lk, w] of this.lineWeights[i] ?? []) {
        if (w > best) {
          best = w;
          const sep = lk.indexOf('\u0000');
          f.line = Number(lk.slice(0, sep));
          f.file = lk.slice(sep + 1);
        }
      }
    });
    return this.frames;
  }
}

export interface FromResultOptions {
  /** put a "comm [pid]" frame at the root of each stack (default: when several processes were sampled) */
  groupByProcess?: boolean;
  name?: string;
  /** reading a file: distinct frames and time are counted (stacks were counted by the reader) */
  budget?: ReadBudget;
  /** off-CPU and wall profiles: a thread-group frame ("[Application threads]", "[GC threads]"...) under each JVM's stacks (default: true) */
  threadGroups?: boolean;
}

/** The root-side frame of a JVM thread group's stacks, e.g. "[GC threads]". */
export function groupFrameName(group: keyof typeof GROUP_LABEL): string {
  return `[${GROUP_LABEL[group]}]`;
}

/** The processes that are JVMs: a Java frame, libjvm.so, or a thread only HotSpot names so. */
export function jvmPids(r: Pick<ProfileResult, 'stacks'>): Set<number> {
  const out = new Set<number>();
  for (const s of r.stacks) {
    if (out.has(s.pid)) continue;
    if (isHotspotThreadName(s.comm) || s.frames.some((f) => f.kind === 'jit' || f.kind === 'interpreted' || (f.module ? basename(f.module) === 'libjvm.so' : false))) out.add(s.pid);
  }
  return out;
}

/** The root frame of a thread state's stacks in off-CPU and wall profiles, e.g. "[off-CPU: sleeping]". */
export function stateFrameName(state: ThreadState): string {
  return state === 'oncpu' ? '[on CPU]' : `[off-CPU: ${THREAD_STATE_LABEL[state]}]`;
}

/** The thread state a root frame name stands for (stateFrameName's inverse), if it is one. */
export function stateOfFrameName(name: string): ThreadState | undefined {
  if (name === '[on CPU]') return 'oncpu';
  for (const [k, v] of Object.entries(THREAD_STATE_LABEL)) if (name === `[off-CPU: ${v}]`) return k as ThreadState;
  return undefined;
}

/** The profiler's result document (CLI --json) as a flame profile. */
export function fromProfileResult(r: ProfileResult, opts: FromResultOptions = {}): FlameProfile {
  const table = new FrameTable(opts.budget);
  const group = opts.groupByProcess ?? new Set(r.stacks.map((s) => s.pid)).size > 1;
  // a JVM's wall clock is mostly its own service threads idling in futexes: grouping by thread
  // group puts the application's threads in one box and lets the view hide the rest
  const jvms = opts.threadGroups === false || !r.stacks.some((s) => s.state) ? new Set<number>() : jvmPids(r);
  const service = new Set<number>();
  const stacks: FlameStack[] = [];
  let total = 0;
  for (const s of r.stacks) {
    const ids: number[] = [];
    opts.budget?.work(s.frames.length + 1);
    const w = stackValue(s);
    // off-CPU and wall profiles: the state is the root, so each state's total is one box
    if (s.state) ids.push(table.intern(stateFrameName(s.state), 'native'));
    if (group) ids.push(table.intern(`${s.comm} [${s.pid}]`, 'native'));
    if (s.state && jvms.has(s.pid)) {
      const g = threadGroup(s.comm);
      const id = table.intern(groupFrameName(g), 'native');
      if (g !== 'application') service.add(id);
      ids.push(id);
    }
    for (let i = s.frames.length - 1; i >= 0; i--) {
      const f = s.frames[i];
      const module = f.module && f.module !== '[unknown]' ? f.module : undefined;
      const name = f.function ?? (module ? `[${basename(module)}]` : '[unknown]');
      ids.push(table.intern(name, f.kind, module, f.file ?? undefined, f.line ?? undefined, w, f.javaType));
    }
    stacks.push({ frames: ids, weight: w });
    total += w;
  }
  return { name: opts.name ?? 'profile', frames: table.finish(), stacks, total, lost: r.lost, frequency: r.frequency, ...(r.unit && r.unit !== 'samples' ? { unit: r.unit } : {}), ...(service.size ? { serviceFrames: [...service] } : {}) };
}
