import { programLike } from '../bench/flamegraphProfile';
import { buildTree } from '../webview/flamegraph/model';
const p = programLike();
const full = buildTree(p, p.stacks);
const min = p.total / 1576;
let steps = 0, all = 0; for (let n = 0; n < full.size; n++) { all += full.total[n]; if (full.total[n] >= min) steps += full.total[n]; }
const ws = p.stacks.map(s => s.weight); console.log('steps', steps, 'all', all, 'stacks', p.stacks.length, 'max weight', Math.max(...ws));
