import { programLike } from '../bench/flamegraphProfile';
import { buildTree, layout } from '../webview/flamegraph/model';
import { buildVisibleTree } from '../webview/flamegraph/views';
const p = programLike();
for (let i = 0; i < 4; i++) {
  let t0 = performance.now(); const full = buildTree(p, p.stacks); const a = performance.now() - t0;
  t0 = performance.now(); const vis = buildVisibleTree(p, p.stacks, p.total / 1576); const b = performance.now() - t0;
  const l1 = layout(full, 1576), l2 = layout(vis, 1576);
  let same = l1.count === l2.count; for (let j = 0; same && j < l1.count; j++) same = full.frame[l1.node[j]] === vis.frame[l2.node[j]] && Math.abs(l1.x[j] - l2.x[j]) < 1e-6;
  console.log('full', a.toFixed(1), 'visible', b.toFixed(1), 'nodes', full.size, vis.size, 'boxes', l1.count, l2.count, 'same', same);
}
