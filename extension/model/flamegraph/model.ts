// The flame-graph model: a call tree built once from the profile's stacks (flat typed arrays,
// children sorted by name), a layout that places only boxes at least minWidth pixels wide
// (so its cost follows what is visible, not the profile's size), search and the sandwich
// view. Pure: no DOM; the renderer only draws what layout() returns.
import type { FlameProfile, FlameStack } from './profileData';

export const ROOT = 0;

export interface FlameTree {
  /** number of nodes; node 0 is the synthetic root "all" (frame -1) */
  size: number;
  frame: Int32Array;
  parent: Int32Array;
  depth: Uint16Array;
  total: Float64Array;
  self: Float64Array;
  /** children of node n: children[childStart[n] .. childStart[n + 1]) */
  childStart: Int32Array;
  children: Int32Array;
  maxDepth: number;
}

/**
 * (parent, frame) → child, open addressing over typed arrays: several times faster than a Map
 * with millions of entries, which a 100k-sample profile with deep unique stacks produces.
 */
class ChildIndex {
  private keysP: Int32Array;
  private keysF: Int32Array;
  private vals: Int32Array;
  private mask: number;
  private used = 0;
  constructor(capacity = 1 << 16) {
    this.keysP = new Int32Array(capacity).fill(-1);
    this.keysF = new Int32Array(capacity);
    this.vals = new Int32Array(capacity);
    this.mask = capacity - 1;
  }
  private slot(p: number, f: number): number {
    let h = (Math.imul(p, 0x9e3779b1) ^ Math.imul(f + 1, 0x85ebca77)) >>> 0;
    h ^= h >>> 15;
    let i = h & this.mask;
    while (this.keysP[i] !== -1 && (this.keysP[i] !== p || this.keysF[i] !== f)) i = (i + 1) & this.mask;
    return i;
  }
  get(p: number, f: number): number {
    const i = this.slot(p, f);
    return this.keysP[i] === -1 ? -1 : this.vals[i];
  }
  set(p: number, f: number, v: number): void {
    if ((this.used + 1) * 2 > this.keysP.length) this.grow();
    const i = this.slot(p, f);
    this.keysP[i] = p;
    this.keysF[i] = f;
    this.vals[i] = v;
    this.used++;
  }
  private grow(): void {
    const { keysP, keysF, vals } = this;
    this.keysP = new Int32Array(keysP.length * 2).fill(-1);
    this.keysF = new Int32Array(keysP.length * 2);
    this.vals = new Int32Array(keysP.length * 2);
    this.mask = this.keysP.length - 1;
    for (let i = 0; i < keysP.length; i++) {
      if (keysP[i] === -1) continue;
      const j = this.slot(keysP[i], keysF[i]);
      this.keysP[j] = keysP[i];
      this.keysF[j] = keysF[i];
      this.vals[j] = vals[i];
    }
  }
}

/** Builds the call tree. Nodes are numbered so that a parent always precedes its children. */
export function buildTree(profile: Pick<FlameProfile, 'frames'>, stacks: FlameStack[]): FlameTree {
  const b = new TreeBuilder(profile);
  b.add(stacks, 0, stacks.length, 1);
  return b.finish();
}

/**
 * The call tree, built in steps: add() takes any subset of the stacks (a stride, so a first
 * part is a fair sample of the whole), finish() hands out the tree so far and the builder goes
 * on. The view paints the first part at once and completes the tree in later tasks.
 */
export class TreeBuilder {
  private readonly frame: number[] = [-1];
  private readonly parent: number[] = [-1];
  private readonly depth: number[] = [0];
  private readonly total: number[] = [0];
  private readonly self: number[] = [0];
  private readonly lookup = new ChildIndex();
  // The child each node handed out last, by node: most steps repeat it (a node's samples mostly
  // go one way), and this small array answers them without a probe into the large hash table.
  private lastFrame = new Int32Array(1 << 16).fill(-2);
  private lastChild = new Int32Array(1 << 16);
  private maxDepth = 0;
  /** stacks added so far */
  added = 0;

  constructor(private readonly profile: Pick<FlameProfile, 'frames'>) {}

  /** Adds stacks[from], stacks[from + stride], … below `to`. */
  add(stacks: FlameStack[], from: number, to: number, stride: number): void {
    const { frame, parent, depth, total, self, lookup } = this;
    let { lastFrame, lastChild, maxDepth } = this;
    for (let si = from; si < to; si += stride) {
      const s = stacks[si];
      this.added++;
      if (s.weight <= 0) continue;
      let node = ROOT;
      total[ROOT] += s.weight;
      const fr = s.frames;
      for (let i = 0; i < fr.length; i++) {
        const f = fr[i];
        if (lastFrame[node] === f) {
          node = lastChild[node];
          total[node] += s.weight;
          continue;
        }
        let child = lookup.get(node, f);
        if (child < 0) {
          child = frame.length;
          lookup.set(node, f, child);
          frame.push(f);
          parent.push(node);
          const d = depth[node] + 1;
          depth.push(d);
          if (d > maxDepth) maxDepth = d;
          total.push(0);
          self.push(0);
          if (child >= lastFrame.length) {
            const grownF = new Int32Array(lastFrame.length * 2).fill(-2);
            const grownC = new Int32Array(lastFrame.length * 2);
            grownF.set(lastFrame);
            grownC.set(lastChild);
            lastFrame = grownF;
            lastChild = grownC;
          }
        }
        lastFrame[node] = f;
        lastChild[node] = child;
        total[child] += s.weight;
        node = child;
      }
      self[node] += s.weight;
    }
    this.lastFrame = lastFrame;
    this.lastChild = lastChild;
    this.maxDepth = maxDepth;
  }

  finish(): FlameTree {
    const { frame, parent } = this;
    const size = frame.length;
    // Children grouped by parent (counting sort), then ordered by frame name like flamegraph.pl.
    const childStart = new Int32Array(size + 1);
    for (let n = 1; n < size; n++) childStart[parent[n] + 1]++;
    for (let n = 0; n < size; n++) childStart[n + 1] += childStart[n];
    const fill = childStart.slice(0, size);
    const children = new Int32Array(Math.max(0, size - 1));
    for (let n = 1; n < size; n++) children[fill[parent[n]]++] = n;
    const names = this.profile.frames.map((f) => f.name);
    const before = (x: number, y: number) => {
      const nx = names[frame[x]];
      const ny = names[frame[y]];
      return nx < ny || (nx === ny && frame[x] < frame[y]);
    };
    for (let n = 0; n < size; n++) {
      const a = childStart[n];
      const b = childStart[n + 1];
      if (b - a > 16) {
        children.set(Array.from(children.subarray(a, b)).sort((x, y) => (before(x, y) ? -1 : before(y, x) ? 1 : 0)), a);
      } else {
        // Most nodes have two or three children: an insertion sort in place beats copying them
        // out for Array.prototype.sort, ~18k times in a 100k-sample profile.
        for (let i = a + 1; i < b; i++) {
          const c = children[i];
          let j = i - 1;
          while (j >= a && before(c, children[j])) {
            children[j + 1] = children[j];
            j--;
          }
          children[j + 1] = c;
        }
      }
    }
    return {
      size,
      frame: Int32Array.from(frame),
      parent: Int32Array.from(parent),
      depth: Uint16Array.from(this.depth),
      total: Float64Array.from(this.total),
      self: Float64Array.from(this.self),
      childStart,
      children,
      maxDepth: this.maxDepth,
    };
  }
}

export interface Layout {
  /** boxes, in depth order, then left to right */
  count: number;
  node: Int32Array;
  /** left edge and width in pixels */
  x: Float64Array;
  w: Float64Array;
  depth: Uint16Array;
  /** boxes of depth d: [rowStart[d], rowStart[d + 1]) */
  rowStart: Int32Array;
  focus: number;
  width: number;
}

/** Ancestors of a node, root first, the node itself last. */
export function pathTo(tree: FlameTree, node: number): number[] {
  const out: number[] = [];
  for (let n = node; n >= 0; n = tree.parent[n]) out.push(n);
  return out.reverse();
}

/**
 * Places the focused node at full width with its ancestors above it (also full width) and its
 * descendants in proportion. A box narrower than minWidth is skipped with its whole subtree,
 * which can only be narrower.
 */
export function layout(tree: FlameTree, width: number, focus = ROOT, minWidth = 1): Layout {
  const cap = 1024;
  let node = new Int32Array(cap);
  let x = new Float64Array(cap);
  let w = new Float64Array(cap);
  let depth = new Uint16Array(cap);
  let count = 0;
  const push = (n: number, bx: number, bw: number) => {
    if (count === node.length) {
      const grow = <T extends Int32Array | Float64Array | Uint16Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      node = grow(node);
      x = grow(x);
      w = grow(w);
      depth = grow(depth);
    }
    node[count] = n;
    x[count] = bx;
    w[count] = bw;
    depth[count] = tree.depth[n];
    count++;
  };
  const rows: number[] = [];
  const ancestors = pathTo(tree, focus);
  for (const a of ancestors) {
    rows.push(count);
    push(a, 0, width);
  }
  const scale = tree.total[focus] > 0 ? width / tree.total[focus] : 0;
  // Breadth-first from the focus: each row is the previous row's children, left to right.
  let rowBegin = count - 1;
  let rowEnd = count;
  while (rowBegin < rowEnd) {
    const nextBegin = count;
    for (let i = rowBegin; i < rowEnd; i++) {
      const p = node[i];
      let cx = x[i];
      for (let c = tree.childStart[p]; c < tree.childStart[p + 1]; c++) {
        const child = tree.children[c];
        const cw = tree.total[child] * scale;
        if (cw >= minWidth) push(child, cx, cw);
        cx += cw;
      }
    }
    if (count > nextBegin) rows.push(nextBegin);
    rowBegin = nextBegin;
    rowEnd = count;
  }
  rows.push(count);
  return { count, node, x, w, depth, rowStart: Int32Array.from(rows), focus, width };
}

/** The box under a point: row by depth, then binary search by x. Returns the box index or -1. */
export function hitTest(l: Layout, depth: number, px: number): number {
  const firstDepth = l.count ? l.depth[0] : 0;
  const row = depth - firstDepth;
  if (row < 0 || row + 1 >= l.rowStart.length) return -1;
  let lo = l.rowStart[row];
  let hi = l.rowStart[row + 1] - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (px < l.x[mid]) hi = mid - 1;
    else if (px >= l.x[mid] + l.w[mid]) lo = mid + 1;
    else return mid;
  }
  return -1;
}

// ---- search -----------------------------------------------------------------------------

export interface SearchResult {
  /** per frame: 1 when its name matches */
  frameMatch: Uint8Array;
  /** samples under a matching frame (each sample counted once, however many matches it holds) */
  matched: number;
  percent: number;
}

/** Case-insensitive substring, or a regular expression written /like this/. */
export function compileQuery(query: string): (name: string) => boolean {
  const m = /^\/(.+)\/([a-z]*)$/.exec(query);
  if (m) {
    try {
      const re = new RegExp(m[1], m[2].includes('i') ? m[2] : `${m[2]}i`);
      return (s) => re.test(s);
    } catch {
      /* not a valid regex: search for the text itself */
    }
  }
  const q = query.toLowerCase();
  return (s) => s.toLowerCase().includes(q);
}

export function search(tree: FlameTree, profile: Pick<FlameProfile, 'frames'>, query: string, within = ROOT): SearchResult {
  const match = compileQuery(query);
  const frameMatch = new Uint8Array(profile.frames.length);
  if (query) profile.frames.forEach((f, i) => (frameMatch[i] = match(f.name) ? 1 : 0));
  // covered[n]: n or an ancestor matches. Parents precede children, so one forward pass does it.
  const covered = new Uint8Array(tree.size);
  // inside[n]: n is the zoomed node or below it.
  const inside = new Uint8Array(tree.size);
  inside[within] = 1;
  let matched = 0;
  for (let n = 1; n < tree.size; n++) {
    const p = tree.parent[n];
    if (n !== within) inside[n] = inside[p];
    const hit = frameMatch[tree.frame[n]] === 1;
    covered[n] = covered[p] || (hit ? 1 : 0);
    if (!inside[n]) continue;
    // Count where coverage starts, or at the zoomed node when an ancestor already matched.
    if (covered[n] && (!covered[p] || n === within)) matched += tree.total[n];
  }
  const base = tree.total[within];
  return { frameMatch, matched, percent: base > 0 ? (100 * matched) / base : 0 };
}

// ---- sandwich ---------------------------------------------------------------------------

export interface Sandwich {
  frame: number;
  /** samples with the function on the stack */
  total: number;
  /** samples with the function as the leaf */
  self: number;
  /** the function at depth 1, its callers below it (drawn upward, callers above) */
  callers: FlameTree;
  /** the function at depth 1, its callees below it */
  callees: FlameTree;
}

/**
 * Callers and callees of one function, merged over every stack that holds it. A recursive
 * function is cut at its outermost occurrence so no sample counts twice.
 */
export function sandwich(profile: FlameProfile, frameId: number): Sandwich {
  const callers: FlameStack[] = [];
  const callees: FlameStack[] = [];
  let total = 0;
  let self = 0;
  for (const s of profile.stacks) {
    const i = s.frames.indexOf(frameId);
    if (i < 0 || s.weight <= 0) continue;
    total += s.weight;
    if (s.frames[s.frames.length - 1] === frameId) self += s.weight;
    callers.push({ frames: s.frames.slice(0, i + 1).reverse(), weight: s.weight });
    callees.push({ frames: s.frames.slice(i), weight: s.weight });
  }
  return { frame: frameId, total, self, callers: buildTree(profile, callers), callees: buildTree(profile, callees) };
}

// ---- per-function totals (CodeLens, tables) ---------------------------------------------

/** Self and total samples of each frame; total counts a sample once even under recursion. */
export function frameTotals(profile: FlameProfile): { self: Float64Array; total: Float64Array } {
  const self = new Float64Array(profile.frames.length);
  const total = new Float64Array(profile.frames.length);
  const mark = new Int32Array(profile.frames.length).fill(-1);
  profile.stacks.forEach((s, si) => {
    if (s.frames.length) self[s.frames[s.frames.length - 1]] += s.weight;
    for (const f of s.frames) {
      if (mark[f] === si) continue;
      mark[f] = si;
      total[f] += s.weight;
    }
  });
  return { self, total };
}
