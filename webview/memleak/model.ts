// The leak view's pure model: rows sorted by outstanding bytes, sparkline geometry, labels.
// No DOM here, so it is unit-tested directly.
import type { MemleakFrame } from '../../extension/protocol/memleak';
import { exactBytes, formatAge, formatLeakBytes } from '../../extension/model/leakSites';
import type { LeakViewStack } from './protocol';

export interface Row {
  key: string;
  bytes: string;
  /** the exact bytes, for the tooltip */
  bytesTitle: string;
  count: string;
  oldest: string;
  /** "x,y x,y ..." for an SVG polyline in a width × height box */
  sparkline: string;
  frames: { label: string; location?: { file: string; line: number; column?: number }; title: string }[];
  site?: string;
  /** every workspace line of the stack ("file:line"): a lens on any of them focuses this row */
  lines: string[];
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
      bytes: s.bytesStdErr !== undefined ? `≈${formatLeakBytes(s.bytes)} ± ${formatLeakBytes(s.bytesStdErr)}` : formatLeakBytes(s.bytes),
      bytesTitle: s.bytesStdErr !== undefined ? `≈${exactBytes(s.bytes)} ± ${exactBytes(s.bytesStdErr)} (sampled estimate)` : exactBytes(s.bytes),
      bytesRaw: s.bytes,
      count: s.allocationsStdErr !== undefined ? `≈${s.allocations} ± ${s.allocationsStdErr}` : String(s.allocations),
      oldest: formatAge(s.oldestAgeMs),
      sparkline: sparklinePoints(s.history, 80, 18),
      site: s.site,
      lines: s.lines ?? (s.site ? [s.site] : []),
      frames: s.frames.map((f) => ({
        label: frameLabel(f),
        title: `${f.address} in ${f.module}${f.file ? `\n${f.file}:${f.line ?? '?'}` : ''}`,
        location: f.file && f.line && f.file.startsWith('/') ? { file: f.file, line: f.line, column: f.column } : undefined,
      })),
    }));
}

/** The status line's figures: "40 KB in 10 allocations", and the exact bytes for its tooltip. */
export function totalsText(totalBytes: number, totalAllocations: number, estimated: boolean): { text: string; title: string } {
  const est = estimated ? '≈' : '';
  return {
    text: `${est}${formatLeakBytes(totalBytes)} in ${est}${totalAllocations} allocation${totalAllocations === 1 ? '' : 's'} outstanding`,
    title: `${est}${exactBytes(totalBytes)} not yet freed, in ${est}${totalAllocations} allocation${totalAllocations === 1 ? '' : 's'}`,
  };
}

/** "leaky.c:32" from a site key "/w/scripts/demo/leaky.c:32". */
export function siteLabel(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1);
}
