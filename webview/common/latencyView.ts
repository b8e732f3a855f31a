// The latency view of every log2-histogram tracer: toolbar (Stop, Clear, Export JSON),
// p50/p90/p99/max cards, the session's (or a clicked interval's) log2 histogram, the latency heat
// map and, in per-key scopes, a sortable table of keys whose rows expand to their own histogram.
// Its nouns ("waits", "I/Os", what the axis measures) are the tracer's, from the catalog; each
// tracer's bundle (webview/<view>/main.ts) is one call of startLatencyView().
import { formatDuration } from '../../extension/model/log2hist';
import { bucketAt, drawHistogram, themeColor, type HistogramLayout } from '../common/histogramChart';
import { connectHost, el, oncePerFrame } from '../common/viewPage';
import { drawHeatMap, drawHeatScale, heatColumnsFor } from './heatMapChart';
import { CATALOG, histogramOf, isHistogramTracer, type HistogramNouns, type HistogramTracer } from '../../extension/protocol/catalog';
import { formatCount } from '../../extension/model/units';
import { MAX_KEYS, OTHER_KEY } from '../../extension/model/histLive';
import { bucketRange, heatCellAt, LatencyModel, type HeatLayout, type HeatMap, type HistogramBars, type KeyRow, type SortKey } from './latencyModel';
import type { FromView, ToView } from './latencyProtocol';

const vscode = connectHost<FromView>();
const model = new LatencyModel('runqlat');
/** the tracer's nouns (set when the extension's init names the tracer) */
let nouns: HistogramNouns = histogramOf('runqlat');
/** "wait" from "waits": the cards' labels */
const one = () => nouns.events.replace(/s$/, '');
/** Rows drawn in the key table; per-thread scopes can have thousands of keys. */
const MAX_ROWS = 200;

const app = document.getElementById('app')!;
const stopBtn = el('button', { id: 'stop' }, 'Stop');
const clearBtn = el('button', { id: 'clear', class: 'secondary' }, 'Clear');
const exportBtn = el('button', { id: 'export-json', class: 'secondary' }, 'Export JSON');
const status = el('span', { class: 'status', id: 'status' }, 'Waiting for the first interval…');
const toolbar = el('div', { class: 'toolbar' });
toolbar.append(stopBtn, clearBtn, exportBtn, status);
const lostLine = el('div', { class: 'warning', id: 'lost' });
const cards = el('div', { class: 'cards', id: 'cards' });
const histTitle = el('h2', { id: 'hist-title' });
const backBtn = el('button', { class: 'secondary', id: 'cumulative' }, 'Show whole session');
const histHead = el('div', { class: 'toolbar' });
histHead.append(histTitle, backBtn);
const histCanvas = el('canvas', { id: 'histogram' });
const heatCanvas = el('canvas', { id: 'heatmap' });
const heatScale = el('canvas', { id: 'heat-scale', 'aria-label': 'heat map color scale' });
const heatLegend = el('div', { class: 'legend', id: 'heat-legend' });
const histLegend = el('div', { class: 'legend', id: 'hist-legend' });
const keySection = el('div', { id: 'keys' });
const sortSelect = el('select', { id: 'sort' });
sortSelect.append(el('option', { value: 'p99' }, 'sort by p99'), el('option', { value: 'count' }, 'sort by count'));
const keyTable = el('table', { id: 'key-table' });
const keyNote = el('div', { class: 'status' });
const keyHead = el('div', { class: 'toolbar' });
keyHead.append(el('h2', { id: 'keys-title' }), sortSelect);
keySection.append(keyHead, keyTable, keyNote);
const tooltip = el('div', { class: 'tooltip' });
tooltip.style.display = 'none';
app.append(toolbar, lostLine, cards, histHead, histCanvas, histLegend, el('h2', {}, 'Heat map (click a column for its histogram)'), heatScale, heatCanvas, heatLegend, keySection, tooltip);

stopBtn.onclick = () => {
  // Says at once that the click landed; the status changes again when the session has ended.
  stopping = true;
  stopBtn.disabled = true;
  status.textContent = 'Stopping…';
  vscode.postMessage({ type: 'stop' });
};
let stopping = false;
clearBtn.onclick = () => {
  model.clear();
  schedule();
};
exportBtn.onclick = () => vscode.postMessage({ type: 'export', content: JSON.stringify(model.toResult(), null, 2) });
backBtn.onclick = () => {
  model.select(undefined);
  schedule();
};
sortSelect.onchange = () => {
  model.sortBy = sortSelect.value as SortKey;
  schedule();
};

const fmt = (v: number) => formatDuration(v, model.unit);

function statusText(): string {
  switch (model.state) {
    case 'running':
      return stopping ? 'Stopping…' : `Tracing ${model.scope}`;
    case 'target-exited':
      return `Process exited${model.message ? `: ${model.message}` : ''} (data kept)`;
    case 'stopped':
      return `Stopped (${model.scope})${model.message ? `: ${model.message}` : ''}`;
    case 'error':
      return `Ended: ${model.message || 'error'} (data kept)`;
  }
}

function card(label: string, value: string, id: string, meaning: string): HTMLElement {
  const c = el('div', { class: 'card', id: `card-${id}`, title: meaning });
  c.append(el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  return c;
}

function paintHistogram(canvas: HTMLCanvasElement, bars: HistogramBars, height: number): HistogramLayout {
  return drawHistogram(canvas, { yTitle: nouns.events, xTitle: `${nouns.measure} (log2 buckets, lower bound shown)`, labels: bars.labels, series: [{ name: nouns.events, color: themeColor('--vscode-charts-blue', '#3794ff'), counts: bars.counts }] }, height);
}

function showTip(ev: MouseEvent, text: string): void {
  tooltip.textContent = text;
  tooltip.style.left = `${ev.clientX + 12}px`;
  tooltip.style.top = `${ev.clientY + 12}px`;
  tooltip.style.display = 'block';
}

function barTip(bars: HistogramBars, i: number): string {
  return `${bucketRange(i, model.unit)}\ncount: ${bars.counts[i]}\n${bars.percent[i].toFixed(1)} % of ${nouns.events}\n${bars.cumPercent[i].toFixed(1)} % at or below`;
}

/** Tooltips for a histogram canvas: the bars and layout are read at hover time. */
function hoverHistogram(canvas: HTMLCanvasElement, current: () => { bars: HistogramBars; layout?: HistogramLayout }): void {
  canvas.addEventListener('mousemove', (ev) => {
    const { bars, layout } = current();
    const r = canvas.getBoundingClientRect();
    const i = layout ? bucketAt(layout, bars.labels.length, ev.clientX - r.left, ev.clientY - r.top) : -1;
    if (i < 0 || bars.total === 0) tooltip.style.display = 'none';
    else showTip(ev, barTip(bars, i));
  });
  canvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
}

let histBars = model.histogram();
let histLayout: HistogramLayout | undefined;
let heat: HeatMap = model.heatMap(10);
let heatGeom: HeatLayout | undefined;
let exportNote = '';

function renderKeys(): void {
  keySection.style.display = model.per === 'none' ? 'none' : '';
  if (model.per === 'none') return;
  const label = model.keyLabel();
  document.getElementById('keys-title')!.textContent = `Per ${model.keyNoun()} (${model.keys.size})`;
  const rows = model.keyRows();
  const other = model.keys.has(OTHER_KEY) ? ` Only the first ${MAX_KEYS.toLocaleString('en-US')} keys have a row: the ${nouns.events} of later ones are summed in the "other" row (bounded memory however many keys come and go).` : '';
  keyNote.textContent = (rows.length > MAX_ROWS ? `Showing ${MAX_ROWS} of ${rows.length}; export for all.` : '') + other;
  const names = model.showsNames(rows);
  if (model.expanded.size === 0) {
    renderPlainKeys(rows.slice(0, MAX_ROWS), label, names);
    return;
  }
  plain = undefined;
  const cols = keyColumns(label, names);
  const body: HTMLElement[] = [keyHeadRow(cols)];
  for (const r of rows.slice(0, MAX_ROWS)) {
    const open = model.expanded.has(r.key);
    const tr = el('tr', { class: 'key-row', 'data-key': String(r.key) });
    tr.style.cursor = 'pointer';
    const texts = rowTexts(r, names, open ? '▾' : '▸');
    tr.append(...cols.map(([, cls], k) => el('td', cls ? { class: cls } : {}, texts[k])));
    tr.onclick = () => {
      if (open) model.expanded.delete(r.key);
      else model.expanded.add(r.key);
      schedule();
    };
    body.push(tr);
    if (open) {
      const cell = el('td', { colspan: String(cols.length) });
      const canvas = el('canvas', { class: 'key-histogram' });
      cell.append(canvas);
      const holder = el('tr');
      holder.append(cell);
      body.push(holder);
      const bars = model.histogram(r.counts);
      // Painted after insertion so the canvas has its width.
      requestAnimationFrame(() => {
        const layout = paintHistogram(canvas, bars, 140);
        hoverHistogram(canvas, () => ({ bars, layout }));
      });
    }
  }
  keyTable.replaceChildren(...body);
}

/** The key table's columns (header, cell class, header tooltip); the name column only where some
 * key's name says more than the key (a pid's command), not where it repeats it (an address). */
function keyColumns(label: string, names: boolean): [string, string, string][] {
  return [
    ['', '', 'Click a row for its histogram'],
    [label, 'num', `The ${label} the ${nouns.events} were counted under`],
    ...(names ? [['name', '', 'What the kernel calls it: a process’s command, a disk’s name'] as [string, string, string]] : []),
    ['count', 'num', `Its ${nouns.events}: ${nouns.meaning}`],
    ['p50', 'num', `Half of its ${nouns.events} were shorter (estimated from log2 buckets)`],
    ['p90', 'num', `90 % of its ${nouns.events} were shorter (estimated from log2 buckets)`],
    ['p99', 'num', `99 % of its ${nouns.events} were shorter (estimated from log2 buckets)`],
    ['max ≤', 'num', `Its longest ${one()} was at most this (upper bound of its highest bucket)`],
  ];
}

/** A row's cell texts, in keyColumns' order. */
function rowTexts(r: KeyRow, names: boolean, arrow: string): string[] {
  return [arrow, r.label, ...(names ? [r.name] : []), formatCount(r.count), fmt(r.p50), fmt(r.p90), fmt(r.p99), fmt(r.max)];
}

function keyHeadRow(cols: [string, string, string][]): HTMLTableRowElement {
  const head = el('tr');
  for (const [t, cls, title] of cols) head.append(el('th', cls ? { class: cls, title } : { title }, t));
  return head;
}

/** The table while no row is expanded: rows and cells are reused and only changed text is set,
 * so a live update does not rebuild (and lay out again) the whole table every second. */
let plain: { layout: string; head: HTMLTableRowElement; rows: { tr: HTMLTableRowElement; cells: HTMLTableCellElement[] }[] } | undefined;

/** Whether each table row is on screen (IntersectionObserver; unknown until first reported, then drawn). */
const rowOnScreen = new WeakMap<Element, boolean>();
/** Texts of rows that changed while off screen, set when they come into view. */
const staleRows = new WeakMap<Element, string[]>();
const rowObserver = new IntersectionObserver((entries) => {
  for (const e of entries) {
    rowOnScreen.set(e.target, e.isIntersecting);
    const texts = e.isIntersecting ? staleRows.get(e.target) : undefined;
    if (!texts) continue;
    staleRows.delete(e.target);
    setTexts([...e.target.children] as HTMLElement[], texts);
  }
});

function setTexts(cells: HTMLElement[], texts: string[]): void {
  texts.forEach((t, k) => {
    if (cells[k] && cells[k].textContent !== t) cells[k].textContent = t;
  });
}

function renderPlainKeys(rows: KeyRow[], label: string, names: boolean): void {
  const cols = keyColumns(label, names);
  // a name column that appears (an IPv6 peer among addresses) lays the rows out anew
  const layout = `${label}\n${names}`;
  if (!plain || plain.layout !== layout) plain = { layout, head: keyHeadRow(cols), rows: [] };
  const p = plain;
  while (p.rows.length < rows.length) {
    const tr = el('tr', { class: 'key-row' });
    tr.style.cursor = 'pointer';
    const cells = cols.map(([, cls]) => el('td', cls ? { class: cls } : {}));
    tr.append(...cells);
    tr.onclick = () => {
      model.expanded.add(Number(tr.dataset.key));
      schedule();
    };
    p.rows.push({ tr, cells });
    rowObserver.observe(tr);
  }
  rows.forEach((r, i) => {
    const { tr, cells } = p.rows[i];
    if (tr.dataset.key !== String(r.key)) tr.dataset.key = String(r.key);
    const texts = rowTexts(r, names, '▸');
    // A row off screen keeps its texts for when it scrolls into view: a live update then costs
    // the rows on screen, not every row of the table.
    if (rowOnScreen.get(tr) === false) staleRows.set(tr, texts);
    else {
      staleRows.delete(tr);
      setTexts(cells, texts);
    }
  });
  const want = rows.length + 1;
  if (keyTable.firstChild !== p.head || keyTable.childElementCount !== want) keyTable.replaceChildren(p.head, ...p.rows.slice(0, rows.length).map((r) => r.tr));
}

function render(): void {
  status.textContent = exportNote ? `${statusText()} — ${exportNote}` : statusText();
  stopBtn.disabled = model.state !== 'running' || stopping;
  lostLine.textContent = model.dropped > 0 ? `${model.dropped} events lost (a kernel map was full: too many in flight or too many keys at once)` : '';
  const s = model.stats();
  const d = (v: number) => (s.count ? fmt(v) : '–');
  const est = `estimated from the log2 buckets (the kernel counts ${nouns.events} per bucket, not each ${one()})`;
  // The cards are built once and their values set in place (no new elements per update).
  const values: [string, string, string, string][] = [
    [nouns.events, formatCount(s.count), 'count', `${nouns.events}: ${nouns.meaning}`],
    [`p50 ${one()}`, d(s.p50), 'p50', `Half of the ${nouns.events} were shorter than this; ${est}`],
    [`p90 ${one()}`, d(s.p90), 'p90', `90 % of the ${nouns.events} were shorter than this; ${est}`],
    [`p99 ${one()}`, d(s.p99), 'p99', `99 % of the ${nouns.events} were shorter than this; ${est}`],
    ['max ≤', d(s.max), 'max', `The longest ${one()} was at most this (the upper bound of the highest non-empty bucket)`],
  ];
  if (cards.childElementCount !== values.length) cards.replaceChildren(...values.map(([label, value, id, meaning]) => card(label, value, id, meaning)));
  values.forEach(([, value], i) => {
    const v = cards.children[i].querySelector('.value')!;
    if (v.textContent !== value) v.textContent = value;
  });
  const sel = model.selected;
  if (sel === undefined) {
    histTitle.textContent = `${CATALOG[model.tracer].title}, whole session (${model.intervals.length} intervals)`;
  } else {
    const t0 = model.intervals[0].timestampNs;
    histTitle.textContent = `Interval at ${((model.intervals[sel].timestampNs - t0) / 1e9).toFixed(1)} s`;
  }
  backBtn.style.display = sel === undefined ? 'none' : '';
  histBars = model.histogram();
  histLayout = paintHistogram(histCanvas, histBars, 220);
  const cols = heatColumnsFor(heatCanvas, model.intervals.length);
  heat = model.heatMap(cols);
  heatGeom = drawHeatMap(heatCanvas, heat, cols, model.unit, model.selected);
  drawHeatScale(heatScale, heat.max, model.unit, nouns.events);
  renderKeys();
}

const schedule = oncePerFrame(render);

hoverHistogram(histCanvas, () => ({ bars: histBars, layout: histLayout }));

function heatCell(ev: MouseEvent) {
  const r = heatCanvas.getBoundingClientRect();
  return heatGeom ? heatCellAt(heat, heatGeom, ev.clientX - r.left, ev.clientY - r.top) : undefined;
}
heatCanvas.addEventListener('mousemove', (ev) => {
  const c = heatCell(ev);
  if (!c) {
    tooltip.style.display = 'none';
    return;
  }
  const iv = model.intervals[c.interval];
  const t = (iv.timestampNs - model.intervals[0].timestampNs) / 1e9;
  const n = iv.counts.reduce((a, b) => a + b, 0);
  showTip(ev, `${t.toFixed(1)} s\n${bucketRange(c.bucket, model.unit)}: ${iv.counts[c.bucket] ?? 0}\ninterval total: ${n}`);
});
heatCanvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
heatCanvas.addEventListener('click', (ev) => {
  const c = heatCell(ev);
  model.select(c && c.interval !== model.selected ? c.interval : undefined);
  schedule();
});
window.addEventListener('resize', schedule);

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  switch (m.type) {
    case 'init':
      if (isHistogramTracer(m.tracer)) showTracer(m.tracer);
      model.scope = m.scope;
      model.per = m.per;
      model.unit = m.unit;
      break;
    case 'update':
      model.apply(m.update);
      break;
    case 'restore':
      model.restore(m.state);
      break;
    case 'ended':
      stopping = false;
      model.end(m.reason, m.message);
      break;
    case 'exported':
      exportNote = m.error ? `export failed: ${m.error}` : m.file ? `exported to ${m.file}` : '';
      break;
  }
  schedule();
});

/** The tracer the view shows (its first message says which): its nouns in the titles and legends. */
function showTracer(tracer: HistogramTracer): void {
  model.tracer = tracer;
  nouns = histogramOf(tracer);
  const title = CATALOG[tracer].title.toLowerCase();
  histCanvas.setAttribute('aria-label', `${title} histogram`);
  heatCanvas.setAttribute('aria-label', `${title} heat map`);
  heatLegend.textContent = `x: time (one column per interval, newest right); y: ${nouns.measure} (log2 buckets); shade: how many ${nouns.events} fell in the cell (log scale, above).`;
  histLegend.textContent = `Bars: ${nouns.events} (${nouns.meaning}) per latency bucket; each bucket spans twice the one before. Hover a bar for its range and share.`;
  // the cards and the key table's head are built once, in the nouns of their time
  cards.replaceChildren();
  plain = undefined;
}

/** Starts the view: `ready` to the extension, whose `init` names the tracer. */
export function startLatencyView(): void {
  render();
  vscode.postMessage({ type: 'ready' });
}
