// The pause timeline: each GC a vertical mark at its start time, height proportional to its
// pause, colored young/full. layoutTimeline is pure; drawTimeline paints.
import { formatDuration } from '../../extension/model/log2hist';
import { sizeCanvas } from '../common/canvas';
import { themeColor } from '../common/histogramChart';
import type { TimelineMark } from './model';

export interface TimelineRect {
  x: number;
  y: number;
  h: number;
  full: boolean;
  collector: string;
}

export interface TimelineLayout {
  marks: TimelineRect[];
  plot: { x: number; y: number; w: number; h: number };
  /** seconds covered by the x axis */
  spanS: number;
  maxNs: number;
}

const PAD = { left: 56, right: 8, top: 8, bottom: 20 };

export function layoutTimeline(marks: TimelineMark[], spanS: number, width: number, height: number): TimelineLayout {
  const plot = { x: PAD.left, y: PAD.top, w: Math.max(10, width - PAD.left - PAD.right), h: Math.max(10, height - PAD.top - PAD.bottom) };
  const span = Math.max(1, spanS, ...marks.map((m) => m.t));
  const maxNs = Math.max(0, ...marks.map((m) => m.durationNs));
  const out: TimelineRect[] = marks.map((m) => {
    // At least 2 px so the shortest pause is still visible next to the longest.
    const h = maxNs > 0 ? Math.max(2, (m.durationNs / maxNs) * plot.h) : 2;
    return { x: plot.x + (Math.max(0, m.t) / span) * plot.w, y: plot.y + plot.h - h, h, full: m.full, collector: m.collector };
  });
  return { marks: out, plot, spanS: span, maxNs };
}

export function drawTimeline(canvas: HTMLCanvasElement, marks: TimelineMark[], spanS: number, colors: { young: string; full: string; of?: (collector: string) => string }, cssHeight = 120): void {
  const { ctx, width } = sizeCanvas(canvas, cssHeight);
  const l = layoutTimeline(marks, spanS, width, cssHeight);
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  const grid = themeColor('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
  ctx.strokeStyle = grid;
  ctx.beginPath();
  ctx.moveTo(l.plot.x, l.plot.y + l.plot.h + 0.5);
  ctx.lineTo(l.plot.x + l.plot.w, l.plot.y + l.plot.h + 0.5);
  ctx.stroke();
  for (const m of l.marks) {
    ctx.fillStyle = colors.of ? colors.of(m.collector) : m.full ? colors.full : colors.young;
    ctx.fillRect(Math.round(m.x), m.y, 2, m.h);
  }
  ctx.fillStyle = muted;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'top';
  if (l.maxNs > 0) ctx.fillText(formatDuration(l.maxNs, 'ns'), l.plot.x - 6, l.plot.y);
  ctx.textBaseline = 'bottom';
  ctx.fillText('0', l.plot.x - 6, l.plot.y + l.plot.h);
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText('0 s', l.plot.x, l.plot.y + l.plot.h + 4);
  ctx.textAlign = 'right';
  ctx.fillText(`${l.spanS.toFixed(l.spanS < 10 ? 1 : 0)} s`, l.plot.x + l.plot.w, l.plot.y + l.plot.h + 4);
}
