// The flame-graph view's diff mode: colours the main canvas by the per-call-path change of self
// share (model: extension/model/profileDiff.ts), draws the red/blue legend, adds the diff to
// the tooltip, and lists the biggest movers by function in a sortable table (click a row to
// search for the function). main.ts calls enterDiff/leaveDiff and diffTooltip.
import { diffProfiles, type Mover, type ProfileDiff } from '../../extension/model/profileDiff';
import type { FlameProfile } from '../../extension/model/flamegraph/profileData';
import type { FlameCanvas } from './render';
import { diffColor, diffScale, signedPoints } from './diffColors';
import { formatCount } from '../../extension/model/units';
import { addStyle } from '../common/viewPage';

interface DiffState {
  diff: ProfileDiff;
  canvas: FlameCanvas;
  panel: HTMLElement;
  savedLegend: Node[];
}

let state: DiffState | undefined;

export function computeDiff(base: FlameProfile, next: FlameProfile): ProfileDiff {
  return diffProfiles(base, next);
}

const pct = (x: number) => `${x.toFixed(1)}%`;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

type SortKey = 'selfDelta' | 'totalDelta' | 'newSelf' | 'newTotal' | 'name';

function moversTable(d: ProfileDiff, onPick: (name: string) => void): HTMLElement {
  const wrap = h('div', undefined, 'diff-movers');
  wrap.setAttribute('role', 'region');
  wrap.setAttribute('aria-label', 'Biggest movers by function');
  const table = h('table');
  const cols: [string, SortKey, string][] = [
    ['Function', 'name', 'function name'],
    ['Self Δ', 'selfDelta', 'change of self share, percentage points'],
    ['Self base → new', 'newSelf', 'share of samples with the function as the leaf'],
    ['Total Δ', 'totalDelta', 'change of total share, percentage points'],
    ['Total base → new', 'newTotal', 'share of samples with the function on the stack'],
  ];
  let sortKey: SortKey = 'selfDelta';
  const body = h('tbody');
  const fill = () => {
    const rows: Mover[] = [...d.movers].sort((a, b) =>
      sortKey === 'name' ? a.name.localeCompare(b.name) : sortKey.endsWith('Delta') ? Math.abs(b[sortKey]) - Math.abs(a[sortKey]) : b[sortKey] - a[sortKey],
    );
    body.textContent = '';
    for (const m of rows.slice(0, 50)) {
      const tr = h('tr');
      tr.title = `Search the graph for ${m.name}`;
      tr.tabIndex = 0;
      const name = h('td', m.name, 'diff-name');
      const sd = h('td', signedPoints(m.selfDelta), m.selfDelta > 0 ? 'diff-up' : m.selfDelta < 0 ? 'diff-down' : '');
      const td = h('td', signedPoints(m.totalDelta), m.totalDelta > 0 ? 'diff-up' : m.totalDelta < 0 ? 'diff-down' : '');
      tr.append(name, sd, h('td', `${pct(m.baseSelf)} → ${pct(m.newSelf)}`), td, h('td', `${pct(m.baseTotal)} → ${pct(m.newTotal)}`));
      tr.onclick = () => onPick(m.name);
      tr.onkeydown = (e) => e.key === 'Enter' && onPick(m.name);
      body.append(tr);
    }
  };
  const head = h('tr');
  for (const [label, key, tip] of cols) {
    const th = h('th', label);
    th.title = `${tip} (click to sort)`;
    th.onclick = () => {
      sortKey = key;
      fill();
    };
    head.append(th);
  }
  const thead = h('thead');
  thead.append(head);
  table.append(thead, body);
  fill();
  wrap.append(h('div', `Biggest movers (${d.movers.length} functions; shares of each profile's own samples)`, 'pane-title'), table);
  return wrap;
}

const CSS = `
.diff-movers { max-height: 32vh; overflow: auto; margin-top: 6px; }
.diff-movers table { border-collapse: collapse; width: 100%; font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; }
.diff-movers th { text-align: left; cursor: pointer; position: sticky; top: 0; background: var(--vscode-editor-background); }
.diff-movers td, .diff-movers th { padding: 1px 8px 1px 0; white-space: nowrap; }
.diff-movers tr:hover td { background: var(--vscode-list-hoverBackground); cursor: pointer; }
.diff-up { color: var(--vscode-charts-red, #d33); }
.diff-down { color: var(--vscode-charts-blue, #36c); }
.diff-gradient { display: inline-block; width: 160px; height: 10px; vertical-align: middle; margin: 0 6px; }
`;

let styled = false;

/**
 * Turns the main canvas into the diff of base → next (the canvas must already show diff.profile),
 * puts the legend in `legend` and the movers table after `after`.
 */
export function enterDiff(canvas: FlameCanvas, diff: ProfileDiff, titles: { base: string; next: string }, legend: HTMLElement, after: HTMLElement, onPick: (name: string) => void): void {
  leaveDiff(legend);
  if (!styled) {
    addStyle(CSS);
    styled = true;
  }
  const scale = diffScale(diff.maxDelta);
  canvas.nodeColor = (n, dark) => diffColor(diff.selfDelta[n] ?? 0, scale, dark);
  const savedLegend = [...legend.childNodes];
  legend.textContent = '';
  const dark = document.body.classList.contains('vscode-dark') || document.body.classList.contains('vscode-high-contrast');
  const grad = h('span', undefined, 'diff-gradient');
  grad.style.background = `linear-gradient(to right, ${diffColor(-scale, scale, dark)}, ${diffColor(0, scale, dark)}, ${diffColor(scale, scale, dark)})`;
  legend.append(
    `Width: ${titles.next} (${formatCount(diff.newSamples)} samples). Colour: change of self share from ${titles.base} (${formatCount(diff.baseSamples)} samples): shrank ${signedPoints(-scale)}`,
    grad,
    `${signedPoints(scale)} grew`,
    diff.goneSelf >= 0.05 ? ` · ${pct(diff.goneSelf)} of the base is on call paths the new profile lacks` : '',
  );
  legend.setAttribute('aria-label', 'Diff legend: red grew, blue shrank');
  const panel = moversTable(diff, onPick);
  after.after(panel);
  state = { diff, canvas, panel, savedLegend };
}

export function leaveDiff(legend: HTMLElement): void {
  if (!state) return;
  state.canvas.nodeColor = undefined;
  state.panel.remove();
  legend.textContent = '';
  legend.append(...state.savedLegend);
  state = undefined;
}

/** Extra tooltip lines for a node of the diffed canvas. */
export function diffTooltip(canvas: FlameCanvas, node: number): string[] {
  if (!state || canvas !== state.canvas || node < 0 || node >= state.diff.selfDelta.length) return [];
  const d = state.diff;
  const nt = d.newSamples > 0 ? 100 / d.newSamples : 0;
  return [`self ${pct(d.baseSelf[node])} → ${pct(canvas.tree.self[node] * nt)} (${signedPoints(d.selfDelta[node])}) · total ${pct(d.baseTotal[node])} → ${pct(canvas.tree.total[node] * nt)}`];
}

export function inDiff(): boolean {
  return state !== undefined;
}
