// The flame-graph view: toolbar (stop, reset, flame/icicle, order: by name / left-heavy / time,
// search with matched %, sandwich, focus on / exclude the selected function, export, open),
// breadcrumb of the zoom path and filters, hover tooltip, click to zoom (and open the frame's
// source line), right-click for the sandwich of a function, a sortable top-functions table
// (click a row to focus on it), and the keyboard: arrows move the selection, Enter zooms, Esc
// resets, `/` searches. Live profiles replace the tree in place, zoom and selection kept. A big
// profile is painted from a fair part of its stacks first and completed in later tasks. Talks to
// extension/editor/features/profile/profile.ts through ./protocol.ts. Works without VS Code too (benchmarks
// post the same messages to the window).
import { pathTo, ROOT, sandwich, search, TreeBuilder, type FlameTree } from '../../extension/model/flamegraph/model';
import { filterStacks, framePath, leftHeavy, move, NO_FILTER, nodeAtPath, remapFrames, serviceWeight, sortTop, topFunctions, viewTree, withServiceHidden, type Move, type Order, type TopKey, type TopRow, type ViewFilter } from '../../extension/model/flamegraph/views';
import type { FlameProfile } from '../../extension/model/flamegraph/profileData';
import type { FromView, ToView } from './protocol';
import { FlameCanvas } from './render';
import { frameLabel, LEGEND, swatchColor } from './colors';
import { applyStates } from './stateView';
import { computeDiff, diffTooltip, enterDiff, leaveDiff } from './diffView';
import { formatCount, formatWeight } from '../../extension/model/units';
import { addStyle, connectHost, elProps as el } from '../common/viewPage';

// Outside VS Code (benchmarks) the messages go out as 'flamegraph-out' window events.
const vscodeApi = connectHost<FromView>('flamegraph-out');
const send = (m: FromView) => vscodeApi.postMessage(m);

const CSS = `
#app { display: flex; flex-direction: column; height: calc(100vh - 16px); }
.crumbs { margin: 0 0 6px; color: var(--vscode-descriptionForeground); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.crumbs a { color: var(--vscode-textLink-foreground); cursor: pointer; }
.scroll { flex: 1; overflow: auto; position: relative; }
.pane-title { color: var(--vscode-descriptionForeground); margin: 6px 0 2px; }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 10px; vertical-align: middle; }
#search { width: 200px; }
.warnings { margin: 0 0 6px; }
.top { max-height: 30vh; overflow: auto; margin-top: 6px; }
.top th { cursor: pointer; user-select: none; position: sticky; top: 0; background: var(--vscode-editor-background); }
.top tr.row { cursor: pointer; }
.top tr.row:hover, .top tr.row.sel { background: var(--vscode-list-hoverBackground); }
.top td.name { max-width: 60vw; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
canvas:focus { outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
.unwind { margin: 0 0 6px; color: var(--vscode-descriptionForeground); font-size: 0.9em; cursor: help; }
.unwind:empty { display: none; }
.warnings > div { display: flex; gap: 6px; align-items: baseline; }
.warnings button.dismiss { padding: 0 6px; min-width: 0; background: none; color: inherit; border: none; cursor: pointer; }
`;

const app = document.getElementById('app')!;
addStyle(CSS);

const stopBtn = el('button', { textContent: 'Stop', title: 'Stop sampling and show the profile' });
const resetBtn = el('button', { textContent: 'Reset zoom', className: 'secondary' });
const orientBtn = el('button', { textContent: 'Icicle', className: 'secondary', title: 'Flip between flame (root at the bottom) and icicle (root at the top)' });
const searchBox = el('input', { id: 'search', placeholder: 'Search (text or /regex/)', type: 'search' });
const matchInfo = el('span', { className: 'status' });
const sandwichBtn = el('button', { textContent: 'Sandwich', className: 'secondary', title: 'Callers and callees of the selected function (or right-click a frame)', disabled: true });
const exportFolded = el('button', { textContent: 'Export folded', className: 'secondary' });
const exportSpeedscope = el('button', { textContent: 'Export speedscope', className: 'secondary' });
const openBtn = el('button', { textContent: 'Open…', className: 'secondary', title: 'Open a folded-stacks or speedscope file' });
const orderSelect = el('select', { title: 'Box order: by name (flamegraph.pl), left-heavy (widest first, merged), or time order (samples as they came)' });
for (const [value, label] of [['name', 'By name'], ['left-heavy', 'Left-heavy'], ['time', 'Time order']]) orderSelect.append(el('option', { value, textContent: label }));
orderSelect.setAttribute('aria-label', 'Box order');
const focusBtn = el('button', { textContent: 'Focus', className: 'secondary', title: 'Show only stacks through the selected function, rooted at it', disabled: true });
const excludeBtn = el('button', { textContent: 'Exclude', className: 'secondary', title: 'Drop every stack through the selected function', disabled: true });
// A JVM's wall-clock and off-CPU profiles: its service threads (GC, compilers, VM thread...)
// mostly idle in futexes and would fill the graph; hidden until asked, one click away.
const serviceBtn = el('button', { className: 'secondary', title: 'The JVM\'s own service threads (GC, JIT compiler, VM thread, signal, reference, finalizer, service and attach threads…): hidden so your threads fill the graph' });
const topBtn = el('button', { textContent: 'Top functions', className: 'secondary', title: 'Show or hide the table of functions by self and total samples' });
const status = el('span', { className: 'status' });
const toolbar = el('div', { className: 'toolbar' }, stopBtn, resetBtn, orientBtn, orderSelect, searchBox, matchInfo, sandwichBtn, focusBtn, excludeBtn, serviceBtn, topBtn, exportFolded, exportSpeedscope, openBtn, status);
const warningsBox = el('div', { className: 'warnings warning' });
const unwindBox = el('div', { className: 'unwind' });
const crumbs = el('div', { className: 'crumbs' });
const legend = el('div', { className: 'legend status' });
const scroll = el('div', { className: 'scroll' });
const tooltip = el('div', { className: 'tooltip' });
tooltip.style.display = 'none';
const topBox = el('div', { className: 'top' });
/** what screen readers hear when the keyboard selection moves */
const announce = el('div', { className: 'sr-only' });
announce.setAttribute('aria-live', 'polite');
app.append(toolbar, warningsBox, unwindBox, crumbs, scroll, topBox, legend, tooltip, announce);
stopBtn.style.display = 'none';

let profile: FlameProfile | undefined;
/** A count of samples as a number, any other weight with its unit (time, bytes). */
const weight = (n: number) => (profile?.unit ? formatWeight(n, profile.unit) : formatCount(n));
/** warnings the user dismissed here (the extension also remembers them across sessions) */
const dismissed = new Set<string>();

/** One row per warning, each said once, each with a button that dismisses it for good. */
function showWarnings(warnings: string[]): void {
  warningsBox.replaceChildren();
  for (const w of new Set(warnings)) {
    if (dismissed.has(w)) continue;
    const close = el('button', { className: 'dismiss', textContent: '×', title: 'Dismiss: do not show this again' });
    close.setAttribute('aria-label', 'Dismiss this warning');
    const row = el('div', {}, el('span', { textContent: w }), close);
    close.addEventListener('click', () => {
      dismissed.add(w);
      row.remove();
      send({ type: 'dismissWarning', text: w });
    });
    warningsBox.append(row);
  }
}
let tree: FlameTree | undefined;
let main: FlameCanvas | undefined;
let sand: { frame: number; callers: FlameCanvas; callees: FlameCanvas } | undefined;
let selectedFrame = -1;
let filter: ViewFilter = { ...NO_FILTER, excluded: [] };
/** a JVM's service-thread groups drawn too (off by default) */
let showService = false;
/** the filter applied: the user's, with the JVM's service threads hidden unless shown */
const applied = (): ViewFilter => (profile ? withServiceHidden(profile, filter, showService) : filter);
/** a tree still being completed in later tasks (big profiles) */
let building: { timer: ReturnType<typeof setTimeout>; complete(): void } | undefined;
let live = false;
/** the session's own counters while sampling: the status keeps them when a live graph redraws */
let progressText = '';
let topKey: TopKey = 'self';
let topDescending = true;
let topRows: TopRow[] = [];
let topTimer: ReturnType<typeof setTimeout> | undefined;

function pct(n: number, d: number): string {
  return d > 0 ? `${((100 * n) / d).toFixed(2)}%` : '0%';
}

function canvases(): FlameCanvas[] {
  return sand ? [sand.callers, sand.callees] : main ? [main] : [];
}

function redraw(): void {
  if (!profile || !tree || !main) return;
  const q = searchBox.value.trim();
  for (const c of canvases()) {
    if (q) {
      const r = search(c.tree, profile, q, c.focus);
      c.matches = r.frameMatch;
    } else c.matches = undefined;
  }
  if (q) {
    const target = sand ? sand.callees : main;
    const r = search(target.tree, profile, q, target.focus);
    matchInfo.textContent = `matched ${pct(r.matched, target.tree.total[target.focus])}${target.focus !== ROOT ? ' of the zoomed frame' : ''}`;
  } else matchInfo.textContent = '';
  for (const c of canvases()) c.draw();
  renderCrumbs();
  describeSelection();
  // While live, the status keeps the session's counters; "N samples at F Hz" means the final profile.
  status.textContent = live ? `${progressText || 'Sampling…'} · live graph of ${formatWeight(profile.total, profile.unit)}` : `${formatWeight(profile.total, profile.unit)}${profile.unit === 'bytes' ? ' allocated' : ''}${profile.lost ? `, ${profile.lost} lost` : ''}${profile.frequency && !profile.unit ? ` at ${profile.frequency} Hz` : ''} · ${formatCount(profile.frames.length)} frames · drawn in ${canvases().reduce((s, c) => s + c.lastDrawMs, 0).toFixed(1)} ms${building ? ' · completing the tree…' : ''}`;
}

function renderCrumbs(): void {
  crumbs.textContent = '';
  if (sand && profile) {
    const back = el('a', { textContent: '← back to the flame graph' });
    back.onclick = () => leaveSandwich();
    crumbs.append(back, ` · sandwich of ${profile.frames[sand.frame].name}`);
    return;
  }
  if (!main || !tree || !profile) return;
  if (filter.focusFrame >= 0 || filter.excluded.length) {
    const p = profile;
    const parts: string[] = [];
    if (filter.focusFrame >= 0) parts.push(`focused on ${p.frames[filter.focusFrame]?.name}`);
    if (filter.excluded.length) parts.push(`excluding ${filter.excluded.map((f) => p.frames[f]?.name).join(', ')}`);
    const clear = el('a', { textContent: 'clear' });
    clear.onclick = () => setFilter({ ...filter, focusFrame: -1, excluded: [] });
    crumbs.append(`${parts.join(' · ')} (`, clear, ') · ');
  }
  const path = pathTo(tree, main.focus);
  path.forEach((n, i) => {
    const name = n === ROOT ? 'all' : profile!.frames[tree!.frame[n]].name;
    if (i) crumbs.append(' › ');
    if (i === path.length - 1) crumbs.append(name);
    else {
      const a = el('a', { textContent: name });
      a.onclick = () => zoom(n);
      crumbs.append(a);
    }
  });
}

function zoom(node: number): void {
  if (!main) return;
  completeTree();
  main.focus = node;
  redraw();
}

function select(node: number): void {
  if (!main) return;
  main.selected = node;
  selectedFrame = node >= 0 ? main.tree.frame[node] : -1;
  sandwichBtn.disabled = focusBtn.disabled = excludeBtn.disabled = selectedFrame < 0;
}

/** The canvas's accessible name: what is selected and what the keys do. */
function describeSelection(): void {
  if (!main || !profile) return;
  const t = main.tree;
  const n = main.selected >= 0 ? main.selected : main.focus;
  const name = t.frame[n] >= 0 ? profile.frames[t.frame[n]].name : 'all';
  const text = `${name}: ${pct(t.total[n], t.total[ROOT])} total, ${pct(t.self[n], t.total[ROOT])} self, depth ${t.depth[n]}`;
  main.canvas.setAttribute('aria-label', `Flame graph${main.focus !== ROOT ? ', zoomed' : ''}. Selected ${text}. Arrow keys move the selection, Enter zooms into it, Escape resets, slash searches.`);
  if (document.activeElement === main.canvas) announce.textContent = text;
}

/** Rebuilds the tree for the filter; paths keep zoom and selection where the frames still exist. */
function rebuild(opts: { progressive?: boolean; zoomPath?: number[]; selPath?: number[] } = {}): void {
  if (!profile || !main) return;
  const zoomPath = opts.zoomPath ?? framePath(main.tree, main.focus);
  const selPath = opts.selPath ?? (main.selected >= 0 ? framePath(main.tree, main.selected) : undefined);
  if (building) {
    clearTimeout(building.timer);
    building = undefined;
  }
  const stacks = filterStacks(profile.stacks, applied());
  const place = (t: FlameTree) => {
    tree = t;
    main!.setTree(t, profile!);
    main!.focus = nodeAtPath(t, zoomPath);
    select(selPath ? nodeAtPath(t, selPath) : -1);
  };
  // A big profile: paint a fair part (every k-th stack) now, complete it in later tasks. 10k
  // stacks draw the same picture at screen resolution: a box 0.1 % wide (under 2 px) still
  // stands for about 10 of them.
  const PART = 10_000;
  if (opts.progressive && filter.order !== 'time' && stacks.length > 2 * PART) {
    const builder = new TreeBuilder(profile);
    const stride = Math.ceil(stacks.length / PART);
    builder.add(stacks, 0, stacks.length, stride);
    const order = filter.order;
    const finish = (t: FlameTree) => (order === 'left-heavy' ? leftHeavy(t) : t);
    let next = 1;
    const complete = () => {
      for (; next < stride; next++) builder.add(stacks, next, stacks.length, stride);
      building = undefined;
      const z = framePath(main!.tree, main!.focus);
      const sel = main!.selected >= 0 ? framePath(main!.tree, main!.selected) : undefined;
      tree = finish(builder.finish());
      main!.setTree(tree, profile!);
      main!.focus = nodeAtPath(tree, z);
      select(sel ? nodeAtPath(tree, sel) : -1);
    };
    const step = () => {
      const t0 = performance.now();
      while (next < stride && performance.now() - t0 < 30) builder.add(stacks, next++, stacks.length, stride);
      if (next < stride) building = { timer: setTimeout(step, 0), complete: () => (clearTimeout(building!.timer), complete()) };
      else {
        complete();
        redraw();
      }
    };
    place(finish(builder.finish()));
    building = { timer: setTimeout(step, 0), complete: () => (clearTimeout(building!.timer), complete()) };
  } else place(viewTree({ ...profile, stacks }, { ...filter, focusFrame: -1, excluded: [] }));
  scheduleTop(stacks);
}

/** Zoom, search and the table need the whole tree: finish it now if it is still being built. */
function completeTree(): void {
  building?.complete();
}

function setFilter(f: ViewFilter): void {
  filter = f;
  if (sand) leaveSandwich();
  rebuild();
  redraw();
}

function scheduleTop(stacks = profile ? filterStacks(profile.stacks, applied()) : []): void {
  clearTimeout(topTimer);
  if (topBox.style.display === 'none' || !profile) return;
  // Off the first paint: the table is below the graph and takes a pass over every frame.
  const p = profile;
  topTimer = setTimeout(() => {
    topRows = topFunctions(p, stacks, topKey, topDescending);
    renderTop();
  }, 0);
}

function renderTop(): void {
  topBox.textContent = '';
  if (!profile) return;
  const base = filterStacks(profile.stacks, applied()).reduce((s, x) => s + x.weight, 0);
  const head = el('tr');
  for (const [key, label, cls] of [['name', 'Function', ''], ['self', 'Self', 'num'], ['total', 'Total', 'num']] as [TopKey, string, string][]) {
    const th = el('th', { textContent: `${label}${topKey === key ? (topDescending ? ' ▼' : ' ▲') : ''}`, className: cls, title: `Sort by ${label.toLowerCase()}` });
    th.setAttribute('aria-sort', topKey === key ? (topDescending ? 'descending' : 'ascending') : 'none');
    th.tabIndex = 0;
    const sortBy = () => {
      topDescending = topKey === key ? !topDescending : key !== 'name';
      topKey = key;
      topRows = sortTop(topRows, topKey, topDescending);
      renderTop();
    };
    th.onclick = sortBy;
    th.onkeydown = (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), sortBy());
    head.append(th);
  }
  const table = el('table', {}, el('thead', {}, head));
  const body = el('tbody');
  // The first rows only: a 50k-function table would cost more than the graph.
  for (const r of topRows.slice(0, 300)) {
    const tr = el('tr', { className: `row${r.frame === filter.focusFrame ? ' sel' : ''}`, title: `Focus the flame graph on ${r.name}` }, el('td', { className: 'name', textContent: r.name }), el('td', { className: 'num', textContent: `${weight(r.self)} (${pct(r.self, base)})` }), el('td', { className: 'num', textContent: `${weight(r.total)} (${pct(r.total, base)})` }));
    tr.tabIndex = 0;
    const focusRow = () => setFilter({ ...filter, focusFrame: r.frame });
    tr.onclick = focusRow;
    tr.onkeydown = (e) => e.key === 'Enter' && focusRow();
    body.append(tr);
  }
  table.append(body);
  topBox.append(table);
}

function keyMove(m: Move): void {
  if (!main) return;
  completeTree();
  const from = main.selected >= 0 ? main.selected : main.focus;
  const to = move(main.tree, from, m);
  // Stay inside what is drawn: the zoomed subtree and its ancestors.
  const drawn = main.layoutResult;
  let visible = false;
  if (drawn) for (let i = 0; i < drawn.count && !visible; i++) visible = drawn.node[i] === to;
  select(visible ? to : from);
  redraw();
}

function openSourceOf(frameId: number): void {
  const f = profile?.frames[frameId];
  if (f?.file && f.line) send({ type: 'openSource', file: f.file, line: f.line });
}

function attach(c: FlameCanvas, onClick: (node: number) => void): void {
  c.canvas.addEventListener('mousemove', (e) => {
    const n = c.nodeAt(e.offsetX, e.offsetY);
    if (n < 0 || !profile) {
      tooltip.style.display = 'none';
      c.canvas.style.cursor = '';
      return;
    }
    c.canvas.style.cursor = 'pointer';
    const t = c.tree;
    const f = t.frame[n] >= 0 ? profile.frames[t.frame[n]] : undefined;
    const parent = t.parent[n];
    const lines = [
      f ? f.name : 'all',
      `${formatWeight(t.total[n], profile.unit)} · ${pct(t.total[n], t.total[ROOT])} of total${parent >= 0 ? ` · ${pct(t.total[n], t.total[parent])} of parent` : ''}`,
      `self ${weight(t.self[n])} (${pct(t.self[n], t.total[ROOT])})`,
    ];
    if (f) lines.push(`${frameLabel(f)}${f.module ? ` · ${f.module}` : ''}`);
    if (f?.file) lines.push(`${f.file}:${f.line ?? '?'}  (click to open)`);
    lines.push(...diffTooltip(c, n));
    tooltip.textContent = lines.join('\n');
    tooltip.style.display = 'block';
    const x = Math.min(e.clientX + 12, window.innerWidth - tooltip.offsetWidth - 4);
    const y = e.clientY + 16 + tooltip.offsetHeight > window.innerHeight ? e.clientY - tooltip.offsetHeight - 8 : e.clientY + 16;
    tooltip.style.left = `${Math.max(0, x)}px`;
    tooltip.style.top = `${y}px`;
  });
  c.canvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
  c.canvas.addEventListener('click', (e) => {
    const n = c.nodeAt(e.offsetX, e.offsetY);
    if (n < 0) return;
    if (c === main) select(n);
    else {
      selectedFrame = c.tree.frame[n];
      sandwichBtn.disabled = focusBtn.disabled = excludeBtn.disabled = selectedFrame < 0;
    }
    onClick(n);
    if (selectedFrame >= 0) openSourceOf(selectedFrame);
  });
  c.canvas.addEventListener('contextmenu', (e) => {
    const n = c.nodeAt(e.offsetX, e.offsetY);
    if (n < 0 || c.tree.frame[n] < 0) return;
    e.preventDefault();
    enterSandwich(c.tree.frame[n]);
  });
}

function enterSandwich(frameId: number): void {
  if (!profile) return;
  const s = sandwich(profile, frameId);
  scroll.textContent = '';
  const top = el('div', { className: 'pane-title', textContent: `Callers of ${profile.frames[frameId].name} (${pct(s.total, profile.total)} total, ${pct(s.self, profile.total)} self)` });
  const callersBox = el('div');
  const bottom = el('div', { className: 'pane-title', textContent: 'Callees' });
  const calleesBox = el('div');
  scroll.append(top, callersBox, bottom, calleesBox);
  const callers = new FlameCanvas(callersBox, s.callers, profile);
  const callees = new FlameCanvas(calleesBox, s.callees, profile);
  callees.icicle = true;
  callers.emphasized = callees.emphasized = frameId;
  attach(callers, (n) => ((callers.focus = n), redraw()));
  attach(callees, (n) => ((callees.focus = n), redraw()));
  sand = { frame: frameId, callers, callees };
  redraw();
}

function leaveSandwich(): void {
  sand = undefined;
  scroll.textContent = '';
  if (main) scroll.append(main.canvas);
  redraw();
}

function show(p: FlameProfile, warnings: string[], isLive = false): void {
  // A live update (or the final profile after them) replaces the tree in the same canvas, so
  // nothing flickers and zoom, selection and filters stay; any other profile starts afresh.
  const keep = Boolean(main && profile && (isLive || live));
  const atBottom = scroll.scrollTop + scroll.clientHeight >= scroll.scrollHeight - 2;
  if (keep && main && profile) {
    const old = profile;
    const [focusFrame, ...excluded] = remapFrames(old, p, [filter.focusFrame, ...filter.excluded]);
    const z = framePath(main.tree, main.focus);
    const sel = main.selected >= 0 ? framePath(main.tree, main.selected) : [];
    const [zMapped, selMapped] = [remapFrames(old, p, z), remapFrames(old, p, sel)];
    filter = { ...filter, focusFrame, excluded: excluded.filter((f) => f >= 0) };
    profile = p;
    // Paths into the old tree, translated to the new frame ids, placed again after the rebuild.
    rebuild({ zoomPath: zMapped, selPath: sel.length ? selMapped : undefined });
  } else {
    profile = p;
    filter = { order: filter.order, focusFrame: -1, excluded: [] };
    sand = undefined;
    scroll.textContent = '';
    main = new FlameCanvas(scroll, new TreeBuilder(p).finish(), p);
    main.icicle = orientBtn.textContent === 'Flame';
    main.canvas.tabIndex = 0;
    main.canvas.setAttribute('role', 'application');
    main.canvas.setAttribute('aria-roledescription', 'flame graph');
    main.canvas.addEventListener('keydown', canvasKey);
    main.canvas.addEventListener('focus', () => main && main.selected < 0 && (select(main.focus), redraw()));
    attach(main, zoom);
    rebuild({ progressive: true });
  }
  updateService();
  live = isLive;
  showWarnings(warnings);
  stopBtn.style.display = isLive ? '' : 'none';
  redraw();
  if (!main!.icicle && (!keep || atBottom)) scroll.scrollTop = scroll.scrollHeight;
}

function canvasKey(e: KeyboardEvent): void {
  if (!main) return;
  // Flame: leaves are up; icicle: leaves are down.
  const up: Move = main.icicle ? 'parent' : 'child';
  const down: Move = main.icicle ? 'child' : 'parent';
  const moves: Record<string, Move> = { ArrowUp: up, ArrowDown: down, ArrowLeft: 'prev', ArrowRight: 'next' };
  if (moves[e.key]) {
    e.preventDefault();
    keyMove(moves[e.key]);
  } else if (e.key === 'Enter' && main.selected >= 0) {
    e.preventDefault();
    zoom(main.selected);
  }
}

/** The service-thread toggle's label and the state legend, for what is shown now. */
function updateService(): void {
  if (!profile || !main) return;
  const hidden = serviceWeight(profile);
  serviceBtn.style.display = hidden > 0 ? '' : 'none';
  serviceBtn.textContent = showService ? 'Hide JVM threads' : `Show JVM threads (${pct(hidden, profile.total)} hidden)`;
  serviceBtn.setAttribute('aria-pressed', String(showService));
  // the legend's totals are those of the threads shown (user filters aside)
  applyStates(main, legend, showService ? undefined : filterStacks(profile.stacks, withServiceHidden(profile, NO_FILTER, false)));
}

serviceBtn.onclick = () => {
  showService = !showService;
  if (sand) leaveSandwich();
  rebuild();
  updateService();
  redraw();
};
stopBtn.onclick = () => send({ type: 'stop' });
resetBtn.onclick = () => {
  if (sand) leaveSandwich();
  zoom(ROOT);
};
orientBtn.onclick = () => {
  const icicle = orientBtn.textContent === 'Icicle';
  orientBtn.textContent = icicle ? 'Flame' : 'Icicle';
  if (main) main.icicle = icicle;
  redraw();
};
let searchTimer: ReturnType<typeof setTimeout> | undefined;
searchBox.oninput = () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(redraw, 120);
};
sandwichBtn.onclick = () => selectedFrame >= 0 && enterSandwich(selectedFrame);
focusBtn.onclick = () => selectedFrame >= 0 && setFilter({ ...filter, focusFrame: selectedFrame });
excludeBtn.onclick = () => selectedFrame >= 0 && setFilter({ ...filter, excluded: [...filter.excluded, selectedFrame], focusFrame: filter.focusFrame === selectedFrame ? -1 : filter.focusFrame });
orderSelect.onchange = () => setFilter({ ...filter, order: orderSelect.value as Order });
topBtn.onclick = () => {
  topBox.style.display = topBox.style.display === 'none' ? '' : 'none';
  topBtn.setAttribute('aria-pressed', String(topBox.style.display !== 'none'));
  scheduleTop();
};
topBtn.setAttribute('aria-pressed', 'true');
exportFolded.onclick = () => send({ type: 'export', format: 'folded' });
exportSpeedscope.onclick = () => send({ type: 'export', format: 'speedscope' });
openBtn.onclick = () => send({ type: 'open' });
const exportPprof = el('button', { textContent: 'Export pprof', className: 'secondary', title: 'Gzipped profile.proto for go tool pprof, Pyroscope, Parca' });
exportPprof.onclick = () => send({ type: 'export', format: 'pprof' });
toolbar.insertBefore(exportPprof, openBtn);
window.addEventListener('keydown', (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
  if (((e.ctrlKey || e.metaKey) && e.key === 'f') || (e.key === '/' && !typing)) {
    e.preventDefault();
    searchBox.focus();
    searchBox.select();
  } else if (e.key === 'Escape') {
    resetBtn.click();
    if (typing) main?.canvas.focus();
  }
});
let resizeTimer: ReturnType<typeof setTimeout> | undefined;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(redraw, 50);
});

legend.append('Colors:');
for (const [label, cls] of LEGEND) {
  const sw = el('span');
  sw.style.background = swatchColor(cls);
  legend.append(sw, label);
}

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  if (m.type === 'profile') {
    document.title = m.title;
    leaveDiff(legend);
    show(m.profile, m.warnings, m.live);
    unwindBox.textContent = m.unwind ?? '';
    unwindBox.title = m.unwindDetail ?? '';
  } else if (m.type === 'diff') {
    document.title = m.title;
    leaveDiff(legend);
    const d = computeDiff(m.base, m.next);
    show(d.profile, []);
    unwindBox.textContent = '';
    unwindBox.title = '';
    enterDiff(main!, d, { base: m.baseTitle, next: m.nextTitle }, legend, scroll, (name) => {
      searchBox.value = name;
      redraw();
    });
    redraw();
  } else if (m.type === 'progress') {
    stopBtn.style.display = '';
    progressText = `Sampling… ${formatCount(m.samples)} samples, ${m.lost} lost, ${(m.elapsedMs / 1000).toFixed(0)} s`;
    status.textContent = progressText;
    if (m.warnings?.length) showWarnings(m.warnings);
  } else if (m.type === 'status') {
    status.textContent = m.text;
    status.className = m.error ? 'status error' : 'status';
    if (m.error) stopBtn.style.display = 'none';
  }
});

send({ type: 'ready' });
