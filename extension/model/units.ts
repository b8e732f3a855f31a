// Human-readable sizes for every view and the CLI. Pure (no Node, no DOM).

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
