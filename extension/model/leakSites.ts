// Where the leak CodeLenses go, without VS Code: each stack's leak site is the first frame whose
// source file lies in the workspace, skipping allocator wrappers (xmalloc-style helpers), with
// inlined frames considered innermost first. Stacks sharing a site are summed.
import { formatBytes } from './units';
import type { MemleakFrame, MemleakStack } from '../protocol/memleak';
import { combineStdErr } from './memleakSampling';

export interface LeakSite {
  /** "file:line", stable across updates */
  key: string;
  file: string;
  line: number;
  bytes: number;
  allocations: number;
  oldestAgeMs: number;
  /** indexes into the stacks it was built from */
  stacks: number[];
  /** sampled sessions: bytes and allocations are estimates with this standard error */
  bytesStdErr?: number;
}

export interface LeakLens {
  file: string;
  /** 1-based */
  line: number;
  text: string;
  key: string;
}

/** Functions that only wrap the allocator: their callers are the leak sites. */
export const DEFAULT_WRAPPERS = /^(x|safe_|checked_|my_|g_|g_try_)?(malloc|calloc|realloc|reallocarray|strdup|strndup|zalloc|alloc|new|new0|malloc0)(_[a-z0-9]+)?$/i;

function inside(file: string, roots: string[]): boolean {
  return roots.some((r) => file === r || file.startsWith(r.endsWith('/') ? r : r + '/'));
}

/** Source locations of one frame, innermost (inlined) first. */
function locations(f: MemleakFrame): { file: string; line: number; function?: string }[] {
  const out: { file: string; line: number; function?: string }[] = [];
  for (const i of f.inlined ?? []) if (i.file && i.line) out.push({ file: i.file, line: i.line, function: i.function });
  if (f.file && f.line) out.push({ file: f.file, line: f.line, function: f.function });
  return out;
}

export function siteOf(stack: MemleakStack, roots: string[], wrappers: RegExp = DEFAULT_WRAPPERS): { file: string; line: number } | undefined {
  for (const f of stack.frames) {
    for (const loc of locations(f)) {
      if (!inside(loc.file, roots)) continue;
      const name = (loc.function ?? '').replace(/\(.*$/, '').replace(/^.*::/, '');
      if (name && wrappers.test(name)) continue;
      return { file: loc.file, line: loc.line };
    }
  }
  return undefined;
}

export function leakSites(stacks: MemleakStack[], roots: string[], wrappers?: RegExp): LeakSite[] {
  const by = new Map<string, LeakSite>();
  stacks.forEach((s, i) => {
    const at = siteOf(s, roots, wrappers);
    if (!at) return;
    const key = `${at.file}:${at.line}`;
    const site = by.get(key);
    if (site) {
      site.bytes += s.bytes;
      site.allocations += s.allocations;
      site.oldestAgeMs = Math.max(site.oldestAgeMs, s.oldestAgeMs);
      site.stacks.push(i);
      site.bytesStdErr = combineStdErr([site.bytesStdErr, s.bytesStdErr]);
    } else {
      const site: LeakSite = { key, file: at.file, line: at.line, bytes: s.bytes, allocations: s.allocations, oldestAgeMs: s.oldestAgeMs, stacks: [i] };
      if (s.bytesStdErr !== undefined) site.bytesStdErr = s.bytesStdErr;
      by.set(key, site);
    }
  });
  return [...by.values()].sort((a, b) => b.bytes - a.bytes);
}

/** Decimal units, as in "409.6 KB" for 409600 bytes. */
export function formatBytesDecimal(n: number): string {
  return formatBytes(n, 1000);
}

export function formatAge(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1).replace(/\.0$/, '')} h`;
}

/** Bytes per second over a site's recent history (oldest first); undefined with fewer than two points. */
export function growthRate(history: { atMs: number; bytes: number }[]): number | undefined {
  if (history.length < 2) return undefined;
  const first = history[0];
  const last = history[history.length - 1];
  const dt = (last.atMs - first.atMs) / 1000;
  return dt > 0 ? (last.bytes - first.bytes) / dt : undefined;
}

export function lensText(site: Pick<LeakSite, 'bytes' | 'allocations' | 'oldestAgeMs' | 'bytesStdErr'>, rate?: number): string {
  const est = site.bytesStdErr !== undefined;
  const parts = est
    ? [`⚠ ≈${formatBytesDecimal(site.bytes)} ± ${formatBytesDecimal(site.bytesStdErr!)} outstanding in ≈${site.allocations} allocation${site.allocations === 1 ? '' : 's'} (sampled estimate)`, `oldest ${formatAge(site.oldestAgeMs)}`]
    : [`⚠ ${formatBytesDecimal(site.bytes)} outstanding in ${site.allocations} allocation${site.allocations === 1 ? '' : 's'}`, `oldest ${formatAge(site.oldestAgeMs)}`];
  if (rate !== undefined) parts.push(`${rate >= 0 ? '+' : '-'}${formatBytesDecimal(Math.abs(rate))}/s`);
  return parts.join(' · ');
}

/** snapshot → lenses; `history` maps a site key to its bytes over recent updates. */
export function placeLenses(stacks: MemleakStack[], roots: string[], history?: Map<string, { atMs: number; bytes: number }[]>, wrappers?: RegExp): LeakLens[] {
  return leakSites(stacks, roots, wrappers).map((s) => ({ file: s.file, line: s.line, key: s.key, text: lensText(s, history ? growthRate(history.get(s.key) ?? []) : undefined) }));
}
