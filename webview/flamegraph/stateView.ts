// Off-CPU and wall-clock profiles in the flame graph: their stacks are rooted at a thread-state
// frame ("[on CPU]", "[off-CPU: sleeping]", ...; extension/model/flamegraph/profileData.ts), so
// every box is coloured by the state at its root, and the legend lists each state's total time
// and share instead of the frame kinds. Other profiles keep the frame-kind colours and legend.
import { ROOT, type FlameTree } from '../../extension/model/flamegraph/model';
import type { FlameStack } from '../../extension/model/flamegraph/profileData';
import { stateOfFrameName } from '../../extension/model/flamegraph/profileData';
import { THREAD_STATE_LABEL, THREAD_STATES } from '../../extension/protocol/profile';
import { stateColor, stateSwatch } from './colors';
import type { FlameCanvas } from './render';

let savedLegend: ChildNode[] | undefined;
let colouring: FlameCanvas | undefined;

/** "12.3 ms", "4.56 s" from µs. */
export function formatUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(us >= 1e8 ? 0 : 2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${Math.round(us)} µs`;
}

/** Per node, the index in THREAD_STATES of the state at its root (-1: none). Parents precede children. */
export function nodeStates(tree: FlameTree, frameState: Int8Array): Int8Array {
  const out = new Int8Array(tree.size).fill(-1);
  for (let n = 1; n < tree.size; n++) {
    const p = tree.parent[n];
    out[n] = p === ROOT ? (tree.frame[n] >= 0 ? frameState[tree.frame[n]] : -1) : out[p];
  }
  return out;
}

function restore(legend: HTMLElement): void {
  if (colouring) colouring.nodeColor = undefined;
  colouring = undefined;
  if (!savedLegend) return;
  legend.textContent = '';
  legend.append(...savedLegend);
  savedLegend = undefined;
}

/**
 * Colours by state and shows per-state totals when the canvas's profile has state roots; restores
 * otherwise. The totals are of `stacks` (default: the whole profile; a JVM's hidden service
 * threads left out).
 */
export function applyStates(canvas: FlameCanvas, legend: HTMLElement, stacks: FlameStack[] = canvas.profile.stacks): void {
  const p = canvas.profile;
  const frameState = Int8Array.from(p.frames, (f) => {
    const s = stateOfFrameName(f.name);
    return s ? THREAD_STATES.indexOf(s) : -1;
  });
  if (!frameState.some((s) => s >= 0)) return restore(legend);
  let forTree: FlameTree | undefined;
  let states: Int8Array = new Int8Array(0);
  canvas.nodeColor = (n, dark) => {
    if (forTree !== canvas.tree) {
      forTree = canvas.tree;
      states = nodeStates(canvas.tree, frameState);
    }
    const s = states[n];
    const f = canvas.tree.frame[n];
    return s >= 0 ? stateColor(THREAD_STATES[s], f >= 0 ? p.frames[f].name : '', dark) : undefined;
  };
  colouring = canvas;
  // totals from the whole profile, not the zoomed or filtered tree
  const totals = new Map<number, number>();
  let all = 0;
  for (const st of stacks) {
    all += st.weight;
    const s = st.frames.length ? frameState[st.frames[0]] : -1;
    if (s >= 0) totals.set(s, (totals.get(s) ?? 0) + st.weight);
  }
  savedLegend ??= [...legend.childNodes];
  legend.textContent = '';
  legend.append(p.unit === 'us' ? 'Where the time went:' : 'States:');
  all ||= 1;
  THREAD_STATES.forEach((state, i) => {
    const v = totals.get(i);
    if (!v) return;
    const sw = document.createElement('span');
    sw.style.background = stateSwatch(state);
    legend.append(sw, `${THREAD_STATE_LABEL[state]} ${p.unit === 'us' ? formatUs(v) : v} (${((100 * v) / all).toFixed(1)} %)`);
  });
  legend.setAttribute('aria-label', 'Thread states: colour and total time of each');
}
