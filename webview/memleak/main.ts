// The leak view: the workspace lines with a CodeLens (allocation lines and their callers, inclusive
// figures, as the lenses read), then the stacks by outstanding bytes with count, oldest age, a
// growth sparkline and frames; clicking a line or a frame with a source line opens it; Stop while
// tracing. Drawing only; rows come from model.ts.
import type { FromView, ToView } from './protocol';
import { siteLabel, toRows, totalsText, type Row } from './model';
import { addStyle, connectHost, elProps as el } from '../common/viewPage';

const vscode = connectHost<FromView>();
const app = document.getElementById('app')!;
let focus: string | undefined;
let last: Extract<ToView, { type: 'snapshot' }> | undefined;

function sparkline(points: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', '80');
  svg.setAttribute('height', '18');
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', points);
  line.setAttribute('class', 'spark');
  svg.append(line);
  return svg;
}

function rowElement(r: Row): HTMLElement {
  const frames = el('ol', { className: 'frames' });
  for (const f of r.frames) {
    const li = el('li', { title: f.title }, f.label);
    if (f.location) {
      const loc = f.location;
      li.className = 'link';
      li.addEventListener('click', () => vscode.postMessage({ type: 'openFrame', file: loc.file, line: loc.line, column: loc.column }));
    }
    frames.append(li);
  }
  const focused = focus !== undefined && r.lines.includes(focus);
  const details = el('details', { open: focused }, el('summary', {}, el('span', { className: 'num', title: r.bytesTitle }, r.bytes), ` in ${r.count} allocation${r.count === '1' ? '' : 's'} · oldest ${r.oldest} `, sparkline(r.sparkline), r.frames[0] ? `  ${r.frames[0].label}` : ''), frames);
  details.dataset.site = r.site ?? '';
  if (focused) details.classList.add('focused');
  return details;
}

function render(): void {
  app.replaceChildren();
  const bar = el('div', { className: 'toolbar' });
  const exportJson = el('button', { textContent: 'Export JSON' });
  exportJson.addEventListener('click', () => vscode.postMessage({ type: 'export', format: 'json' }));
  const exportFolded = el('button', { textContent: 'Export Folded Stacks', className: 'secondary' });
  exportFolded.addEventListener('click', () => vscode.postMessage({ type: 'export', format: 'folded' }));
  if (last?.running) {
    const stop = el('button', { textContent: 'Stop', id: 'stop', title: 'Stop tracing; the figures and CodeLenses stay until Clear Leaks' });
    stop.addEventListener('click', () => {
      stop.disabled = true;
      stop.textContent = 'Stopping…';
      vscode.postMessage({ type: 'stop' });
    });
    bar.append(stop);
  }
  bar.append(exportJson, exportFolded);
  if (last) {
    const totals = totalsText(last.totalBytes, last.totalAllocations, Boolean(last.sampleBytes));
    const sampled = last.sampleBytes ? ` · estimates from sampling every ~${last.sampleBytes} bytes (± one standard error)` : '';
    bar.append(el('span', { className: 'status', title: totals.title }, `${last.title} · ${last.running ? 'tracing' : 'stopped'} · ${totals.text}${last.dropped ? ` · ${last.dropped} not recorded` : ''}${sampled}`));
  }
  app.append(bar);
  if (!last || last.stacks.length === 0) {
    app.append(el('p', { className: 'status' }, last ? 'No outstanding allocations.' : 'Waiting for the first report…'));
    return;
  }
  if (last.sites?.length) {
    const list = el('ul', { className: 'sites' });
    for (const s of last.sites) {
      const li = el('li', { className: `link site ${s.kind}${s.key === focus ? ' focused' : ''}`, title: s.tooltip }, el('span', { className: 'where' }, siteLabel(s.key)), ` ${s.text}`);
      li.dataset.site = s.key;
      li.addEventListener('click', () => {
        focus = s.key;
        vscode.postMessage({ type: 'openFrame', file: s.file, line: s.line });
        render();
      });
      list.append(li);
    }
    app.append(el('h4', { textContent: 'Workspace lines' }), list);
    app.append(el('h4', { textContent: 'Stacks' }));
  }
  for (const r of toRows(last.stacks)) app.append(rowElement(r));
  document.querySelector('.focused')?.scrollIntoView({ block: 'center' });
}

addStyle(`polyline.spark { fill: none; stroke: var(--vscode-charts-orange, orange); stroke-width: 1.5; }
details { border-bottom: 1px solid var(--vscode-panel-border); padding: 3px 0; }
details.focused > summary { background: var(--vscode-editor-findMatchHighlightBackground); }
summary { cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
summary svg { vertical-align: middle; }
.num { font-variant-numeric: tabular-nums; font-weight: bold; }
ol.frames { margin: 2px 0 6px 0; font-family: var(--vscode-editor-font-family); }
li.link { cursor: pointer; color: var(--vscode-textLink-foreground); }
li.link:hover { text-decoration: underline; }
ul.sites { margin: 2px 0 6px 0; padding-left: 1em; list-style: none; }
ul.sites li.focused { background: var(--vscode-editor-findMatchHighlightBackground); }
ul.sites .where { font-family: var(--vscode-editor-font-family); display: inline-block; min-width: 12ch; }
h4 { margin: 8px 0 2px 0; }`);

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  if (m.type === 'snapshot') {
    last = m;
    if (m.sessionKey) vscode.setState({ sessionKey: m.sessionKey });
  } else if (m.type === 'focus') focus = m.site;
  else if (m.type === 'cleared') last = undefined;
  render();
});
render();
vscode.postMessage({ type: 'ready' });
