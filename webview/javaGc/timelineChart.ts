// The pause timeline: x is seconds since the start, each mark the longest pause of a time bin
// (height proportional to it), colored by collector. Full collections get a lane of their own
// under the others, with its own scale, so six full GCs stay visible beside 250 young ones.
// Marks are one per bin and lane (at most TIMELINE_BINS), so drawing costs the same at any
// event rate. layoutTimeline is pure; drawTimeline paints.
import { formatDuration } from '../../extension/model/log2hist';
import { sizeCanvas } from '../common/canvas';
import { themeColor } from '../common/histogramChart';
import type { GcTimeline, TimelineMark } from './model';

export interface TimelineRect {
  x: number;
  y: number;
  w: number;
  h: number;
  full: boolean;
  collector: string;
  mark: TimelineMark;
}

export interface TimelineLaneLayout {
  name: string;
  y: number;
  h: number;
  maxNs: number;
}

export interface TimelineLayout {
  marks: TimelineRect[];
  plot: { x: number; y: number; w: number; h: number };
  lanes: TimelineLaneLayout[];
  /** seconds covered by the x axis */
  spanS: number;
  /** the longest pause shown (both lanes) */
  maxNs: number;
}

const PAD = { left: 72, right: 8, top: 8, bottom: 20 };
const LANE_GAP = 10;
/** between a lane's labels (right-aligned) and the plot */
export const LABEL_GAP = 6;
/** the widest the labels may take: past it a long duration is cut rather than the plot squeezed */
const MAX_LABELS = 160;

/** The width of a text in the chart's font (the canvas measures it; tests pass an estimate). */
export type Measure = (text: string) => number;

/** The lanes' labels: each lane's name, longest pause and 0, right-aligned left of the plot. */
function laneLabels(lanes: TimelineLaneLayout[]): string[] {
  return lanes.flatMap((l) => [l.name, ...(l.maxNs > 0 ? [formatDuration(l.maxNs, 'ns')] : []), '0']);
}

export function layoutTimeline(timeline: GcTimeline, spanS: number, width: number, height: number, measure?: Measure): TimelineLayout {
  const laneMax = (ms: TimelineMark[]) => ms.reduce((x, m) => Math.max(x, m.durationNs), 0);
  const hasFull = timeline.full.length > 0;
  // The left margin fits the widest label in the font at hand ("young & other" is wider than
  // the fixed margin in some fonts), so no label is cut at the canvas edge.
  const named: TimelineLaneLayout[] = [{ name: hasFull ? 'young & other' : 'pauses', y: 0, h: 0, maxNs: laneMax(timeline.pauses) }, ...(hasFull ? [{ name: 'full', y: 0, h: 0, maxNs: laneMax(timeline.full) }] : [])];
  const labelsW = measure ? Math.max(0, ...laneLabels(named).map(measure)) : 0;
  const left = Math.max(PAD.left, Math.min(MAX_LABELS, Math.ceil(labelsW) + LABEL_GAP + 2));
  const plot = { x: left, y: PAD.top, w: Math.max(10, width - left - PAD.right), h: Math.max(10, height - PAD.top - PAD.bottom) };
  let last = 0;
  for (const m of timeline.pauses) last = Math.max(last, m.t + timeline.binS);
  for (const m of timeline.full) last = Math.max(last, m.t + timeline.binS);
  const span = Math.max(1, spanS, last);
  const lanes: TimelineLaneLayout[] = [];
  const fullH = hasFull ? Math.round((plot.h - LANE_GAP) * 0.4) : 0;
  lanes.push({ name: hasFull ? 'young & other' : 'pauses', y: plot.y, h: hasFull ? plot.h - LANE_GAP - fullH : plot.h, maxNs: laneMax(timeline.pauses) });
  if (hasFull) lanes.push({ name: 'full', y: plot.y + plot.h - fullH, h: fullH, maxNs: laneMax(timeline.full) });
  const w = Math.max(2, (timeline.binS / span) * plot.w);
  const marks: TimelineRect[] = [];
  const place = (ms: TimelineMark[], lane: TimelineLaneLayout) => {
    for (const m of ms) {
      // At least 2 px so the shortest pause is still visible next to the longest.
      const h = lane.maxNs > 0 ? Math.max(2, (m.durationNs / lane.maxNs) * lane.h) : 2;
      marks.push({ x: plot.x + (Math.max(0, m.t) / span) * plot.w, y: lane.y + lane.h - h, w, h, full: m.full, collector: m.collector, mark: m });
    }
  };
  place(timeline.pauses, lanes[0]);
  if (hasFull) place(timeline.full, lanes[1]);
  return { marks, plot, lanes, spanS: span, maxNs: Math.max(0, ...lanes.map((l) => l.maxNs)) };
}

/** The mark under a point, or undefined. */
export function markAt(l: TimelineLayout, x: number, y: number): TimelineRect | undefined {
  let best: TimelineRect | undefined;
  for (const m of l.marks) {
    const lane = l.lanes.find((ln) => y >= ln.y && y <= ln.y + ln.h);
    if (!lane || m.y < lane.y || m.y > lane.y + lane.h) continue;
    if (x >= m.x - 2 && x <= m.x + m.w + 2 && (!best || Math.abs(m.x - x) < Math.abs(best.x - x))) best = m;
  }
  return best;
}

export function drawTimeline(canvas: HTMLCanvasElement, timeline: GcTimeline, spanS: number, colors: { young: string; full: string; of?: (collector: string) => string }, cssHeight = 140): TimelineLayout {
  const { ctx, width } = sizeCanvas(canvas, cssHeight);
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
  const l = layoutTimeline(timeline, spanS, width, cssHeight, (text) => ctx.measureText(text).width);
  // where the plot starts, for tests that measure the labels against it
  canvas.dataset.plotLeft = String(l.plot.x);
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  const grid = themeColor('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  ctx.strokeStyle = grid;
  ctx.beginPath();
  for (const lane of l.lanes) {
    ctx.moveTo(l.plot.x, lane.y + lane.h + 0.5);
    ctx.lineTo(l.plot.x + l.plot.w, lane.y + lane.h + 0.5);
  }
  ctx.stroke();
  for (const m of l.marks) {
    ctx.fillStyle = colors.of ? colors.of(m.collector) : m.full ? colors.full : colors.young;
    ctx.fillRect(Math.round(m.x), m.y, Math.max(2, Math.round(m.w)), m.h);
  }
  ctx.fillStyle = muted;
  ctx.textAlign = 'right';
  for (const lane of l.lanes) {
    // Each lane's scale: its longest pause at the top, 0 at the bottom, the lane's name between.
    ctx.textBaseline = 'top';
    if (lane.maxNs > 0) ctx.fillText(formatDuration(lane.maxNs, 'ns'), l.plot.x - LABEL_GAP, lane.y);
    ctx.textBaseline = 'middle';
    if (lane.h >= 36) ctx.fillText(lane.name, l.plot.x - LABEL_GAP, lane.y + lane.h / 2);
    ctx.textBaseline = 'bottom';
    ctx.fillText('0', l.plot.x - LABEL_GAP, lane.y + lane.h);
  }
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText('0 s', l.plot.x, l.plot.y + l.plot.h + 4);
  ctx.textAlign = 'center';
  ctx.fillText('time since the start (s); each mark: the longest pause in its interval', l.plot.x + l.plot.w / 2, l.plot.y + l.plot.h + 4);
  ctx.textAlign = 'right';
  ctx.fillText(`${l.spanS.toFixed(l.spanS < 10 ? 1 : 0)} s`, l.plot.x + l.plot.w, l.plot.y + l.plot.h + 4);
  return l;
}
