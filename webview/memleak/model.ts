// The leak view's pure model: rows sorted by outstanding bytes, sparkline geometry, labels.
// No DOM here, so it is unit-tested directly.
import type { MemleakFrame } from '../../extension/protocol/memleak';
import { formatAge, formatBytesDecimal } from '../../extension/model/leakSites';
import type { LeakViewStack } from './protocol';

export interface Row {
  key: string;
  bytes: string;
  count: string;
  oldest: string;
  /** "x,y x,y ..." for an SVG polyline in a width × height box */
  sparkline: string;
  frames: { label: string; location?: { file: string; line: number; column?: number }; title: string }[];
  site?: string;
  bytesRaw: number;
}

export function sparklinePoints(values: number[], width: number, height: number): string {
  if (values.length === 0) return '';
  const max = Math.max(...values, 1);
  const min = Math.min(...values, 0);
  const span = max - min || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values.map((v, i) => `${(i * step).toFixed(1)},${(height - ((v - min) / span) * height).toFixed(1)}`).join(' ');
}

export function frameLabel(f: MemleakFrame): string {
  const mod = f.module.slice(f.module.lastIndexOf('/') + 1);
  const fn = f.function ?? `${mod}+${f.offset ?? f.address}`;
  const where = f.file && f.line ? ` — ${f.file.slice(f.file.lastIndexOf('/') + 1)}:${f.line}` : '';
  return `${fn}${where}`;
}

export function toRows(stacks: LeakViewStack[]): Row[] {
  return [...stacks]
    .sort((a, b) => b.bytes - a.bytes)
    .map((s) => ({
      key: s.key,
      // sampled sessions: estimates, with one standard error
      bytes: s.bytesStdErr !== undefined ? `≈${formatBytesDecimal(s.bytes)} ± ${formatBytesDecimal(s.bytesStdErr)}` : formatBytesDecimal(s.bytes),
      bytesRaw: s.bytes,
      count: s.allocationsStdErr !== undefined ? `≈${s.allocations} ± ${s.allocationsStdErr}` : String(s.allocations),
      oldest: formatAge(s.oldestAgeMs),
      sparkline: sparklinePoints(s.history, 80, 18),
      site: s.site,
      frames: s.frames.map((f) => ({
        label: frameLabel(f),
        title: `${f.address} in ${f.module}${f.file ? `\n${f.file}:${f.line ?? '?'}` : ''}`,
        location: f.file && f.line && f.file.startsWith('/') ? { file: f.file, line: f.line, column: f.column } : undefined,
      })),
    }));
}
