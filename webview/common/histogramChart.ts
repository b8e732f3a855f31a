// A stacked bar chart on a canvas, for log2 histograms (Java GC pauses, run-queue latency):
// one bar per bucket, one stacked segment per series, labels under the bars, a count axis.
// The layout is pure (unit-testable); drawHistogram only paints it. Theme colors come from
// the --vscode-* variables, read by the caller (see themeColor).
import { sizeCanvas } from './canvas';

export interface HistogramSeries {
  name: string;
  /** a CSS color */
  color: string;
  counts: number[];
}

export interface HistogramData {
  /** one label per bucket, e.g. "64 µs" */
  labels: string[];
  series: HistogramSeries[];
  /** what the bars count, drawn at the top of the count axis, e.g. "pauses" */
  yTitle?: string;
  /** what the buckets are, drawn under their labels, e.g. "pause duration (log2 buckets)" */
  xTitle?: string;
}

export interface BarRect {
  bucket: number;
  series: number;
  x: number;
  y: number;
  w: number;
  h: number;
  count: number;
}

export interface HistogramLayout {
  bars: BarRect[];
  /** label x centers */
  labelX: number[];
  /** count axis ticks: value and y */
  ticks: { value: number; y: number }[];
  plot: { x: number; y: number; w: number; h: number };
  maxTotal: number;
}

const PAD = { left: 44, right: 8, top: 18, bottom: 34 };

/** Count-axis ticks: 0 and up to four round values ≤ max. */
export function niceTicks(max: number): number[] {
  if (max <= 0) return [0];
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = 0; v <= max + 1e-9; v += Math.max(1, Math.round(step))) out.push(v);
  return out;
}

export function layoutHistogram(data: HistogramData, width: number, height: number): HistogramLayout {
  const plot = { x: PAD.left, y: PAD.top, w: Math.max(10, width - PAD.left - PAD.right), h: Math.max(10, height - PAD.top - PAD.bottom) };
  const n = data.labels.length;
  const totals = data.labels.map((_, i) => data.series.reduce((s, se) => s + (se.counts[i] ?? 0), 0));
  const maxTotal = Math.max(0, ...totals);
  const slot = n ? plot.w / n : plot.w;
  const barW = Math.max(1, slot * 0.8);
  const bars: BarRect[] = [];
  const scale = maxTotal > 0 ? plot.h / maxTotal : 0;
  for (let i = 0; i < n; i++) {
    let base = plot.y + plot.h;
    const x = plot.x + i * slot + (slot - barW) / 2;
    data.series.forEach((se, s) => {
      const c = se.counts[i] ?? 0;
      if (c <= 0) return;
      const h = c * scale;
      base -= h;
      bars.push({ bucket: i, series: s, x, y: base, w: barW, h, count: c });
    });
  }
  const ticks = niceTicks(maxTotal).map((value) => ({ value, y: plot.y + plot.h - value * scale }));
  return { bars, labelX: data.labels.map((_, i) => plot.x + i * slot + slot / 2), ticks, plot, maxTotal };
}

/** The bucket under a point, for tooltips; -1 outside the plot. */
export function bucketAt(layout: HistogramLayout, n: number, x: number, y: number): number {
  const p = layout.plot;
  if (x < p.x || x >= p.x + p.w || y < p.y - PAD.top || y > p.y + p.h + PAD.bottom || n === 0) return -1;
  return Math.min(n - 1, Math.floor(((x - p.x) / p.w) * n));
}

/** A --vscode-* color of the page, with a fallback for when the variable is missing. */
export function themeColor(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

/** Sizes the canvas for the device pixel ratio and paints the layout. */
export function drawHistogram(canvas: HTMLCanvasElement, data: HistogramData, cssHeight = 220): HistogramLayout {
  const { ctx, width } = sizeCanvas(canvas, cssHeight);
  const layout = layoutHistogram(data, width, cssHeight);
  const fg = themeColor('--vscode-foreground', '#ccc');
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  const grid = themeColor('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  const font = themeColor('--vscode-font-family', 'sans-serif');
  ctx.font = `11px ${font}`;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (const t of layout.ticks) {
    ctx.strokeStyle = grid;
    ctx.beginPath();
    ctx.moveTo(layout.plot.x, Math.round(t.y) + 0.5);
    ctx.lineTo(layout.plot.x + layout.plot.w, Math.round(t.y) + 0.5);
    ctx.stroke();
    ctx.fillStyle = muted;
    ctx.fillText(String(t.value), layout.plot.x - 6, t.y);
  }
  for (const b of layout.bars) {
    ctx.fillStyle = data.series[b.series].color;
    ctx.fillRect(b.x, b.y, b.w, b.h);
  }
  ctx.fillStyle = fg;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  // Skip labels that would overlap their neighbours.
  const every = Math.max(1, Math.ceil(60 / Math.max(1, layout.plot.w / Math.max(1, data.labels.length))));
  data.labels.forEach((l, i) => {
    if (i % every === 0) ctx.fillText(l, layout.labelX[i], layout.plot.y + layout.plot.h + 6);
  });
  ctx.fillStyle = muted;
  if (data.xTitle) ctx.fillText(data.xTitle, layout.plot.x + layout.plot.w / 2, layout.plot.y + layout.plot.h + 20);
  if (data.yTitle) {
    ctx.textAlign = 'left';
    ctx.fillText(data.yTitle, 2, 2);
  }
  // Legend, top right.
  ctx.textAlign = 'right';
  let lx = layout.plot.x + layout.plot.w;
  for (const se of [...data.series].reverse()) {
    const w = ctx.measureText(se.name).width;
    ctx.fillStyle = fg;
    ctx.fillText(se.name, lx, 2);
    ctx.fillStyle = se.color;
    ctx.fillRect(lx - w - 14, 3, 10, 10);
    lx -= w + 26;
  }
  return layout;
}
