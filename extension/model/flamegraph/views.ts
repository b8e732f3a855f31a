// What the flame graph shows beside the plain merged tree: the order of boxes (by name like
// flamegraph.pl, left-heavy, or time order), focus on a function (every stack through it, cut
// at its outermost call) and exclusion of one (stacks through it dropped, as pprof's -ignore),
// the top-functions table, and keyboard movement between boxes. Pure: no DOM.
import { buildTree, frameTotals, ROOT, type FlameTree } from './model';
import type { FlameProfile, FlameStack } from './profileData';

export type Order = 'name' | 'left-heavy' | 'time';

export interface ViewFilter {
  order: Order;
  /** frame id everything is rooted at, or -1 */
  focusFrame: number;
  /** frame ids whose stacks are dropped */
  excluded: number[];
}

export const NO_FILTER: ViewFilter = { order: 'name', focusFrame: -1, excluded: [] };

/**
 * The filter the view applies: the user's, plus a JVM's service-thread groups (GC, compiler,
 * VM and other JVM threads) unless the user asked to see them.
 */
export function withServiceHidden(profile: Pick<FlameProfile, 'serviceFrames'>, f: ViewFilter, showService: boolean): ViewFilter {
  const hide = showService ? [] : (profile.serviceFrames ?? []);
  return hide.length ? { ...f, excluded: [...f.excluded, ...hide] } : f;
}

/** The weight of the stacks in a JVM's service-thread groups (what hiding them takes away). */
export function serviceWeight(profile: Pick<FlameProfile, 'serviceFrames' | 'stacks'>): number {
  const service = new Set(profile.serviceFrames ?? []);
  if (!service.size) return 0;
  let w = 0;
  for (const s of profile.stacks) if (s.frames.some((x) => service.has(x))) w += s.weight;
  return w;
}

/** The stacks left after focus and exclusion (the same objects when nothing filters). */
export function filterStacks(stacks: FlameStack[], f: Pick<ViewFilter, 'focusFrame' | 'excluded'>): FlameStack[] {
  if (f.focusFrame < 0 && f.excluded.length === 0) return stacks;
  const drop = new Set(f.excluded);
  const out: FlameStack[] = [];
  for (const s of stacks) {
    if (drop.size && s.frames.some((x) => drop.has(x))) continue;
    if (f.focusFrame < 0) {
      out.push(s);
      continue;
    }
    const i = s.frames.indexOf(f.focusFrame);
    if (i >= 0) out.push({ frames: s.frames.slice(i), weight: s.weight });
  }
  return out;
}

/**
 * Time order: a stack merges into the previous box only when that box is the last child at
 * its depth, so boxes follow the samples left to right (a flame chart of an ordered profile).
 */
export function buildTimeTree(stacks: FlameStack[]): FlameTree {
  const frame: number[] = [-1];
  const parent: number[] = [-1];
  const depth: number[] = [0];
  const total: number[] = [0];
  const self: number[] = [0];
  const kids: number[][] = [[]];
  let maxDepth = 0;
  for (const s of stacks) {
    if (s.weight <= 0) continue;
    let node = ROOT;
    total[ROOT] += s.weight;
    for (const f of s.frames) {
      const k = kids[node];
      const last = k.length ? k[k.length - 1] : -1;
      let child = last >= 0 && frame[last] === f ? last : -1;
      if (child < 0) {
        child = frame.length;
        frame.push(f);
        parent.push(node);
        depth.push(depth[node] + 1);
        if (depth[node] + 1 > maxDepth) maxDepth = depth[node] + 1;
        total.push(0);
        self.push(0);
        kids.push([]);
        k.push(child);
      }
      total[child] += s.weight;
      node = child;
    }
    self[node] += s.weight;
  }
  const size = frame.length;
  const childStart = new Int32Array(size + 1);
  const children = new Int32Array(Math.max(0, size - 1));
  let at = 0;
  for (let n = 0; n < size; n++) {
    childStart[n] = at;
    for (const c of kids[n]) children[at++] = c;
  }
  childStart[size] = at;
  return { size, frame: Int32Array.from(frame), parent: Int32Array.from(parent), depth: Uint16Array.from(depth), total: Float64Array.from(total), self: Float64Array.from(self), childStart, children, maxDepth };
}

/** The same tree with each node's children widest first (speedscope's left-heavy). */
export function leftHeavy(tree: FlameTree): FlameTree {
  const children = tree.children.slice();
  for (let n = 0; n < tree.size; n++) {
    const a = tree.childStart[n];
    const b = tree.childStart[n + 1];
    if (b - a < 2) continue;
    const sorted = Array.from(children.subarray(a, b)).sort((x, y) => tree.total[y] - tree.total[x] || x - y);
    children.set(sorted, a);
  }
  return { ...tree, children };
}

/** The tree the view draws for a filter. */
export function viewTree(profile: FlameProfile, f: ViewFilter): FlameTree {
  const stacks = filterStacks(profile.stacks, f);
  if (f.order === 'time') return buildTimeTree(stacks);
  const t = buildTree(profile, stacks);
  return f.order === 'left-heavy' ? leftHeavy(t) : t;
}

// ---- top functions ----------------------------------------------------------------------

export interface TopRow {
  frame: number;
  name: string;
  self: number;
  total: number;
}

export type TopKey = 'self' | 'total' | 'name';

/** Every sampled function with its self and total samples, sorted (ties by name). */
export function topFunctions(profile: FlameProfile, stacks: FlameStack[], key: TopKey = 'self', descending = true): TopRow[] {
  const { self, total } = frameTotals({ ...profile, stacks });
  const rows: TopRow[] = [];
  for (let i = 0; i < profile.frames.length; i++) if (total[i] > 0) rows.push({ frame: i, name: profile.frames[i].name, self: self[i], total: total[i] });
  return sortTop(rows, key, descending);
}

export function sortTop(rows: TopRow[], key: TopKey, descending: boolean): TopRow[] {
  const dir = descending ? -1 : 1;
  const byName = (a: TopRow, b: TopRow) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.frame - b.frame);
  return [...rows].sort((a, b) => (key === 'name' ? dir * byName(a, b) : dir * (a[key] - b[key]) || byName(a, b)));
}

// ---- keyboard movement ------------------------------------------------------------------

/** Toward the root, toward the leaves (the widest child), or to the box beside at the same depth. */
export type Move = 'parent' | 'child' | 'prev' | 'next';

/**
 * The node a key moves the selection to (the same node when there is nowhere to go).
 * prev/next walk the row: past the last sibling they continue into the neighbouring subtree,
 * so the selection can cross the whole width at one depth. Nodes with no width are skipped.
 */
export function move(tree: FlameTree, node: number, m: Move): number {
  if (node < 0 || node >= tree.size) return ROOT;
  if (m === 'parent') return node === ROOT ? ROOT : tree.parent[node];
  if (m === 'child') {
    let best = -1;
    for (let c = tree.childStart[node]; c < tree.childStart[node + 1]; c++) {
      const k = tree.children[c];
      if (best < 0 || tree.total[k] > tree.total[best]) best = k;
    }
    return best < 0 ? node : best;
  }
  if (node === ROOT) return ROOT;
  const row = rowOf(tree, tree.depth[node]);
  const i = row.indexOf(node);
  const j = m === 'next' ? i + 1 : i - 1;
  return j >= 0 && j < row.length ? row[j] : node;
}

/** Nodes at one depth, left to right as drawn. */
export function rowOf(tree: FlameTree, depth: number): number[] {
  let row = [ROOT];
  for (let d = 0; d < depth; d++) {
    const next: number[] = [];
    for (const n of row) for (let c = tree.childStart[n]; c < tree.childStart[n + 1]; c++) if (tree.total[tree.children[c]] > 0) next.push(tree.children[c]);
    row = next;
  }
  return row;
}

// ---- kept zoom across rebuilt trees ---------------------------------------------------

/** The frames from the root down to a node (what identifies it across rebuilt trees). */
export function framePath(tree: FlameTree, node: number): number[] {
  const out: number[] = [];
  for (let n = node; n > ROOT; n = tree.parent[n]) out.push(tree.frame[n]);
  return out.reverse();
}

/** The node at a frame path, or the deepest ancestor of it that exists in this tree. */
export function nodeAtPath(tree: FlameTree, path: number[]): number {
  let node = ROOT;
  for (const f of path) {
    let next = -1;
    for (let c = tree.childStart[node]; c < tree.childStart[node + 1]; c++) {
      if (tree.frame[tree.children[c]] === f) {
        next = tree.children[c];
        break;
      }
    }
    if (next < 0) break;
    node = next;
  }
  return node;
}

/** Frame ids of `from` in `to`, matched by name, kind, module and Java frame type (ids differ between profiles); -1 where absent. */
export function remapFrames(from: Pick<FlameProfile, 'frames'>, to: Pick<FlameProfile, 'frames'>, ids: number[]): number[] {
  const key = (f: { name: string; kind: string; module?: string; javaType?: string }) => `${f.kind}\u0000${f.module ?? ''}\u0000${f.name}\u0000${f.javaType ?? ''}`;
  const index = new Map<string, number>();
  to.frames.forEach((f, i) => index.set(key(f), i));
  return ids.map((id) => (id >= 0 && id < from.frames.length ? (index.get(key(from.frames[id])) ?? -1) : -1));
}
