// Flame-graph model benchmark on a 100k-sample / 50k-distinct-frame profile: tree build,
// layout (whole graph and zoomed, 1600 px wide), search, sandwich, folded export/import.
// Layout is what runs on every zoom and resize; the renderer draws exactly its boxes.
// Standalone: node --import tsx bench/flamegraph.ts
import { buildTree, layout, ROOT, sandwich, search } from '../extension/model/flamegraph/model';
import { fromFolded, toFolded } from '../extension/model/flamegraph/formats';
import { programLike, worstCase } from './flamegraphProfile';
import type { FlameProfile } from '../extension/model/flamegraph/profileData';

export interface FlamegraphBench {
  profile: string;
  samples: number;
  distinctFrames: number;
  treeNodes: number;
  buildTreeMs: number;
  /** median over rounds */
  layoutMs: number;
  layoutZoomedMs: number;
  boxesDrawn: number;
  searchMs: number;
  sandwichMs: number;
  foldedExportMs: number;
  foldedImportMs: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time<T>(f: () => T): [T, number] {
  const t0 = performance.now();
  const r = f();
  return [r, performance.now() - t0];
}

export function benchFlamegraph(kind: 'program-like' | 'worst-case' = 'program-like', samples = 100_000, frames = 50_000, width = 1600, rounds = 15): FlamegraphBench {
  const p: FlameProfile = kind === 'program-like' ? programLike(samples, frames) : worstCase(samples, frames);
  const used = new Set(p.stacks.flatMap((s) => s.frames)).size;
  const [tree, buildTreeMs] = time(() => buildTree(p, p.stacks));
  const layoutTimes: number[] = [];
  let boxes = 0;
  for (let i = 0; i < rounds; i++) {
    const [l, ms] = time(() => layout(tree, width, ROOT));
    layoutTimes.push(ms);
    boxes = l.count;
  }
  // Zoom into the heaviest child of the heaviest root child, as a user would.
  let focus = ROOT;
  for (let d = 0; d < 3; d++) {
    let best = -1;
    for (let c = tree.childStart[focus]; c < tree.childStart[focus + 1]; c++) if (best < 0 || tree.total[tree.children[c]] > tree.total[best]) best = tree.children[c];
    if (best < 0) break;
    focus = best;
  }
  const zoomTimes: number[] = [];
  for (let i = 0; i < rounds; i++) zoomTimes.push(time(() => layout(tree, width, focus))[1]);
  const searchTimes: number[] = [];
  for (let i = 0; i < 5; i++) searchTimes.push(time(() => search(tree, p, 'HashMap.method1'))[1]);
  const [, sandwichMs] = time(() => sandwich(p, p.stacks[0].frames[3]));
  const [text, foldedExportMs] = time(() => toFolded(p));
  const [, foldedImportMs] = time(() => fromFolded(text));
  return {
    profile: p.name,
    samples,
    distinctFrames: used,
    treeNodes: tree.size,
    buildTreeMs: Math.round(buildTreeMs),
    layoutMs: +median(layoutTimes).toFixed(2),
    layoutZoomedMs: +median(zoomTimes).toFixed(2),
    boxesDrawn: boxes,
    searchMs: +median(searchTimes).toFixed(1),
    sandwichMs: Math.round(sandwichMs),
    foldedExportMs: Math.round(foldedExportMs),
    foldedImportMs: Math.round(foldedImportMs),
  };
}

if (require.main === module) console.log(JSON.stringify([benchFlamegraph('program-like'), benchFlamegraph('worst-case')], null, 2));
