// The function-latency view: Stop, "Profile the slow calls" (measures again with their wall-clock
// profile, a flame graph when that session ends), "Split by caller" (measures again with a row per
// calling function: calls, share, mean, max, total; a row with a source line opens it), the figures of every call so far (count, p50, p90, p99, max,
// calls/s, calls not timed), the live log2 histogram and heat map (the kit's charts) and the slow
// calls, slowest first, each with its stack (a frame with a source line opens it).
import { HistLive } from '../../extension/model/histLive';
import { formatDuration } from '../../extension/model/log2hist';
import { formatCount } from '../../extension/model/units';
import { droppedLine, formatRate, frameText } from '../../extension/model/latencyFormat';
import type { CallerLatency, LatencyStats, SlowCall } from '../../extension/protocol/latency';
import { drawHistogram, themeColor } from '../common/histogramChart';
import { drawHeatMap, drawHeatScale, heatColumnsFor } from '../common/heatMapChart';
import { heatMap, histogramBars } from '../common/latencyModel';
import { connectHost, el, oncePerFrame } from '../common/viewPage';
import type { FromView, ToView } from './protocol';

const host = connectHost<FromView>();
const live = new HistLive();
let unit: 'us' | 'ms' = 'us';
let stats: LatencyStats | undefined;
let thresholdMs = 0;
const slow: SlowCall[] = [];
const MAX_SLOW = 100;

const app = document.getElementById('app')!;
const stopBtn = el('button', { id: 'stop' }, 'Stop');
const profileBtn = el('button', { id: 'profile-slow', title: 'Measure again, profiling on and off CPU only inside the calls slower than the threshold: a flame graph opens when you stop' }, 'Profile the slow calls');
const status = el('span', { class: 'status', id: 'status' }, 'Waiting for the first interval…');
const toolbar = el('div', { class: 'toolbar' });
const callerBtn = el('button', { id: 'by-caller', class: 'secondary', title: 'Measure again with the figures per calling function' }, 'Split by caller');
toolbar.append(stopBtn, profileBtn, callerBtn, status);
let callers: CallerLatency[] = [];
const callerTitle = el('h2', { id: 'caller-title' });
const callerTable = el('table', { id: 'callers' });
const title = el('h2', { id: 'title' });
const cards = el('div', { class: 'cards', id: 'cards' });
const notTimed = el('div', { class: 'warning', id: 'not-timed' });
const histCanvas = el('canvas', { id: 'histogram', 'aria-label': 'latency histogram' });
const heatScale = el('canvas', { id: 'heat-scale', 'aria-label': 'heat map color scale' });
const heatCanvas = el('canvas', { id: 'heatmap', 'aria-label': 'latency heat map' });
const slowTitle = el('h2', { id: 'slow-title' });
const slowList = el('div', { id: 'slow-calls' });
app.append(toolbar, title, cards, notTimed, el('h2', {}, 'Histogram (all calls)'), histCanvas, el('h2', {}, 'Heat map (one column per second)'), heatScale, heatCanvas, callerTitle, callerTable, slowTitle, slowList);

stopBtn.onclick = () => {
  stopBtn.disabled = true;
  status.textContent = 'Stopping…';
  host.postMessage({ type: 'stop' });
};

callerBtn.onclick = () => {
  callerBtn.disabled = true;
  host.postMessage({ type: 'byCaller' });
};

profileBtn.onclick = () => {
  profileBtn.disabled = true;
  host.postMessage({ type: 'profileSlow' });
};

const ns = (v: number) => formatDuration(v, 'ns');

function renderCards(): void {
  cards.replaceChildren();
  if (!stats) return;
  const rows: [string, string][] = [
    ['calls', formatCount(stats.count)],
    ['p50', ns(stats.p50Ns)],
    ['p90', ns(stats.p90Ns)],
    ['p99', ns(stats.p99Ns)],
    ['max', ns(stats.maxNs)],
    ['calls/s', formatRate(stats.callsPerS)],
  ];
  for (const [k, v] of rows) {
    const c = el('div', { class: 'card' });
    c.append(el('div', { class: 'value' }, v), el('div', { class: 'label' }, k));
    cards.append(c);
  }
  notTimed.textContent = droppedLine(stats);
}

function renderSlow(): void {
  slowTitle.textContent = thresholdMs ? `Slow calls (≥ ${thresholdMs} ms): ${slow.length < MAX_SLOW ? slow.length : `the ${MAX_SLOW} slowest`}${stats && stats.slowLost ? `, ${stats.slowLost} not sent` : ''}` : 'Slow calls: no threshold set';
  slowList.replaceChildren(
    ...slow.slice(0, MAX_SLOW).map((c) => {
      const d = el('details', { class: 'slow-call' });
      d.append(el('summary', {}, `${ns(c.durationNs)} · thread ${c.tid}`));
      for (const f of c.stack) {
        const row = el('div', { class: f.file && f.line ? 'frame link' : 'frame' }, frameText(f));
        if (f.file && f.line) row.onclick = () => host.postMessage({ type: 'openFrame', file: f.file!, line: f.line! });
        d.append(row);
      }
      return d;
    }),
  );
}

function renderCallers(): void {
  callerTitle.textContent = callers.length ? `By caller (${callers.length})` : '';
  callerTable.replaceChildren();
  if (!callers.length) return;
  const all = callers.reduce((n, c) => n + c.count, 0);
  const head = el('tr');
  for (const h of ['caller', 'calls', 'share', 'mean', 'max', 'total']) head.append(el('th', {}, h));
  callerTable.append(head);
  for (const c of callers) {
    const row = el('tr', { class: c.file && c.line ? 'link' : '' });
    const name = `${c.caller}${c.sites > 1 ? ` (${c.sites} call sites)` : ''}`;
    row.append(el('td', { title: c.file ? `${c.file}:${c.line ?? ''}` : (c.module ?? '') }, name), el('td', {}, formatCount(c.count)), el('td', {}, `${all ? ((100 * c.count) / all).toFixed(1) : '0'} %`), el('td', {}, ns(c.count ? c.totalNs / c.count : 0)), el('td', {}, ns(c.maxNs)), el('td', {}, ns(c.totalNs)));
    if (c.file && c.line) row.onclick = () => host.postMessage({ type: 'openFrame', file: c.file!, line: c.line! });
    callerTable.append(row);
  }
}

const render = oncePerFrame(() => {
  renderCards();
  renderCallers();
  const bars = histogramBars(live.counts, unit);
  drawHistogram(histCanvas, { yTitle: 'calls', xTitle: 'call duration (log2 buckets, lower bound shown)', labels: bars.labels, series: [{ name: 'calls', color: themeColor('--vscode-charts-blue', '#3794ff'), counts: bars.counts }] });
  const cols = heatColumnsFor(heatCanvas, live.intervals.length);
  const map = heatMap(live.intervals, cols);
  drawHeatScale(heatScale, map.max, unit, 'calls');
  drawHeatMap(heatCanvas, map, cols, unit, undefined);
  renderSlow();
});

window.addEventListener('resize', render);
window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  if (m.type === 'init') {
    title.textContent = m.title;
    unit = m.unit;
    thresholdMs = m.thresholdMs;
    profileBtn.disabled = Boolean(m.profiling);
    profileBtn.textContent = m.profiling ? 'Profiling the slow calls (flame graph at Stop)' : 'Profile the slow calls';
    callerBtn.hidden = Boolean(m.byCaller);
    status.textContent = 'Measuring…';
  } else if (m.type === 'update') {
    live.apply(m.update);
    stats = m.update.stats;
    if (m.update.callers) callers = m.update.callers;
    slow.push(...m.update.slow);
    slow.sort((a, b) => b.durationNs - a.durationNs).splice(MAX_SLOW);
    status.textContent = 'Measuring…';
  } else if (m.type === 'ended') {
    stopBtn.disabled = true;
    if (m.reason !== 'stopped') profileBtn.disabled = callerBtn.disabled = true;
    status.textContent = m.reason === 'target-exited' ? 'The process exited' : m.reason === 'error' ? `Failed: ${m.message ?? ''}` : 'Stopped';
  }
  render();
});
host.postMessage({ type: 'ready' });
