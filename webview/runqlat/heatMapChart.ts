// Paints the latency heat map (x = interval, y = log2 bucket, color = count) on a canvas.
// Geometry comes from model.ts (heatLayout), so hit-testing and drawing agree.
import { sizeCanvas } from '../common/canvas';
import { themeColor } from '../common/histogramChart';
import { bucketLabel, heatIntensity, heatLayout, type HeatLayout, type HeatMap } from './model';
import type { RunqlatUnit } from '../../extension/protocol/runqlat';

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

export function drawHeatMap(canvas: HTMLCanvasElement, map: HeatMap, maxColumns: number, unit: RunqlatUnit, selectedInterval: number | undefined): HeatLayout {
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
  ctx.fillStyle = hot;
  // Cells are grouped by shade (SHADES steps, finer than the eye tells apart) and each group is
  // filled under one alpha: a canvas state change per cell is most of a frame's cost.
  const byShade: number[][] = Array.from({ length: SHADES + 1 }, () => []);
  map.columns.forEach((col, c) => {
    for (let b = map.minBucket; b <= map.maxBucket; b++) {
      const a = heatIntensity(col.counts[b] ?? 0, map.max);
      if (a === 0) continue;
      byShade[Math.round(a * SHADES)].push(c, b);
    }
  });
  const w = Math.max(1, cellW - 0.5);
  const h = Math.max(1, cellH - 0.5);
  byShade.forEach((cells, shade) => {
    if (!cells.length) return;
    ctx.globalAlpha = shade / SHADES;
    for (let k = 0; k < cells.length; k += 2) ctx.fillRect(plot.x + cells[k] * cellW, plot.y + plot.h - (cells[k + 1] - map.minBucket + 1) * cellH, w, h);
  });
  ctx.globalAlpha = 1;

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
 * The heat map's color scale: what a cell's shade means, from one wait to the busiest cell's
 * count (logarithmic, as heatIntensity shades them), with the counts at both ends and between.
 */
export function drawHeatScale(canvas: HTMLCanvasElement, max: number, unit: RunqlatUnit): void {
  const height = 30;
  const { ctx, width } = sizeCanvas(canvas, height);
  const hot = themeColor('--vscode-charts-orange', '#d18616');
  const muted = themeColor('--vscode-descriptionForeground', '#888');
  ctx.font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
  ctx.fillStyle = muted;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const title = `waits per cell (one interval × one latency bucket, ${unit === 'ms' ? 'ms' : 'µs'}):`;
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
