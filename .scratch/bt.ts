import { programLike } from '/work/wt/sessions/bench/flamegraphProfile';
import { buildTree } from '/work/wt/sessions/webview/flamegraph/model';
const p = programLike();
let depthSum = 0; for (const s of p.stacks) depthSum += s.frames.length;
console.log('stacks', p.stacks.length, 'frames', p.frames.length, 'avg depth', depthSum / p.stacks.length, 'total', p.total);
for (let i = 0; i < 5; i++) { const t0 = performance.now(); const t = buildTree(p, p.stacks); console.log('build', (performance.now() - t0).toFixed(1), 'nodes', t.size); }
