// The Java GC view: toolbar (Stop, Clear, Export JSON/CSV), summary cards, a duration histogram
// stacked by collector, the timeline, a table per collector (the JVM's own counts), safepoints
// and the per-pool table, redrawn at most once per frame.
import { formatDuration } from '../../extension/model/log2hist';
import { formatReclaim, formatSize } from '../../extension/model/javaGcStats';
import { bucketAt, drawHistogram, themeColor, type HistogramLayout } from '../common/histogramChart';
import { connectHost, el, oncePerFrame } from '../common/viewPage';
import { GcModel } from './model';
import type { FromView, ToView } from './protocol';
import { drawTimeline } from './timelineChart';

const vscode = connectHost<FromView>();
const model = new GcModel();

const app = document.getElementById('app')!;
const toolbar = el('div', { class: 'toolbar' });
const stopBtn = el('button', { id: 'stop' }, 'Stop');
const clearBtn = el('button', { id: 'clear', class: 'secondary' }, 'Clear');
const jsonBtn = el('button', { id: 'export-json', class: 'secondary' }, 'Export JSON');
const csvBtn = el('button', { id: 'export-csv', class: 'secondary' }, 'Export CSV');
const status = el('span', { class: 'status', id: 'status' }, 'Waiting for GCs…');
toolbar.append(stopBtn, clearBtn, jsonBtn, csvBtn, status);
const lostLine = el('div', { class: 'warning', id: 'lost' });
const cards = el('div', { class: 'cards', id: 'cards' });
const histCanvas = el('canvas', { id: 'histogram', 'aria-label': 'GC pause histogram' });
const timeCanvas = el('canvas', { id: 'timeline', 'aria-label': 'GC pause timeline' });
const poolTable = el('table', { id: 'pools' });
const collectorTable = el('table', { id: 'collectors' });
const safepointLine = el('div', { id: 'safepoints' });
const tooltip = el('div', { class: 'tooltip' });
tooltip.style.display = 'none';
app.append(toolbar, lostLine, cards, el('h2', {}, 'Collectors'), collectorTable, el('h2', {}, 'Durations by collector'), histCanvas, el('h2', {}, 'Pause timeline'), timeCanvas, el('h2', {}, 'Safepoints'), safepointLine, el('h2', {}, 'Memory pools'), poolTable, tooltip);

stopBtn.onclick = () => vscode.postMessage({ type: 'stop' });
clearBtn.onclick = () => {
  model.clear();
  schedule();
};
jsonBtn.onclick = () => vscode.postMessage({ type: 'export', format: 'json', content: model.toJson() });
csvBtn.onclick = () => vscode.postMessage({ type: 'export', format: 'csv', content: model.toCsv() });

const PALETTE: [string, string][] = [
  ['--vscode-charts-blue', '#3794ff'],
  ['--vscode-charts-red', '#f14c4c'],
  ['--vscode-charts-orange', '#d18616'],
  ['--vscode-charts-green', '#89d185'],
  ['--vscode-charts-purple', '#b180d7'],
  ['--vscode-charts-yellow', '#cca700'],
];

/** One color per collector, stable in first-seen order. */
function collectorColor(collector: string): string {
  const i = model.collectors().findIndex((c) => c.collector === collector);
  const [v, f] = PALETTE[Math.max(0, i) % PALETTE.length];
  return themeColor(v, f);
}

function colors() {
  return { young: themeColor('--vscode-charts-blue', '#3794ff'), full: themeColor('--vscode-charts-red', '#f14c4c'), of: collectorColor };
}

function card(label: string, value: string, id: string): HTMLElement {
  const c = el('div', { class: 'card', id: `card-${id}` });
  c.append(el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  return c;
}

function statusText(): string {
  const who = model.target || (model.pids.length ? `pid ${model.pids.join(', ')}` : '');
  switch (model.state) {
    case 'running':
      return `Tracing ${who}`;
    case 'target-exited':
      return `Process exited${model.message ? `: ${model.message}` : ''} (data kept)`;
    case 'stopped':
      return `Stopped${who ? ` (${who})` : ''}`;
    case 'error':
      return `Ended: ${model.message || 'error'} (data kept)`;
  }
}

let histLayout: HistogramLayout | undefined;
let histData = model.histogram();
let exportNote = '';

function render(): void {
  status.textContent = exportNote ? `${statusText()} — ${exportNote}` : statusText();
  stopBtn.disabled = model.state !== 'running';
  lostLine.textContent = model.lost > 0 ? `${model.lost} events lost (the kernel dropped them: buffer or in-flight map full)` : '';
  const s = model.summary();
  const d = (ns: number) => (s.count ? formatDuration(ns, 'ns') : '–');
  cards.replaceChildren(
    card('Collections (pauses)', `${s.count} (${s.pauseCount})`, 'count'),
    card('Total pause', d(s.totalPauseNs), 'total'),
    card('GC overhead', `${s.overheadPercent.toFixed(s.overheadPercent < 10 ? 2 : 1)} %`, 'overhead'),
    card('p50', d(s.p50Ns), 'p50'),
    card('p90', d(s.p90Ns), 'p90'),
    card('p99', d(s.p99Ns), 'p99'),
    card('max', d(s.maxNs), 'max'),
  );
  const c = colors();
  histData = model.histogram();
  histLayout = drawHistogram(histCanvas, {
    labels: histData.labels,
    series: histData.series.map((x) => ({ name: x.collector, color: c.of(x.collector), counts: x.counts })),
  });
  const chead = el('tr');
  for (const [t, cls] of [['Collector', ''], ['Kind', ''], ['Count', 'num'], ['Escalated', 'num'], ['Total', 'num'], ['p50', 'num'], ['p99', 'num'], ['max', 'num']]) chead.append(el('th', cls ? { class: cls } : {}, t));
  const crows = model.collectors().map((x) => {
    const tr = el('tr');
    const name = el('td', {}, x.collector);
    name.style.borderLeft = `4px solid ${c.of(x.collector)}`;
    tr.append(name, el('td', {}, x.kind), el('td', { class: 'num' }, String(x.count)), el('td', { class: 'num' }, String(x.escalated)), ...[x.totalNs, x.p50Ns, x.p99Ns, x.maxNs].map((v) => el('td', { class: 'num' }, formatDuration(v, 'ns'))));
    return tr;
  });
  collectorTable.replaceChildren(chead, ...crows);
  if (model.safepointsAvailable === false) safepointLine.textContent = `Not available: ${model.safepointsReason}`;
  else {
    const sp = model.safepointSummary();
    safepointLine.textContent = sp.count
      ? `${sp.count} safepoints, ${formatDuration(sp.totalNs, 'ns')} in total. Time to safepoint p50 ${formatDuration(sp.ttsP50Ns, 'ns')}, p99 ${formatDuration(sp.ttsP99Ns, 'ns')}, max ${formatDuration(sp.ttsMaxNs, 'ns')}; duration p50 ${formatDuration(sp.p50Ns, 'ns')}, p99 ${formatDuration(sp.p99Ns, 'ns')}, max ${formatDuration(sp.maxNs, 'ns')}`
      : 'No safepoint yet.';
  }
  drawTimeline(timeCanvas, model.timeline(), model.wallNs / 1e9, c);
  const head = el('tr');
  for (const [t, cls] of [['Pool', ''], ['Last GC: before', 'num'], ['→ after', 'num'], ['Committed', 'num'], ['Reclaimed, all GCs', 'num'], ['GCs', 'num']]) head.append(el('th', cls ? { class: cls } : {}, t));
  const rows = model.pools().map((p) => {
    const tr = el('tr');
    tr.append(el('td', {}, p.name), el('td', { class: 'num' }, formatSize(p.lastBefore)), el('td', { class: 'num' }, formatSize(p.lastAfter)), el('td', { class: 'num' }, formatSize(p.lastCommitted)), el('td', { class: 'num' }, formatReclaim(p.totalReclaimed)), el('td', { class: 'num' }, String(p.gcs)));
    return tr;
  });
  poolTable.replaceChildren(head, ...rows);
}

const schedule = oncePerFrame(render);

histCanvas.addEventListener('mousemove', (ev) => {
  const r = histCanvas.getBoundingClientRect();
  const i = histLayout ? bucketAt(histLayout, histData.labels.length, ev.clientX - r.left, ev.clientY - r.top) : -1;
  if (i < 0) {
    tooltip.style.display = 'none';
    return;
  }
  const low = histData.lowUs[i];
  const high = low === 0 ? 0 : low * 2 - 1;
  tooltip.textContent = [`${formatDuration(low, 'us')} – ${formatDuration(high, 'us')}`, ...histData.series.map((x) => `${x.collector}: ${x.counts[i]}`)].join('\n');
  tooltip.style.left = `${ev.clientX + 12}px`;
  tooltip.style.top = `${ev.clientY + 12}px`;
  tooltip.style.display = 'block';
});
histCanvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
window.addEventListener('resize', schedule);

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  switch (m.type) {
    case 'init':
      model.target = m.target;
      break;
    case 'update':
      model.apply(m.update);
      break;
    case 'ended':
      model.end(m.reason, m.message);
      break;
    case 'exported':
      exportNote = m.error ? `export failed: ${m.error}` : m.file ? `exported to ${m.file}` : '';
      break;
  }
  schedule();
});

render();
vscode.postMessage({ type: 'ready' });
