// Chrome DevTools / Node `.cpuprofile` import: a node tree (id, callFrame, children) plus the
// sampled node ids in time order. Samples keep their order (consecutive equal stacks merged),
// so the time-ordered view shows the recording as it ran; without samples, hitCount is used.
// Pure: no DOM.
import { FrameTable, type FlameProfile, type FlameStack } from './profileData';
import { ImportError } from './formats';

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

export function fromCpuProfile(json: unknown, name = 'cpuprofile'): FlameProfile {
  if (!isCpuProfile(json)) throw new ImportError('not a .cpuprofile: it needs a "nodes" array of {id, callFrame}');
  const { nodes, samples } = json as { nodes: CpuNode[]; samples?: number[] };
  const byId = new Map<number, CpuNode>(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const table = new FrameTable();
  const frameOf = new Map<number, number>();
  const stackOf = new Map<number, number[]>();
  const stack = (id: number): number[] => {
    const known = stackOf.get(id);
    if (known) return known;
    const chain: number[] = [];
    const seen = new Set<number>();
    for (let at: number | undefined = id; at !== undefined && !seen.has(at); at = parent.get(at)) {
      seen.add(at);
      const n = byId.get(at);
      if (!n) throw new ImportError(`sample refers to node ${at}, which the profile does not define`);
      const fn = n.callFrame.functionName || '(anonymous)';
      // The synthetic root holds every stack; the flame graph has its own.
      if (fn === '(root)' && !parent.has(at)) continue;
      let f = frameOf.get(at);
      if (f === undefined) {
        const file = n.callFrame.url?.replace(/^file:\/\//, '') || undefined;
        const line = n.callFrame.lineNumber !== undefined && n.callFrame.lineNumber >= 0 ? n.callFrame.lineNumber + 1 : undefined;
        f = table.intern(fn, 'jit', file ? file.split('/').pop() : undefined, file, line, 1);
        frameOf.set(at, f);
      }
      chain.push(f);
    }
    chain.reverse();
    stackOf.set(id, chain);
    return chain;
  };
  const stacks: FlameStack[] = [];
  if (Array.isArray(samples) && samples.length) {
    let last = -1;
    for (const id of samples) {
      if (id === last && stacks.length) stacks[stacks.length - 1].weight++;
      else stacks.push({ frames: stack(id), weight: 1 });
      last = id;
    }
  } else {
    for (const n of nodes) if (n.hitCount && n.hitCount > 0) stacks.push({ frames: stack(n.id), weight: n.hitCount });
  }
  const total = stacks.reduce((s, x) => s + x.weight, 0);
  return { name, frames: table.finish(), stacks, total };
}
