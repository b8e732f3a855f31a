// The flame-graph view: toolbar (stop, reset, flame/icicle, search with matched %, sandwich,
// export, open), breadcrumb of the zoom path, hover tooltip, click to zoom (and open the
// frame's source line), right-click for the sandwich of a function. Talks to
// extension/features/profile.ts through ./protocol.ts. Works without VS Code too (benchmarks
// post the same messages to the window).
import { buildTree, pathTo, ROOT, sandwich, search, type FlameTree } from './model';
import type { FlameProfile } from './profileData';
import type { FromView, ToView } from './protocol';
import { FlameCanvas } from './render';
import { KIND_LABEL } from './colors';

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; setState(s: unknown): void };
const vscodeApi = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : { postMessage: (m: unknown) => window.dispatchEvent(new CustomEvent('flamegraph-out', { detail: m })), setState: () => {} };
// The panel serializer finds this session's data by the key after a window reload.
if (document.body.dataset.sessionKey) vscodeApi.setState({ sessionKey: document.body.dataset.sessionKey });
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
`;

const app = document.getElementById('app')!;
const nonce = (document.currentScript as HTMLScriptElement | null)?.nonce;
const styleEl = document.createElement('style');
if (nonce) styleEl.nonce = nonce;
styleEl.textContent = CSS;
document.head.appendChild(styleEl);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  for (const k of kids) e.append(k);
  return e;
}

const stopBtn = el('button', { textContent: 'Stop', title: 'Stop sampling and show the profile' });
const resetBtn = el('button', { textContent: 'Reset zoom', className: 'secondary' });
const orientBtn = el('button', { textContent: 'Icicle', className: 'secondary', title: 'Flip between flame (root at the bottom) and icicle (root at the top)' });
const searchBox = el('input', { id: 'search', placeholder: 'Search (text or /regex/)', type: 'search' });
const matchInfo = el('span', { className: 'status' });
const sandwichBtn = el('button', { textContent: 'Sandwich', className: 'secondary', title: 'Callers and callees of the selected function (or right-click a frame)', disabled: true });
const exportFolded = el('button', { textContent: 'Export folded', className: 'secondary' });
const exportSpeedscope = el('button', { textContent: 'Export speedscope', className: 'secondary' });
const openBtn = el('button', { textContent: 'Open…', className: 'secondary', title: 'Open a folded-stacks or speedscope file' });
const status = el('span', { className: 'status' });
const toolbar = el('div', { className: 'toolbar' }, stopBtn, resetBtn, orientBtn, searchBox, matchInfo, sandwichBtn, exportFolded, exportSpeedscope, openBtn, status);
const warningsBox = el('div', { className: 'warnings warning' });
const crumbs = el('div', { className: 'crumbs' });
const legend = el('div', { className: 'legend status' });
const scroll = el('div', { className: 'scroll' });
const tooltip = el('div', { className: 'tooltip' });
tooltip.style.display = 'none';
app.append(toolbar, warningsBox, crumbs, scroll, legend, tooltip);
stopBtn.style.display = 'none';

let profile: FlameProfile | undefined;
let tree: FlameTree | undefined;
let main: FlameCanvas | undefined;
let sand: { frame: number; callers: FlameCanvas; callees: FlameCanvas } | undefined;
let selectedFrame = -1;

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
  status.textContent = `${profile.total.toLocaleString()} samples${profile.lost ? `, ${profile.lost} lost` : ''}${profile.frequency ? ` at ${profile.frequency} Hz` : ''} · ${profile.frames.length.toLocaleString()} frames · drawn in ${canvases().reduce((s, c) => s + c.lastDrawMs, 0).toFixed(1)} ms`;
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
  main.focus = node;
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
      `${t.total[n].toLocaleString()} samples · ${pct(t.total[n], t.total[ROOT])} of total${parent >= 0 ? ` · ${pct(t.total[n], t.total[parent])} of parent` : ''}`,
      `self ${t.self[n].toLocaleString()} (${pct(t.self[n], t.total[ROOT])})`,
    ];
    if (f) lines.push(`${KIND_LABEL[f.kind]}${f.module ? ` · ${f.module}` : ''}`);
    if (f?.file) lines.push(`${f.file}:${f.line ?? '?'}  (click to open)`);
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
    selectedFrame = c.tree.frame[n];
    sandwichBtn.disabled = selectedFrame < 0;
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

function show(p: FlameProfile, warnings: string[]): void {
  profile = p;
  tree = buildTree(p, p.stacks);
  sand = undefined;
  scroll.textContent = '';
  main = new FlameCanvas(scroll, tree, p);
  main.icicle = orientBtn.textContent === 'Flame';
  attach(main, zoom);
  warningsBox.textContent = warnings.join('\n');
  warningsBox.style.whiteSpace = 'pre-wrap';
  stopBtn.style.display = 'none';
  redraw();
  if (!main.icicle) scroll.scrollTop = scroll.scrollHeight;
}

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
exportFolded.onclick = () => send({ type: 'export', format: 'folded' });
exportSpeedscope.onclick = () => send({ type: 'export', format: 'speedscope' });
openBtn.onclick = () => send({ type: 'open' });
window.addEventListener('keydown', (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
    e.preventDefault();
    searchBox.focus();
  } else if (e.key === 'Escape') resetBtn.click();
});
let resizeTimer: ReturnType<typeof setTimeout> | undefined;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(redraw, 50);
});

legend.append('Colors:');
for (const [kind, color] of [
  ['native', 'hsl(14,75%,62%)'],
  ['kernel', 'hsl(48,75%,62%)'],
  ['JIT Java', 'hsl(112,75%,62%)'],
  ['interpreted Java', 'hsl(185,75%,62%)'],
]) {
  const sw = el('span');
  sw.style.background = color;
  legend.append(sw, kind);
}

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  if (m.type === 'profile') {
    document.title = m.title;
    show(m.profile, m.warnings);
  } else if (m.type === 'progress') {
    stopBtn.style.display = '';
    status.textContent = `Sampling… ${m.samples.toLocaleString()} samples, ${m.lost} lost, ${(m.elapsedMs / 1000).toFixed(0)} s`;
    if (m.warnings?.length) warningsBox.textContent = m.warnings.join('\n');
  } else if (m.type === 'status') {
    status.textContent = m.text;
    status.className = m.error ? 'status error' : 'status';
    if (m.error) stopBtn.style.display = 'none';
  }
});

send({ type: 'ready' });
