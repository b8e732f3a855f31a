// The Java GC view: toolbar (Stop, Clear, Export JSON/CSV), summary cards, a duration histogram
// stacked by collector, the timeline, a table per collector (the JVM's own counts), safepoints
// and the per-pool table, redrawn at most once per frame. Every figure comes from GcLive's running
// aggregates, so a redraw costs the same however long the session has run; each number has its
// meaning in a tooltip (title) or a legend line.
import { formatDuration } from '../../extension/model/log2hist';
import { formatCount } from '../../extension/model/units';
import { formatReclaim, formatSize } from '../../extension/model/javaGcStats';
import { bucketAt, drawHistogram, themeColor, type HistogramLayout } from '../common/histogramChart';
import { connectHost, el, oncePerFrame } from '../common/viewPage';
import { GcModel } from './model';
import type { FromView, ToView } from './protocol';
import { drawTimeline, markAt, type TimelineLayout } from './timelineChart';

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
const countLine = el('div', { id: 'jvm-counts' });
const cards = el('div', { class: 'cards', id: 'cards' });
const histCanvas = el('canvas', { id: 'histogram', 'aria-label': 'GC pause histogram' });
const timeCanvas = el('canvas', { id: 'timeline', 'aria-label': 'GC pause timeline' });
const histLegend = el('div', { class: 'legend', id: 'histogram-legend' }, 'Bars: collections per duration bucket (log2: each bucket spans twice the one before), stacked by collector. Hover a bar for its range and counts.');
const timeLegend = el('div', { class: 'legend', id: 'timeline-legend' }, 'Each mark is the longest pause in its interval, colored by collector; full collections have a lane and scale of their own. Hover a mark for its figures.');
const quantileNote = el('div', { class: 'legend', id: 'quantile-note' });
const poolTable = el('table', { id: 'pools' });
const phaseTitle = el('h2', {}, 'Pause phases');
const phaseTable = el('table', { id: 'phases' });
const collectorTable = el('table', { id: 'collectors' });
const safepointLine = el('div', { id: 'safepoints' });
const tooltip = el('div', { class: 'tooltip' });
tooltip.style.display = 'none';
app.append(toolbar, lostLine, countLine, cards, quantileNote, el('h2', {}, 'Collectors'), collectorTable, el('h2', {}, 'Durations by collector'), histCanvas, histLegend, el('h2', {}, 'Pause timeline'), timeCanvas, timeLegend, el('h2', {}, 'Safepoints'), safepointLine, el('h2', {}, 'Memory pools'), poolTable, phaseTitle, phaseTable, tooltip);

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

/** One color per collector, stable in first-seen order (looked up once per render). */
let colorOf = new Map<string, string>();
function collectorColor(collector: string): string {
  return colorOf.get(collector) ?? PALETTE[0][1];
}
function refreshColors(): void {
  colorOf = new Map(model.live.collectorNames().map((c, i) => [c, themeColor(...PALETTE[i % PALETTE.length])]));
}

function colors() {
  return { young: themeColor('--vscode-charts-blue', '#3794ff'), full: themeColor('--vscode-charts-red', '#f14c4c'), of: collectorColor };
}

function card(label: string, value: string, id: string, meaning: string): HTMLElement {
  const c = el('div', { class: 'card', id: `card-${id}`, title: meaning });
  c.append(el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  return c;
}

function statusText(): string {
  const who = model.target || (model.pids.length ? `pid ${model.pids.join(', ')}` : '');
  switch (model.state) {
    case 'running':
      return stopping ? 'Stopping…' : `Tracing ${who}`;
    case 'target-exited':
      return `Process exited${model.message ? `: ${model.message}` : ''} (data kept)`;
    case 'stopped':
      return `Stopped${who ? ` (${who})` : ''}${model.message ? `: ${model.message}` : ''}`;
    case 'error':
      return `Ended: ${model.message || 'error'} (data kept)`;
  }
}

let histLayout: HistogramLayout | undefined;
let timeLayout: TimelineLayout | undefined;
let histData = model.histogram();
let exportNote = '';

function render(): void {
  status.textContent = exportNote ? `${statusText()} — ${exportNote}` : statusText();
  stopBtn.disabled = model.state !== 'running' || stopping;
  refreshColors();
  lostLine.textContent = model.lost > 0 ? `${model.lost} events lost (the kernel dropped them: buffer or in-flight map full)` : '';
  const counts = model.jvmCountLine();
  countLine.textContent = counts.text;
  countLine.className = counts.bad ? 'warning' : '';
  const s = model.summary();
  const d = (ns: number) => (s.count ? formatDuration(ns, 'ns') : '–');
  const q = model.exactQuantiles ? '' : '≈ ';
  const dq = (ns: number) => (s.count ? q + formatDuration(ns, 'ns') : '–');
  cards.replaceChildren(
    card('Collections', formatCount(s.count), 'count', 'Collections the JVM ran, as its GarbageCollectorMXBeans count them (every collector, concurrent cycles included)'),
    card('Stop-the-world pauses', formatCount(s.pauseCount), 'pauses', 'Collections that stopped every Java thread; the durations on this row are theirs (a concurrent cycle runs beside the application and is no pause)'),
    card('Total pause', d(s.totalPauseNs), 'total', 'Time Java threads were stopped for GC, summed over the pauses'),
    card('GC overhead', `${s.overheadPercent.toFixed(s.overheadPercent < 10 ? 2 : 1)} %`, 'overhead', 'Total pause as a share of the wall time since the start (or the last Clear)'),
    card('p50 pause', dq(s.p50Ns), 'p50', 'Half of the pauses were shorter than this'),
    card('p90 pause', dq(s.p90Ns), 'p90', '90 % of the pauses were shorter than this'),
    card('p99 pause', dq(s.p99Ns), 'p99', '99 % of the pauses were shorter than this'),
    card('Longest pause', d(s.maxNs), 'max', 'The longest pause so far'),
  );
  quantileNote.textContent = q ? 'Figures marked ≈ come from fine-grained buckets (within 1.6 % of the exact value): past 4,096 pauses the view keeps running totals instead of every pause, so it stays fast however long it runs.' : '';
  const c = colors();
  histData = model.histogram();
  histLayout = drawHistogram(histCanvas, {
    yTitle: 'collections',
    xTitle: 'duration (log2 buckets, lower bound shown)',
    labels: histData.labels,
    series: histData.series.map((x) => ({ name: x.collector, color: c.of(x.collector), counts: x.counts })),
  });
  const chead = el('tr');
  const ctitles: [string, string, string][] = [
    ['Collector', '', 'The memory manager (GarbageCollectorMXBean name)'],
    ['Kind', '', 'young, full, concurrent-pause (a stop-the-world phase of a concurrent collector), concurrent-cycle (no pause), degenerated'],
    ['Count', 'num', 'Collections by this manager'],
    ['Escalated', 'num', 'Collections that followed another in the same pause: a young collection that could not finish became this one (e.g. a full GC after a failed young GC)'],
    ['Total', 'num', 'Summed duration of its collections'],
    ['p50', 'num', 'Median duration'],
    ['p99', 'num', '99 % of its collections were shorter than this'],
    ['max', 'num', 'Longest collection'],
  ];
  for (const [t, cls, title] of ctitles) chead.append(el('th', cls ? { class: cls, title } : { title }, t));
  const crows = model.collectors().map((x) => {
    const tr = el('tr');
    const name = el('td', {}, x.collector);
    name.style.borderLeft = `4px solid ${c.of(x.collector)}`;
    tr.append(name, el('td', {}, x.kind), el('td', { class: 'num' }, formatCount(x.count)), el('td', { class: 'num' }, formatCount(x.escalated)), ...[x.totalNs, x.p50Ns, x.p99Ns, x.maxNs].map((v, k) => el('td', { class: 'num' }, (k === 1 || k === 2 ? q : '') + formatDuration(v, 'ns'))));
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
  timeLayout = drawTimeline(timeCanvas, model.timeline(), model.wallNs / 1e9, c);
  const head = el('tr');
  const ptitles: [string, string, string][] = [
    ['Pool', '', 'A memory pool the JVM reports (heap pools first, then non-heap)'],
    ['Last GC: before', 'num', 'Used bytes at the start of the most recent GC that reported the pool'],
    ['→ after', 'num', 'Used bytes at its end'],
    ['Committed', 'num', 'Bytes the JVM has reserved for the pool after that GC'],
    ['Reclaimed, all GCs', 'num', 'Sum over every GC of used before − used after; "grew" when GCs added to the pool (promotion into the old generation)'],
    ['Changed by', 'num', 'GCs after which the pool held a different amount than before, of the GCs that reported it (a collector reports every pool it manages, changed or not)'],
  ];
  for (const [t, cls, title] of ptitles) head.append(el('th', cls ? { class: cls, title } : { title }, t));
  const rows = model.pools().map((p) => {
    const tr = el('tr');
    tr.append(el('td', {}, p.name), el('td', { class: 'num' }, formatSize(p.lastBefore)), el('td', { class: 'num' }, formatSize(p.lastAfter)), el('td', { class: 'num' }, formatSize(p.lastCommitted)), el('td', { class: 'num' }, formatReclaim(p.totalReclaimed)), el('td', { class: 'num', title: `${formatCount(p.changed)} of the ${formatCount(p.gcs)} GCs that reported this pool changed it` }, `${formatCount(p.changed)} of ${formatCount(p.gcs)} GCs`));
    return tr;
  });
  poolTable.replaceChildren(head, ...rows);
  renderPhases();
}

/** Where pause time went by phase: only a Flight Recording's pauses carry phases (the live tracer's do not). */
function renderPhases(): void {
  const phases = model.phases().slice(0, 15);
  phaseTitle.style.display = phaseTable.style.display = phases.length ? '' : 'none';
  if (!phases.length) return;
  const head = el('tr');
  for (const [t, cls, title] of [
    ['Phase', '', 'A phase of the pauses (jdk.GCPhasePauseLevel1 in the recording)'],
    ['Count', 'num', 'Pauses that ran it'],
    ['Total', 'num', 'Its time, summed over those pauses'],
    ['Share', 'num', 'Of the pause time of the pauses with phases'],
  ] as const)
    head.append(el('th', cls ? { class: cls, title } : { title }, t));
  const rows = phases.map((p) => {
    const tr = el('tr');
    tr.append(el('td', {}, p.name), el('td', { class: 'num' }, formatCount(p.count)), el('td', { class: 'num' }, formatDuration(p.totalNs, 'ns')), el('td', { class: 'num' }, `${p.share.toFixed(1)} %`));
    return tr;
  });
  phaseTable.replaceChildren(head, ...rows);
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
timeCanvas.addEventListener('mousemove', (ev) => {
  const r = timeCanvas.getBoundingClientRect();
  const m = timeLayout ? markAt(timeLayout, ev.clientX - r.left, ev.clientY - r.top) : undefined;
  if (!m) {
    tooltip.style.display = 'none';
    return;
  }
  const t = m.mark;
  const binS = model.timeline().binS;
  tooltip.textContent = [`${t.t.toFixed(binS < 1 ? 2 : 0)} s – ${(t.t + binS).toFixed(binS < 1 ? 2 : 0)} s`, `${formatCount(t.count)} ${t.full ? 'full collection' : 'pause'}${t.count === 1 ? '' : 's'}`, `longest: ${formatDuration(t.durationNs, 'ns')} (${t.collector})`].join('\n');
  tooltip.style.left = `${ev.clientX + 12}px`;
  tooltip.style.top = `${ev.clientY + 12}px`;
  tooltip.style.display = 'block';
});
timeCanvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
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

render();
vscode.postMessage({ type: 'ready' });
