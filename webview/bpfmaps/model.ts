// Pure presentation of the run view's maps: bucket labels of bcc-style log2 histograms, table
// columns from decoded keys/values, and compact value text. No DOM.
import type { Json, MapView } from '../../extension/protocol/bpfRun';

/** bcc's print_log2_hist ranges: bucket i holds [2^i, 2^(i+1)), bucket 0 holds 0 and 1. */
export function bucketRange(i: number): { low: number; high: number } {
  return { low: i === 0 ? 0 : 2 ** i, high: 2 ** (i + 1) - 1 };
}

export function compactNumber(n: number): string {
  if (n < 1024) return String(n);
  const units = ['K', 'M', 'G', 'T', 'P', 'E'];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(v < 10 ? 1 : 0)}${units[u]}`;
}

/** Labels for buckets 0..last non-empty bucket over all series; counts padded to the same length. */
export function histogramBuckets(series: { counts: number[] }[]): { labels: string[]; length: number } {
  let last = -1;
  for (const s of series) for (let i = 0; i < s.counts.length; i++) if (s.counts[i] > 0 && i > last) last = i;
  const length = Math.max(1, last + 1);
  const labels = Array.from({ length }, (_, i) => {
    const r = bucketRange(i);
    return `${compactNumber(r.low)}–${compactNumber(r.high)}`;
  });
  return { labels, length };
}

export function totalCount(counts: number[]): number {
  return counts.reduce((a, b) => a + b, 0);
}

export function formatJson(v: Json): string {
  if (v === null) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    const s = `[${v.map(formatJson).join(', ')}]`;
    return s.length > 160 ? `${s.slice(0, 157)}…]` : s;
  }
  return `{ ${Object.entries(v)
    .map(([k, x]) => `${k}: ${formatJson(x)}`)
    .join(', ')} }`;
}

/** Columns for a list of decoded records: the union of their top-level struct members, else one "value" column. */
export function columnsOf(values: Json[]): string[] {
  const cols: string[] = [];
  for (const v of values) {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return ['value'];
    for (const k of Object.keys(v)) if (!cols.includes(k)) cols.push(k);
  }
  return cols.length ? cols : ['value'];
}

export function cell(v: Json, column: string): string {
  if (column === 'value' && (!v || typeof v !== 'object' || Array.isArray(v))) return formatJson(v);
  if (v && typeof v === 'object' && !Array.isArray(v)) return formatJson(v[column] ?? null);
  return '';
}

export interface TableModel {
  keyColumns: string[];
  valueColumns: string[];
  rows: string[][];
  numeric: boolean[];
}

/** A map's rows as text cells, sorted by the first numeric value column, largest first. */
export function tableModel(view: Extract<MapView, { kind: 'table' }>): TableModel {
  const keyColumns = columnsOf(view.rows.map((r) => r.key)).map((c) => (c === 'value' ? 'key' : c));
  const valueColumns = columnsOf(view.rows.map((r) => r.value));
  const keyCells = (k: Json) => keyColumns.map((c) => cell(k, c === 'key' ? 'value' : c));
  const valueCells = (v: Json) => valueColumns.map((c) => cell(v, c));
  const firstNum = valueColumns.findIndex((c) => view.rows.some((r) => typeof (c === 'value' ? r.value : (r.value as Record<string, Json> | null)?.[c]) === 'number'));
  const rows = view.rows.map((r) => [...keyCells(r.key), ...valueCells(r.value)]);
  if (firstNum >= 0) {
    const col = keyColumns.length + firstNum;
    rows.sort((a, b) => Number(b[col]) - Number(a[col]));
  }
  const numeric = [...keyColumns, ...valueColumns].map((_, i) => rows.length > 0 && rows.every((r) => /^-?\d+(\.\d+)?$/.test(r[i])));
  return { keyColumns, valueColumns, rows, numeric };
}
