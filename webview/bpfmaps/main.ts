// The map view of "Run BPF Program": one section per map — tables for hashes/arrays, log2
// histograms (canvas, via webview/common/histogramChart) for maps annotated `@sample log2_hist`
// or shaped like bcc's struct hist, and the newest ring-buffer records as a table.
import type { HistogramView, MapView, RingbufView, TableView } from '../../extension/protocol/bpfRun';
import { drawHistogram, themeColor } from '../common/histogramChart';
import { connectHost, el } from '../common/viewPage';
import type { FromView, ToView } from './protocol';
import { cell, columnsOf, histogramBuckets, tableModel, totalCount } from './model';

const vscode = connectHost<FromView>();
const app = document.getElementById('app')!;

const header = el('div', { class: 'toolbar' });
const title = el('strong');
const stop = el('button');
stop.textContent = 'Stop';
stop.onclick = () => vscode.postMessage({ type: 'stop' });
const status = el('span', { class: 'status' });
header.append(title, stop, status);
const programsBox = el('div');
const mapsBox = el('div');
app.append(header, programsBox, mapsBox);
const sections = new Map<string, HTMLElement>();

function table(headers: string[], rows: string[][], numeric: boolean[] = []): HTMLElement {
  const t = el('table');
  const tr = el('tr');
  headers.forEach((h, i) => tr.append(el('th', numeric[i] ? { class: 'num' } : {}, h)));
  t.append(tr);
  for (const r of rows) {
    const row = el('tr');
    r.forEach((c, i) => row.append(el('td', numeric[i] ? { class: 'num' } : {}, c)));
    t.append(row);
  }
  return t;
}

function sectionFor(view: MapView): HTMLElement {
  let s = sections.get(view.name);
  if (!s) {
    s = el('section');
    s.dataset.map = view.name;
    sections.set(view.name, s);
    mapsBox.append(s);
  }
  s.replaceChildren(el('h2', {}, `${view.name} — ${view.mapType}${view.keyType ? `, key ${view.keyType}` : ''}${view.valueType ? `, value ${view.valueType}` : ''}`));
  return s;
}

function renderHistogram(s: HTMLElement, v: HistogramView): void {
  if (v.series.length === 0) {
    s.append(el('div', { class: 'status' }, 'no entries yet'));
    return;
  }
  const { labels, length } = histogramBuckets(v.series);
  for (const series of v.series.slice(0, 8)) {
    s.append(el('div', { class: 'status' }, `${series.label}: ${totalCount(series.counts)} events`));
    const canvas = document.createElement('canvas');
    canvas.dataset.total = String(totalCount(series.counts));
    s.append(canvas);
    const counts = Array.from({ length }, (_, i) => series.counts[i] ?? 0);
    drawHistogram(canvas, { labels, series: [{ name: series.label, color: themeColor('--vscode-charts-blue', '#3794ff'), counts }] }, 180);
  }
  if (v.series.length > 8) s.append(el('div', { class: 'status' }, `${v.series.length - 8} more keys not drawn`));
}

function renderTable(s: HTMLElement, v: TableView): void {
  const m = tableModel(v);
  s.append(el('div', { class: 'status' }, `${v.entries} entries${v.entries > v.rows.length ? ` (first ${v.rows.length} shown)` : ''}`));
  if (v.rows.length) s.append(table([...m.keyColumns, ...m.valueColumns], m.rows, m.numeric));
}

function renderRingbuf(s: HTMLElement, v: RingbufView): void {
  s.append(el('div', { class: 'status' }, `${v.total} records${v.recordType ? ` of ${v.recordType}` : ' (record type unknown: shown as hex)'}; newest first`));
  const recent = [...v.recent].reverse().slice(0, 50);
  const cols = columnsOf(recent);
  if (recent.length) s.append(table(cols, recent.map((r) => cols.map((c) => cell(r, c)))));
}

function render(maps: MapView[]): void {
  for (const v of maps) {
    const s = sectionFor(v);
    if (v.kind === 'histogram') renderHistogram(s, v);
    else if (v.kind === 'table') renderTable(s, v);
    else if (v.kind === 'ringbuf') renderRingbuf(s, v);
    else s.append(el('div', { class: 'status' }, v.reason));
  }
}

window.addEventListener('message', (e: MessageEvent<ToView>) => {
  const m = e.data;
  if (m.type === 'init') {
    title.textContent = m.object;
    programsBox.replaceChildren(
      table(
        ['program', 'section', 'attached'],
        m.programs.map((p) => [p.name, p.section, p.attached ? `yes${p.detail ? ` — ${p.detail}` : ''}` : `no — ${p.reason ?? ''}`]),
      ),
      ...m.warnings.map((w) => el('div', { class: 'warning' }, w)),
    );
    status.textContent = 'running';
  } else if (m.type === 'update') {
    status.textContent = `running — ${(m.update.atMs / 1000).toFixed(0)} s`;
    render(m.update.maps);
  } else if (m.type === 'ended') {
    stop.disabled = true;
    status.textContent = m.reason === 'stopped' ? 'stopped (programs detached)' : `ended: ${m.message ?? m.reason}`;
    status.className = m.reason === 'error' ? 'status error' : 'status';
  }
});
vscode.postMessage({ type: 'ready' });
