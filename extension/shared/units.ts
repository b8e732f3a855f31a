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
