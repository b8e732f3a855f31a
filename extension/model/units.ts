// Human-readable sizes for every view and the CLI. Pure (no Node, no DOM).
import { formatDuration } from './log2hist';

/**
 * "812 KB", "3.4 MB", "-1.2 GB". base 1024 for memory pools and heaps (what the JVM reports),
 * 1000 for leak totals (so 409600 bytes read "409.6 KB", as the lens text has it).
 */
export function formatBytes(n: number, base: 1000 | 1024 = 1024): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = Math.abs(n);
  let i = 0;
  while (v >= base && i < units.length - 1) {
    v /= base;
    i++;
  }
  let s: string;
  if (i === 0) s = String(Math.round(v));
  else if (base === 1000) s = v.toFixed(1).replace(/\.0$/, '');
  else s = v >= 100 ? v.toFixed(0) : v.toFixed(1);
  return `${n < 0 ? '-' : ''}${s} ${units[i]}`;
}

/**
 * "12,345": what toLocaleString('en-US') prints for an integer count. Written out because a
 * webview's first toLocaleString() loads ICU number formatting, about 20 ms of a flame graph's
 * first paint.
 */
export function formatCount(n: number): string {
  const s = String(Math.round(Math.abs(n)));
  let out = '';
  for (let i = s.length; i > 0; i -= 3) out = (i > 3 ? ',' : '') + s.slice(Math.max(0, i - 3), i) + out;
  return n < 0 && s !== '0' ? `-${out}` : out;
}

/**
 * A log2 histogram bucket bound, the one label format of every histogram and heat map: "0",
 * "512 µs", "1.02 ms", "16.4 ms", "1.05 s". Below 1000 of the unit the bound is a whole
 * number (it is one: 2^k); above, three significant digits in the next unit up.
 */
export function formatBucketBound(value: number, unit: 'us' | 'ms'): string {
  if (value === 0) return '0';
  const names = unit === 'us' ? ['µs', 'ms', 's'] : ['ms', 's'];
  let v = value;
  let i = 0;
  while (v >= 1000 && i < names.length - 1) {
    v /= 1000;
    i++;
  }
  const text = i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return `${text} ${names[i]}`;
}

/**
 * A profile's weight in the unit its document carries: "12,345 samples", "252 s" of time
 * (weights in µs: off-CPU, wall clock), "18.2 GB" allocated. A weighted profile counted as
 * "samples" would read 252,471,550 samples for 252 s off CPU.
 */
export function formatWeight(n: number, unit: 'samples' | 'us' | 'bytes' | undefined): string {
  if (unit === 'bytes') return formatBytes(n, 1000);
  if (unit === 'us') return formatDuration(n, 'us');
  return `${formatCount(n)} ${n === 1 ? 'sample' : 'samples'}`;
}
