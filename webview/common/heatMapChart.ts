// Paints the latency heat map (x = interval, y = log2 bucket, color = count) on a canvas.
// Geometry comes from latencyModel.ts (heatLayout), so hit-testing and drawing agree.
import { sizeCanvas } from './canvas';
import { themeColor } from './histogramChart';
import { bucketLabel, heatIntensity, heatLayout, type HeatLayout, type HeatMap, type IntervalCounts } from './latencyModel';
import type { HistUnit } from '../../extension/protocol/histogram';

export const HEAT_HEIGHT = 200;
/** Shades of the heat map's color (alpha steps). */
const SHADES = 32;
/** narrowest column in CSS pixels: sets how many intervals fit */
const MIN_COLUMN_PX = 6;

/** Columns to lay out: wide ones while the session is young, down to MIN_COLUMN_PX as it grows. */
export function heatColumnsFor(canvas: HTMLCanvasElement, intervals: number): number {
  const fit = Math.max(10, Math.floor(((canvas.clientWidth || 600) - 72) / MIN_COLUMN_PX));
  return Math.min(fit, Math.max(60, intervals));
}

/** What the cell image holds: a new bucket range, color scale or width redraws every column. */
interface CellCache {
  canvas: HTMLCanvasElement;
  image: ImageData;
  key: string;
  rgb: [number, number, number];
  /** the interval drawn in each pixel column (undefined: empty), and the first one's index */
  drawn: (IntervalCounts | undefined)[];
  firstIndex: number;
}
let cellCache: CellCache | undefined;

/** A CSS color as r, g, b (the canvas normalises whatever the theme gives: names, hex, rgb()). */
function rgbOf(color: string): [number, number, number] {
  const probe = document.createElement('canvas').getContext('2d')!;
  probe.fillStyle = color;
  const c = String(probe.fillStyle);
  if (c.startsWith('#')) return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
  const m = /(\d+)\D+(\d+)\D+(\d+)/.exec(c);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [209, 134, 22];
}

/**
 * The heat map's cells as an image of maxColumns × buckets pixels, each pixel the heat color at
 * the cell's shade (SHADES alpha steps). Kept between redraws: a column is computed again only
 * when the interval in it changed (a new interval, the map scrolled, Clear) — unless the bucket
 * range, the busiest cell (the color scale) or the width changed, which redraws them all.
 */
function heatCells(map: HeatMap, maxColumns: number, hot: string): HTMLCanvasElement {
  const rows = map.maxBucket - map.minBucket + 1;
  const key = `${maxColumns} ${map.minBucket} ${map.maxBucket} ${map.max} ${hot}`;
  if (!cellCache || cellCache.key !== key) {
    const canvas = cellCache?.canvas ?? document.createElement('canvas');
    canvas.width = Math.max(1, maxColumns);
    canvas.height = Math.max(1, rows);
    cellCache = { canvas, image: new ImageData(canvas.width, canvas.height), key, rgb: rgbOf(hot), drawn: [], firstIndex: map.firstIndex };
  }
  const cache = cellCache;
  const { image, drawn } = cache;
  const px = image.data;
  const [r, g, b] = cache.rgb;
  const width = image.width;
  let changed = false;
  // The map scrolled by d intervals (the newest on the right): the pixels move left by d columns.
  const d = map.firstIndex - cache.firstIndex;
  if (d > 0 && d < width && drawn[d] === map.columns[0]) {
    for (let y = 0; y < image.height; y++) px.copyWithin(y * width * 4, (y * width + d) * 4, (y + 1) * width * 4);
    drawn.splice(0, d);
    changed = true;
  }
  cache.firstIndex = map.firstIndex;
  for (let c = 0; c < width; c++) {
    const col = map.columns[c];
    if (drawn[c] === col && c < drawn.length) continue;
    drawn[c] = col;
    changed = true;
    for (let y = 0; y < rows; y++) {
      const a = col ? heatIntensity(col.counts[map.minBucket + rows - 1 - y] ?? 0, map.max) : 0;
      const o = (y * width + c) * 4;
      px[o] = r;
      px[o + 1] = g;
      px[o + 2] = b;
      px[o + 3] = Math.round((Math.round(a * SHADES) / SHADES) * 255);
    }
  }
  if (changed) cellCache.canvas.getContext('2d')!.putImageData(image, 0, 0);
  return cellCache.canvas;
}

export function drawHeatMap(canvas: HTMLCanvasElement, map: HeatMap, maxColumns: number, unit: HistUnit, selectedInterval: number | undefined): HeatLayout {
  const { ctx, width } = sizeCanvas(canvas, HEAT_HEIGHT);
  const layout = heatLayout(map, width, HEAT_HEIGHT, maxColumns);
  const { plot, cellW, cellH } = layout;
  const hot = themeColor('--vscode-charts-orange', '#d18616');
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  const border = themeColor('--vscode-panel-border', 'rgba(128,128,128,0.3)');
  const focus = themeColor('--vscode-focusBorder', '#007fd4');
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;

  ctx.strokeStyle = border;
  ctx.strokeRect(plot.x + 0.5, plot.y + 0.5, plot.w - 1, plot.h - 1);
  // The cells are one pixel each in a small image (a column per interval shown, a row per bucket)
  // scaled onto the plot: a redraw blits it once, and only columns that are new since the last
  // redraw get their pixels computed. Drawing costs the pixels of the plot, not intervals × buckets.
  const cells = heatCells(map, maxColumns, hot);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(cells, 0, 0, cells.width, cells.height, plot.x, plot.y, maxColumns * cellW, plot.h);
  ctx.imageSmoothingEnabled = true;

  // y labels: every bucket if they fit, else every few.
  ctx.fillStyle = muted;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const rows = map.maxBucket - map.minBucket + 1;
  const every = Math.max(1, Math.ceil(14 / cellH));
  for (let r = 0; r < rows; r += every) ctx.fillText(bucketLabel(map.minBucket + r, unit), plot.x - 6, plot.y + plot.h - (r + 0.5) * cellH);

  // x labels: seconds since the first column shown.
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const t0 = map.columns[0]?.timestampNs ?? 0;
  const step = Math.max(1, Math.ceil(60 / cellW));
  for (let c = 0; c < map.columns.length; c += step) {
    ctx.fillText(`${Math.round((map.columns[c].timestampNs - t0) / 1e9)} s`, plot.x + (c + 0.5) * cellW, plot.y + plot.h + 4);
  }

  if (selectedInterval !== undefined && selectedInterval >= map.firstIndex) {
    ctx.strokeStyle = focus;
    ctx.lineWidth = 2;
    ctx.strokeRect(plot.x + (selectedInterval - map.firstIndex) * cellW, plot.y, cellW, plot.h);
    ctx.lineWidth = 1;
  }
  return layout;
}

/**
 * The heat map's color scale: what a cell's shade means, from one event to the busiest cell's
 * count (logarithmic, as heatIntensity shades them), with the counts at both ends and between.
 */
export function drawHeatScale(canvas: HTMLCanvasElement, max: number, unit: HistUnit, events: string): void {
  const height = 30;
  const { ctx, width } = sizeCanvas(canvas, height);
  const hot = themeColor('--vscode-charts-orange', '#d18616');
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
  ctx.fillStyle = muted;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const title = `${events} per cell (one interval × one latency bucket, ${unit === 'ms' ? 'ms' : 'µs'}):`;
  ctx.fillText(title, 0, 10);
  const x0 = Math.min(width - 120, ctx.measureText(title).width + 8);
  const w = Math.max(60, Math.min(240, width - x0 - 8));
  const steps = 48;
  ctx.fillStyle = hot;
  for (let i = 0; i < steps; i++) {
    // Cell i stands for the count at a log-spaced point between 1 and max.
    const count = max <= 1 ? 1 : Math.round(Math.exp((i / (steps - 1)) * Math.log(max)));
    ctx.globalAlpha = heatIntensity(count, Math.max(1, max));
    ctx.fillRect(x0 + (i * w) / steps, 2, Math.ceil(w / steps), 14);
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = muted;
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText('1', x0, 18);
  ctx.textAlign = 'right';
  ctx.fillText(max > 0 ? String(max) : '–', x0 + w, 18);
  if (max >= 100) {
    ctx.textAlign = 'center';
    ctx.fillText(String(Math.round(Math.sqrt(max))), x0 + w / 2, 18);
  }
}
