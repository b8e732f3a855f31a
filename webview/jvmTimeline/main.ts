// The JVM timeline view: toolbar (Stop, Zoom to selection, Reset zoom, Export, Import), one
// canvas of lanes on one time axis (GC by collector, safepoints, per thread group CPU heat with
// run-queue bars), drag to select a range, wheel to zoom, shift+wheel to pan; under it the
// statistics of the range and its flame graph (the flame graph view's model and renderer).
import { formatDuration } from '../../extension/model/log2hist';
import { toSessionFile } from '../../extension/model/jvmTimeline';
import { GROUP_LABEL, OFF_STATE_LABEL, OFF_STATES, type OffcpuCell } from '../../extension/model/jvmTimeline';
import { ALLOC_RATE_METHOD, ALLOC_RATE_UNAVAILABLE, formatMb, formatRate } from '../../extension/model/allocRate';
import { sizeCanvas } from '../common/canvas';
import { themeColor } from '../common/histogramChart';
import { connectHost, el, oncePerFrame } from '../common/viewPage';
import { buildTree, ROOT } from '../../extension/model/flamegraph/model';
import { FlameCanvas } from '../flamegraph/render';
import { TimelineView, type Lane } from './model';
import type { FromView, ToView } from './protocol';

const vscode = connectHost<FromView>();
const view = new TimelineView();

const app = document.getElementById('app')!;
const stopBtn = el('button', { id: 'stop' }, 'Stop');
const zoomSelBtn = el('button', { id: 'zoom-selection', class: 'secondary' }, 'Zoom to selection');
const resetBtn = el('button', { id: 'reset-zoom', class: 'secondary' }, 'Reset zoom');
const clearSelBtn = el('button', { id: 'clear-selection', class: 'secondary' }, 'Clear selection');
const exportBtn = el('button', { id: 'export', class: 'secondary' }, 'Export session');
const importBtn = el('button', { id: 'import', class: 'secondary' }, 'Import session…');
const status = el('span', { class: 'status', id: 'status' }, 'Starting…');
const toolbar = el('div', { class: 'toolbar' });
toolbar.append(stopBtn, zoomSelBtn, resetBtn, clearSelBtn, exportBtn, importBtn, status);
const notes = el('div', { class: 'warning', id: 'notes' });
const lanesCanvas = el('canvas', { id: 'lanes', 'aria-label': 'JVM timeline lanes' });
const lanesLegend = el(
  'div',
  { class: 'legend', id: 'lanes-legend' },
  'GC and safepoint lanes: a bar per collection or safepoint, as wide as it lasted (where many share a pixel, the longest is described). Heap after GC: the heap used after each collection (all heap pools). Allocation: MB/s the application allocated between two collections (eden before a GC − eden left after the previous one, over the time between them; hover for the figures). Off-CPU lanes (one per thread group): the time its threads spent off CPU per slice, as a share of all its threads × the slice, stacked by state — blue sleeping, orange I/O, red waiting on a lock (futex), yellow preempted (waiting in the run queue); an interval counts in the slice in which the thread woke. Thread-group lanes: the shade is CPU use (samples as a share of one CPU); bars from the bottom are the worst run-queue wait of each slice, on a log scale from 1 µs (empty) to 1 s (full height). Drag to select a range; wheel to zoom, shift+wheel to pan.',
);
const rangeTitle = el('h2', { id: 'range-title' }, 'Range');
const stats = el('div', { id: 'range-stats' });
const flameTitle = el('h2', {}, 'CPU flame graph of the range');
const flameBox = el('div', { id: 'flame' });
const tooltip = el('div', { class: 'tooltip' });
tooltip.style.display = 'none';
app.append(toolbar, notes, lanesCanvas, lanesLegend, rangeTitle, stats, flameTitle, flameBox, tooltip);

const LABEL_W = 150;
const AXIS_H = 18;
const LANE_H = 22;
const send = (m: FromView) => vscode.postMessage(m);

stopBtn.onclick = () => {
  // Says at once that the click landed; the status changes again when the session has ended.
  stopping = true;
  stopBtn.disabled = true;
  status.textContent = 'Stopping…';
  send({ type: 'stop' });
};
let stopping = false;
zoomSelBtn.onclick = () => {
  view.zoomToSelection();
  schedule();
};
resetBtn.onclick = () => {
  view.resetZoom();
  schedule();
};
clearSelBtn.onclick = () => {
  view.clearSelection();
  rangeDirty = true;
  schedule();
};
exportBtn.onclick = () => send({ type: 'export', content: JSON.stringify(toSessionFile(view.data.toResult({ withTimeline: true }))) });
importBtn.onclick = () => send({ type: 'import' });

const PALETTE: [string, string][] = [
  ['--vscode-charts-red', '#f14c4c'],
  ['--vscode-charts-orange', '#d18616'],
  ['--vscode-charts-purple', '#b180d7'],
  ['--vscode-charts-yellow', '#cca700'],
  ['--vscode-charts-blue', '#3794ff'],
];

let laneRows: { lane: Lane; y: number }[] = [];

function plotWidth(): number {
  return Math.max(50, (lanesCanvas.clientWidth || 800) - LABEL_W);
}

/** Off-CPU states in OFF_STATES order: sleeping, I/O, lock, preempted. */
let STATE_COLORS: string[] = [];

function drawLanes(): void {
  STATE_COLORS = [themeColor('--vscode-charts-blue', '#3794ff'), themeColor('--vscode-charts-orange', '#d18616'), themeColor('--vscode-charts-red', '#f14c4c'), themeColor('--vscode-charts-yellow', '#cca700')];
  const lanes = view.lanes();
  const height = AXIS_H + lanes.length * LANE_H + 4;
  const { ctx, width } = sizeCanvas(lanesCanvas, height, 800);
  const fg = themeColor('--vscode-foreground', '#ccc');
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  const grid = themeColor('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  const heat = themeColor('--vscode-charts-green', '#89d185');
  const runq = themeColor('--vscode-charts-blue', '#3794ff');
  const sel = themeColor('--vscode-editor-selectionBackground', 'rgba(38,79,120,0.5)');
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
  const pw = plotWidth();
  // Axis: ticks at round seconds (or fractions) of the session clock.
  const [v0, v1] = view.visible();
  const spanS = (v1 - v0) / 1e9;
  const step = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600].find((s) => spanS / s <= 10) ?? 1200;
  ctx.fillStyle = muted;
  ctx.textBaseline = 'top';
  ctx.textAlign = 'center';
  const t0 = (v0 - view.data.startNs) / 1e9;
  for (let t = Math.ceil(t0 / step) * step; t <= t0 + spanS; t += step) {
    const x = LABEL_W + ((t - t0) / spanS) * pw;
    ctx.fillText(`${t.toFixed(step < 0.01 ? 3 : step < 1 ? 2 : 0)} s`, x, 2);
    ctx.fillStyle = grid;
    ctx.fillRect(Math.round(x), AXIS_H - 3, 1, height - AXIS_H);
    ctx.fillStyle = muted;
  }
  laneRows = [];
  let gcColor = 0;
  lanes.forEach((lane, i) => {
    const y = AXIS_H + i * LANE_H;
    laneRows.push({ lane, y });
    ctx.fillStyle = grid;
    ctx.fillRect(0, y + LANE_H - 1, width, 1);
    ctx.fillStyle = (lane.kind === 'safepoint' && !view.data.safepointsAvailable) || (lane.kind === 'alloc' && !view.data.alloc.intervals.length) ? muted : fg;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(lane.label.length > 24 ? `${lane.label.slice(0, 23)}…` : lane.label, 4, y + LANE_H / 2);
    const marks = view.marks(lane, pw);
    if (lane.kind === 'group') {
      for (const m of marks) {
        ctx.globalAlpha = 0.15 + 0.85 * m.level;
        ctx.fillStyle = heat;
        ctx.fillRect(LABEL_W + m.x, y + 1, m.w, LANE_H - 3);
      }
      ctx.globalAlpha = 1;
      ctx.fillStyle = runq;
      for (const m of view.runqMarks(lane.group, pw)) {
        const h = Math.max(1, m.level * (LANE_H - 4));
        ctx.fillRect(LABEL_W + m.x, y + LANE_H - 2 - h, Math.max(1, Math.min(m.w, 3)), h);
      }
    } else if (lane.kind === 'offcpu') {
      // A stacked bar per slice: its height is the group's time off CPU as a share of all its
      // threads × the slice, split by state.
      for (const m of marks) {
        const cell = m.item as OffcpuCell | undefined;
        if (!cell) continue;
        const total = cell.us.reduce((a, b) => a + b, 0) || 1;
        let y0 = y + LANE_H - 2;
        const h = Math.max(1, m.level * (LANE_H - 4));
        cell.us.forEach((us, i) => {
          if (!us) return;
          const part = (h * us) / total;
          ctx.fillStyle = STATE_COLORS[i];
          ctx.fillRect(LABEL_W + m.x, y0 - part, Math.max(1, m.w), part);
          y0 -= part;
        });
      }
    } else if (lane.kind === 'alloc' || lane.kind === 'heap') {
      // Bars from the bottom, height in proportion to the lane's maximum (in its label).
      ctx.fillStyle = lane.kind === 'alloc' ? themeColor('--vscode-charts-purple', '#b180d7') : themeColor('--vscode-charts-green', '#89d185');
      for (const m of marks) {
        const h = Math.max(1, m.level * (LANE_H - 4));
        ctx.fillRect(LABEL_W + m.x, y + LANE_H - 2 - h, Math.max(1, m.w), h);
      }
    } else {
      const [v, f] = lane.kind === 'gc' ? PALETTE[gcColor++ % PALETTE.length] : ['--vscode-charts-yellow', '#cca700'];
      ctx.fillStyle = themeColor(v, f);
      for (const m of marks) ctx.fillRect(LABEL_W + m.x, y + 3, Math.max(1, m.w), LANE_H - 7);
    }
  });
  if (view.selection) {
    const a = LABEL_W + view.nsToX(view.selection[0], pw);
    const b = LABEL_W + view.nsToX(view.selection[1], pw);
    ctx.fillStyle = sel;
    ctx.globalAlpha = 0.5;
    ctx.fillRect(Math.max(LABEL_W, a), AXIS_H, Math.max(1, Math.min(b, LABEL_W + pw) - Math.max(LABEL_W, a)), height - AXIS_H);
    ctx.globalAlpha = 1;
  }
}

function allocText(r: ReturnType<typeof view.rangeStats>): string {
  const a = r.alloc;
  if (a.intervals) return `${formatRate(a.rate)}: ${formatMb(a.bytes)} allocated in ${(a.coveredNs / 1e9).toFixed(1)} s between GCs (${a.intervals} intervals; eden before each GC − eden after the previous)`;
  return view.data.alloc.unavailable() ? `not available: ${ALLOC_RATE_UNAVAILABLE}` : 'no two GCs with eden figures in the range';
}

let flame: FlameCanvas | undefined;
let rangeDirty = true;

function renderRange(): void {
  const r = view.rangeStats();
  const d = (ns: number) => formatDuration(ns, 'ns');
  rangeTitle.textContent = `${view.selection ? 'Selected range' : 'Visible window'}: ${view.label(r.startNs)} – ${view.label(r.endNs)} (${d(r.endNs - r.startNs)})`;
  const table = el('table', { id: 'range-table' });
  const row = (k: string, v: string, id: string) => {
    const tr = el('tr', { id: `range-${id}` });
    tr.append(el('th', {}, k), el('td', {}, v));
    table.append(tr);
  };
  const gcCount = r.collectors.reduce((n, c) => n + c.count, 0);
  if (r.coveredFromNs !== undefined) row('Covers', `from ${view.label(r.coveredFromNs)}: older raw events are not kept (the lanes show the whole session), so this range's figures start there`, 'covered');
  row('GC', gcCount ? `${gcCount} collections, ${d(r.pauseNs)} paused: ${r.collectors.map((c) => `${c.collector} ×${c.count} (max ${d(c.maxNs)})`).join(', ')}` : 'none', 'gc');
  row('Allocation', allocText(r), 'alloc');
  row('Safepoints', view.data.safepointsAvailable ? `${r.safepoints.count}, ${d(r.safepoints.totalNs)} in total, time to safepoint max ${d(r.safepoints.ttsMaxNs)}, p50 ${d(r.safepoints.ttsP50Ns)}` : `not available: ${view.data.safepointsReason}`, 'safepoints');
  row('Run-queue waits', r.runq.map((g) => `${GROUP_LABEL[g.group]}: ${g.stats.count} (p99 ≤ ${formatDuration(g.stats.p99, 'us')}, max ≤ ${formatDuration(g.stats.max, 'us')})`).join('; ') || 'none', 'runq');
  row('CPU samples', r.cpuTotal ? `${r.cpuTotal}: ${r.cpu.map((g) => `${GROUP_LABEL[g.group]} ${((100 * g.samples) / r.cpuTotal).toFixed(0)} %`).join(', ')}` : 'none', 'cpu');
  if (view.data.offcpuAvailable) row('Off CPU', r.offcpu.map((g) => `${GROUP_LABEL[g.group]}: ${OFF_STATES.map((st, i) => (g.us[i] ? `${OFF_STATE_LABEL[st]} ${(g.us[i] / 1e6).toFixed(2)} s` : '')).filter(Boolean).join(', ') || 'none'}`).join('; ') || 'none', 'offcpu');
  else if (view.data.offcpuReason) row('Off CPU', view.data.offcpuReason, 'offcpu');
  row('Busiest threads', r.cpuThreads.slice(0, 5).map((t) => `${t.comm} [${t.tid}] ${t.samples}`).join(', ') || '–', 'threads');
  stats.replaceChildren(table);
  if (view.selection) send({ type: 'selected', startS: (r.startNs - view.data.startNs) / 1e9, endS: (r.endNs - view.data.startNs) / 1e9, samples: r.cpuTotal, gcs: r.collectors.reduce((n, c) => n + c.count, 0) });
  // Following a live session, the flame graph is rebuilt every few seconds only: it is built
  // from every distinct stack, more than a frame's budget once the session is long.
  const now = performance.now();
  if (!rangeDirty && !view.selection && view.state === 'running' && flame && now - flameAt < FLAME_EVERY_MS) return;
  flameAt = now;
  const profile = view.rangeProfile(r);
  const tree = buildTree(profile, profile.stacks);
  if (!flame) {
    flame = new FlameCanvas(flameBox, tree, profile);
    // Root at the top: the threads and their callers stay in view right under the statistics.
    flame.icicle = true;
  } else flame.setTree(tree, profile);
  flame.focus = ROOT;
  flame.canvas.dataset.samples = String(profile.total);
  flame.draw();
}
const FLAME_EVERY_MS = 5000;
let flameAt = -Infinity;

function statusText(): string {
  const who = view.target || `pid ${view.data.pid}`;
  const len = `${((view.data.endNs - view.data.startNs) / 1e9).toFixed(1)} s`;
  switch (view.state) {
    case 'running':
      return stopping ? 'Stopping…' : `Tracing ${who} · ${len}`;
    case 'stopped':
      return `Stopped (${who})${view.message ? `: ${view.message}` : ''} · ${len}`;
    case 'target-exited':
      return `Process exited${view.message ? `: ${view.message}` : ''} (data kept) · ${len}`;
    case 'error':
      return `Ended: ${view.message || 'error'} (data kept)`;
    case 'imported':
      return `Session ${who} from a file · ${len}`;
  }
}

let note = '';
function render(): void {
  status.textContent = note ? `${statusText()} — ${note}` : statusText();
  stopBtn.disabled = view.state !== 'running' || stopping;
  zoomSelBtn.disabled = !view.selection;
  clearSelBtn.disabled = !view.selection;
  const n: string[] = [];
  if (view.data.lost) n.push(`${view.data.lost} events or CPU samples lost in the kernel`);
  if (view.data.dropped) n.push(`${view.data.dropped} run-queue waits dropped`);
  if (view.data.droppedBeforeNs) n.push(`Raw events before ${view.label(view.data.droppedBeforeNs)} are not kept (a live session keeps its last ${Math.round(view.data.rawWindowNs / 60e9)} minutes; a reloaded panel its last 2): the lanes and the whole session's figures cover it all, a selection and Export only the kept events.`);
  if (view.state === 'running') n.push('Function names appear when the session stops (the profiler symbolizes at the end).');
  // what the document says of its own gaps (a Flight Recording has no run-queue waits)
  for (const w of view.data.warnings ?? []) n.push(w);
  notes.textContent = n.join(' · ');
  drawLanes();
  // The range panel follows the live edge while nothing is selected, at most once a second: its
  // flame graph is rebuilt from every distinct stack, more than a frame's budget in a long session.
  const now = performance.now();
  if (rangeDirty || (!view.selection && now - rangeAt >= RANGE_EVERY_MS)) {
    renderRange();
    rangeAt = now;
    rangeDirty = false;
  } else if (!view.selection && !rangeTimer) {
    rangeTimer = setTimeout(() => {
      rangeTimer = undefined;
      schedule();
    }, RANGE_EVERY_MS - (now - rangeAt));
  }
}
const RANGE_EVERY_MS = 1000;
let rangeAt = -Infinity;
let rangeTimer: ReturnType<typeof setTimeout> | undefined;

const schedule = oncePerFrame(render);

// ---- interaction -------------------------------------------------------------------------------
let drag: { x0: number } | undefined;
const plotX = (ev: MouseEvent) => ev.clientX - lanesCanvas.getBoundingClientRect().left - LABEL_W;
lanesCanvas.addEventListener('mousedown', (ev) => {
  if (plotX(ev) < 0) return;
  drag = { x0: plotX(ev) };
});
window.addEventListener('mousemove', (ev) => {
  if (drag) {
    const pw = plotWidth();
    view.select(view.xToNs(drag.x0, pw), view.xToNs(plotX(ev), pw));
    rangeDirty = true;
    schedule();
    return;
  }
  const r = lanesCanvas.getBoundingClientRect();
  const y = ev.clientY - r.top;
  const x = plotX(ev);
  if (ev.target !== lanesCanvas || x < 0) {
    tooltip.style.display = 'none';
    return;
  }
  const row = laneRows.find((l) => y >= l.y && y < l.y + LANE_H);
  if (!row) {
    tooltip.style.display = 'none';
    return;
  }
  const pw = plotWidth();
  const hits = [...view.marks(row.lane, pw), ...(row.lane.kind === 'group' ? view.runqMarks(row.lane.group, pw) : [])].filter((m) => x >= m.x - 1 && x <= m.x + m.w + 1);
  const how = row.lane.kind === 'alloc' ? [view.data.alloc.intervals.length ? ALLOC_RATE_METHOD : `Not available: ${ALLOC_RATE_UNAVAILABLE}`] : row.lane.kind === 'heap' ? ['Heap used after each GC: every heap pool (eden, survivor, old generation), the last figure a GC reported for pools it did not collect.'] : [];
  tooltip.textContent = [`${row.lane.label} · ${view.label(view.xToNs(x, pw))}`, ...hits.slice(0, 4).map((m) => m.label), ...how].join('\n');
  tooltip.style.left = `${ev.clientX + 12}px`;
  tooltip.style.top = `${ev.clientY + 12}px`;
  tooltip.style.display = 'block';
});
window.addEventListener('mouseup', (ev) => {
  if (!drag) return;
  const pw = plotWidth();
  // A click without a drag selects nothing.
  if (Math.abs(plotX(ev) - drag.x0) < 3) view.clearSelection();
  else view.select(view.xToNs(drag.x0, pw), view.xToNs(plotX(ev), pw));
  drag = undefined;
  rangeDirty = true;
  schedule();
});
lanesCanvas.addEventListener('mouseleave', () => (tooltip.style.display = 'none'));
lanesCanvas.addEventListener(
  'wheel',
  (ev) => {
    ev.preventDefault();
    const pw = plotWidth();
    const [a, b] = view.visible();
    if (ev.shiftKey) view.pan(((ev.deltaY || ev.deltaX) / pw) * (b - a));
    else view.zoom(ev.deltaY < 0 ? 0.8 : 1.25, view.xToNs(Math.max(0, plotX(ev)), pw));
    rangeDirty = true;
    schedule();
  },
  { passive: false },
);
window.addEventListener('resize', () => {
  rangeDirty = true;
  schedule();
});

window.addEventListener('message', (ev: MessageEvent<ToView>) => {
  const m = ev.data;
  switch (m.type) {
    case 'init':
      view.target = m.target;
      break;
    case 'update':
      view.apply(m.update);
      break;
    case 'ended':
      stopping = false;
      view.end(m.reason, m.message, m.result);
      // The status says "Stopped" in the next frame; the range panel (its flame graph) follows
      // in a task of its own, so that frame is not held up by it.
      rangeAt = performance.now();
      setTimeout(() => {
        rangeDirty = true;
        schedule();
      }, 50);
      break;
    case 'load':
      view.load(m.result, m.ended?.reason);
      view.message = m.ended?.message ?? '';
      view.target = m.name;
      rangeDirty = true;
      break;
    case 'note':
      note = m.text;
      break;
  }
  schedule();
});

render();
send({ type: 'ready' });
