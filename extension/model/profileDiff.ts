// The differential flame graph's model: the new profile gives the widths; each call path (node
// of the new profile's tree) carries how its self share changed from the base profile (new
// self% − base self%, in percentage points), and a table ranks the functions that moved most.
// Shares, not sample counts, are compared, so profiles of different lengths or frequencies
// compare fairly. Frames match by name alone across the two profiles (a Java method may be
// interpreted in one and JIT-compiled in the other). Pure: the view and the CLI share it.
import type { FlameFrame, FlameProfile, FlameStack } from './flamegraph/profileData';
import { buildTree, frameTotals, type FlameTree } from './flamegraph/model';

export interface Mover {
  name: string;
  /** shares in percent of each profile's samples */
  baseSelf: number;
  newSelf: number;
  baseTotal: number;
  newTotal: number;
  /** newSelf − baseSelf, percentage points */
  selfDelta: number;
  totalDelta: number;
}

export interface ProfileDiff {
  /** the new profile over a frame table shared with the base: what the graph draws */
  profile: FlameProfile;
  tree: FlameTree;
  baseSamples: number;
  newSamples: number;
  /** per node of tree: self and total share (percent) of the same call path in the base */
  baseSelf: Float64Array;
  baseTotal: Float64Array;
  /** per node: new self share − base self share, percentage points */
  selfDelta: Float64Array;
  /** the largest |selfDelta| of any node (the colour scale's end) */
  maxDelta: number;
  /** every function in either profile, biggest |self change| first */
  movers: Mover[];
  /** call paths only the base has, with their base self share (invisible in the graph) */
  goneSelf: number;
}

/** Re-indexes a profile's stacks over a shared frame list, matching frames by name. */
function remap(p: FlameProfile, frames: FlameFrame[], byName: Map<string, number>): FlameStack[] {
  const ids = p.frames.map((f) => {
    let id = byName.get(f.name);
    if (id === undefined) {
      // The first profile remapped (the new one) gives kind and source line.
      id = frames.push({ ...f }) - 1;
      byName.set(f.name, id);
    }
    return id;
  });
  return p.stacks.map((s) => ({ frames: s.frames.map((i) => ids[i]), weight: s.weight }));
}

export function diffProfiles(base: FlameProfile, next: FlameProfile): ProfileDiff {
  const frames: FlameFrame[] = [];
  const byName = new Map<string, number>();
  const nextStacks = remap(next, frames, byName);
  const baseStacks = remap(base, frames, byName);
  const profile: FlameProfile = { name: next.name, frames, stacks: nextStacks, total: next.total, lost: next.lost, frequency: next.frequency };
  const tree = buildTree(profile, nextStacks);
  const baseTree = buildTree({ frames }, baseStacks);

  // Base node of each new node: same frame under the base node of the parent.
  const baseChild = new Map<number, number>();
  const key = (parent: number, frame: number) => parent * frames.length + frame;
  for (let n = 1; n < baseTree.size; n++) baseChild.set(key(baseTree.parent[n], baseTree.frame[n]), n);
  const match = new Int32Array(tree.size).fill(-1);
  match[0] = 0;
  const bt = base.total > 0 ? 100 / base.total : 0;
  const nt = next.total > 0 ? 100 / next.total : 0;
  const baseSelf = new Float64Array(tree.size);
  const baseTotal = new Float64Array(tree.size);
  const selfDelta = new Float64Array(tree.size);
  let maxDelta = 0;
  let matchedBaseSelf = 0;
  for (let n = 0; n < tree.size; n++) {
    if (n > 0) {
      const bp = match[tree.parent[n]];
      match[n] = bp < 0 ? -1 : (baseChild.get(key(bp, tree.frame[n])) ?? -1);
    }
    const b = match[n];
    if (b >= 0) {
      baseSelf[n] = baseTree.self[b] * bt;
      baseTotal[n] = baseTree.total[b] * bt;
      matchedBaseSelf += baseSelf[n];
    }
    selfDelta[n] = tree.self[n] * nt - baseSelf[n];
    if (Math.abs(selfDelta[n]) > maxDelta) maxDelta = Math.abs(selfDelta[n]);
  }

  const nb = frameTotals({ ...profile, stacks: baseStacks, total: base.total });
  const nn = frameTotals(profile);
  const movers: Mover[] = [];
  frames.forEach((f, i) => {
    const m: Mover = { name: f.name, baseSelf: nb.self[i] * bt, newSelf: nn.self[i] * nt, baseTotal: nb.total[i] * bt, newTotal: nn.total[i] * nt, selfDelta: 0, totalDelta: 0 };
    m.selfDelta = m.newSelf - m.baseSelf;
    m.totalDelta = m.newTotal - m.baseTotal;
    if (m.baseTotal || m.newTotal) movers.push(m);
  });
  movers.sort((a, b) => Math.abs(b.selfDelta) - Math.abs(a.selfDelta) || Math.abs(b.totalDelta) - Math.abs(a.totalDelta) || a.name.localeCompare(b.name));
  return {
    profile,
    tree,
    baseSamples: base.total,
    newSamples: next.total,
    baseSelf,
    baseTotal,
    selfDelta,
    maxDelta,
    movers,
    goneSelf: Math.max(0, (base.total > 0 ? 100 : 0) - matchedBaseSelf),
  };
}

const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}`;

/** The movers table as text (CLI), the `top` biggest self changes. */
export function formatMovers(d: ProfileDiff, baseName: string, newName: string, top = 20): string {
  const rows = d.movers
    .slice(0, top)
    .map((m) => `${signed(m.selfDelta).padStart(7)}  ${m.baseSelf.toFixed(1).padStart(5)}% → ${m.newSelf.toFixed(1).padStart(5)}%  ${signed(m.totalDelta).padStart(7)}  ${m.baseTotal.toFixed(1).padStart(5)}% → ${m.newTotal.toFixed(1).padStart(5)}%  ${m.name}`);
  return [
    `base: ${baseName} (${d.baseSamples.toLocaleString('en-US')} samples)`,
    `new:  ${newName} (${d.newSamples.toLocaleString('en-US')} samples)`,
    '',
    ' self Δ   self% base → new    total Δ  total% base → new  function   (Δ in percentage points)',
    ...rows,
  ].join('\n');
}

/** One side of a comparison as the user knows it: its title and, for a session, when it started (ISO 8601). */
export interface DiffSide {
  label: string;
  startedAt?: string;
}

/**
 * The names a diff shows for its two sides. Two profiles of the same program carry the same
 * title ("CPU: pid 42 (java)"), and two files may share a name: equal names are told apart by
 * when each started, or else marked base and new, so the header and the legend never read
 * "X → X" and the user can tell which side is which.
 */
export function diffSideLabels(base: DiffSide, next: DiffSide, time = (iso: string) => new Date(iso).toLocaleTimeString()): [string, string] {
  if (base.label !== next.label) return [base.label, next.label];
  const [a, b] = [base.startedAt && time(base.startedAt), next.startedAt && time(next.startedAt)];
  if (a && b && a !== b) return [`${base.label} ${a}`, `${next.label} ${b}`];
  return [`${base.label} (base)`, `${next.label} (new)`];
}
