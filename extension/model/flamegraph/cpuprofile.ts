// Chrome DevTools / Node `.cpuprofile` import: a node tree (id, callFrame, children) plus the
// sampled node ids in time order. Samples keep their order (consecutive equal stacks merged),
// so the time-ordered view shows the recording as it ran; without samples, hitCount is used.
// Pure: no DOM.
import { FrameTable, type FlameProfile, type FlameStack } from './profileData';
import { ImportError } from './formats';
import { ReadBudget } from '../readLimits';

interface CpuNode {
  id: number;
  callFrame: { functionName?: string; url?: string; lineNumber?: number };
  hitCount?: number;
  children?: number[];
}

/** True when parsed JSON looks like a .cpuprofile. */
export function isCpuProfile(json: unknown): boolean {
  const j = json as { nodes?: unknown };
  return typeof json === 'object' && json !== null && Array.isArray(j.nodes) && (j.nodes as CpuNode[]).every((n) => typeof n?.id === 'number' && typeof n.callFrame === 'object');
}

/** Throws unless every node's fields the reader uses have their types. */
function checkNodes(nodes: CpuNode[], samples: unknown): void {
  for (const n of nodes) {
    const cf = n.callFrame as Record<string, unknown> | null;
    const ok =
      cf !== null &&
      (cf.functionName === undefined || typeof cf.functionName === 'string') &&
      (cf.url === undefined || typeof cf.url === 'string') &&
      (cf.lineNumber === undefined || typeof cf.lineNumber === 'number') &&
      (n.hitCount === undefined || typeof n.hitCount === 'number') &&
      (n.children === undefined || (Array.isArray(n.children) && n.children.every((c) => typeof c === 'number')));
    if (!ok) throw new ImportError(`node ${n.id} of the .cpuprofile has a field of the wrong type`);
  }
  if (samples !== undefined && !(Array.isArray(samples) && samples.every((s) => typeof s === 'number'))) throw new ImportError('the .cpuprofile\'s "samples" is not an array of node ids');
}

export function fromCpuProfile(json: unknown, name = 'cpuprofile', budget = new ReadBudget(name)): FlameProfile {
  if (!isCpuProfile(json)) throw new ImportError('not a .cpuprofile: it needs a "nodes" array of {id, callFrame}');
  const { nodes, samples } = json as { nodes: CpuNode[]; samples?: number[] };
  checkNodes(nodes, samples);
  const byId = new Map<number, CpuNode>(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const table = new FrameTable(budget);
  const frameOf = new Map<number, number>();
  const stackOf = new Map<number, number[]>();
  const frameAt = (at: number, n: CpuNode, fn: string): number => {
    let f = frameOf.get(at);
    if (f === undefined) {
      const file = n.callFrame.url?.replace(/^file:\/\//, '') || undefined;
      const line = n.callFrame.lineNumber !== undefined && n.callFrame.lineNumber >= 0 ? n.callFrame.lineNumber + 1 : undefined;
      f = table.intern(fn, 'jit', file ? file.split('/').pop() : undefined, file, line, 1);
      frameOf.set(at, f);
    }
    return f;
  };
  // A sampled node's stack is its nearest sampled ancestor's plus the nodes between: one walk
  // per node, not per sample of every descendant.
  const stack = (id: number): number[] => {
    const known = stackOf.get(id);
    if (known) return known;
    const own: number[] = [];
    let base: number[] = [];
    const seen = new Set<number>();
    for (let at: number | undefined = id; at !== undefined && !seen.has(at); at = parent.get(at)) {
      const above = at === id ? undefined : stackOf.get(at);
      if (above) {
        base = above;
        break;
      }
      seen.add(at);
      budget.depth(own.length);
      const n = byId.get(at);
      if (!n) throw new ImportError(`sample refers to node ${at}, which the profile does not define`);
      const fn = n.callFrame.functionName || '(anonymous)';
      // The synthetic root holds every stack; the flame graph has its own.
      if (fn === '(root)' && !parent.has(at)) continue;
      own.push(frameAt(at, n, fn));
    }
    budget.depth(base.length + own.length);
    const chain = base.concat(own.reverse());
    stackOf.set(id, chain);
    return chain;
  };
  const stacks: FlameStack[] = [];
  const push = (id: number, weight: number) => {
    const frames = stack(id);
    budget.stack(frames.length);
    stacks.push({ frames, weight });
  };
  if (Array.isArray(samples) && samples.length) {
    let last = -1;
    for (const id of samples) {
      if (id === last && stacks.length) stacks[stacks.length - 1].weight++;
      else push(id, 1);
      last = id;
    }
  } else {
    for (const n of nodes) if (n.hitCount && n.hitCount > 0 && n.hitCount <= Number.MAX_SAFE_INTEGER) push(n.id, n.hitCount);
  }
  const total = stacks.reduce((s, x) => s + x.weight, 0);
  return { name, frames: table.finish(), stacks, total };
}
