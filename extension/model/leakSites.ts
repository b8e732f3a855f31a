// Where the leak CodeLenses go, without VS Code. Every workspace line of a leaking stack gets
// one: the allocation line (the first frame whose source file lies in the workspace, skipping
// allocator wrappers such as xmalloc, inlined frames innermost first: "allocated here") and each
// workspace caller above it ("via make_record: leaks 40 KB in 10 allocations"). Figures are
// inclusive: a line's bytes are those of every outstanding stack that passes through it, each
// stack counted once per line (recursion does not double it).
import { formatCount } from './units';
import type { MemleakFrame, MemleakStack } from '../protocol/memleak';
import { combineStdErr } from './memleakSampling';

/** A stack as the leak view shows it (and a saved memleak session keeps it). */
export interface LeakViewStack extends MemleakStack {
  /** stable identity across updates (the frames' addresses) */
  key: string;
  /** bytes outstanding at each report so far, oldest first */
  history: number[];
  /** the workspace leak site ("file:line") of this stack, if any */
  site?: string;
  /** every workspace line of this stack ("file:line"), the allocation line first */
  lines?: string[];
}

/** What the leak view draws: the outstanding stacks of one report. */
export interface LeakSnapshot {
  type: 'snapshot';
  title: string;
  running: boolean;
  totalBytes: number;
  totalAllocations: number;
  dropped: number;
  stacks: LeakViewStack[];
  /** the workspace lines with a CodeLens: the allocation lines and their callers, inclusive figures */
  sites?: LeakLens[];
  /** present when sampled: every figure is an estimate (mean sampling interval in bytes) */
  sampleBytes?: number;
  /** the session shown: one panel shows each new session, and a reload must restore the last */
  sessionKey?: string;
}

export interface LeakSite {
  /** "file:line", stable across updates */
  key: string;
  file: string;
  line: number;
  /** the allocation itself happens on this line (in at least one stack), or only calls leading to it */
  kind: 'allocation' | 'caller';
  /** the function this line belongs to, when known */
  function?: string;
  /** caller lines: the function called from here on the way to the allocation (of the largest stack) */
  via?: string;
  /** the allocation line of the largest stack through this line ("file:line") */
  allocatedAt?: string;
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
  /** exact figures and what the lens means (the CodeLens tooltip) */
  tooltip: string;
  key: string;
  kind: 'allocation' | 'caller';
}

/** Functions that only wrap the allocator: their callers are the leak sites. */
export const DEFAULT_WRAPPERS = /^(x|safe_|checked_|my_|g_|g_try_)?(malloc|calloc|realloc|reallocarray|strdup|strndup|zalloc|alloc|new|new0|malloc0)(_[a-z0-9]+)?$/i;

function inside(file: string, roots: string[]): boolean {
  return roots.some((r) => file === r || file.startsWith(r.endsWith('/') ? r : r + '/'));
}

interface Loc {
  file: string;
  line: number;
  function?: string;
}

/** Source locations of one frame, innermost (inlined) first. */
function locations(f: MemleakFrame): Loc[] {
  const out: Loc[] = [];
  for (const i of f.inlined ?? []) if (i.file && i.line) out.push({ file: i.file, line: i.line, function: i.function });
  if (f.file && f.line) out.push({ file: f.file, line: f.line, function: f.function });
  return out;
}

const bareName = (fn: string | undefined) => (fn ?? '').replace(/\(.*$/, '').replace(/^.*::/, '');

/** The workspace lines of one stack, innermost first: [0] is where it allocates, the rest call towards it. */
export function workspaceLines(stack: MemleakStack, roots: string[], wrappers: RegExp = DEFAULT_WRAPPERS): Loc[] {
  const out: Loc[] = [];
  for (const f of stack.frames) {
    for (const loc of locations(f)) {
      if (!inside(loc.file, roots)) continue;
      // a wrapper is skipped only below the allocation line: a wrapper called from a caller line
      // further up is still that caller's callee
      const name = bareName(loc.function);
      if (out.length === 0 && name && wrappers.test(name)) continue;
      out.push(loc);
    }
  }
  return out;
}

export function siteOf(stack: MemleakStack, roots: string[], wrappers: RegExp = DEFAULT_WRAPPERS): { file: string; line: number } | undefined {
  const [first] = workspaceLines(stack, roots, wrappers);
  return first ? { file: first.file, line: first.line } : undefined;
}

/** Every workspace line of every stack with inclusive figures, largest first. */
export function leakSites(stacks: MemleakStack[], roots: string[], wrappers?: RegExp): LeakSite[] {
  const by = new Map<string, LeakSite & { viaBytes: number }>();
  stacks.forEach((s, i) => {
    const lines = workspaceLines(s, roots, wrappers);
    if (!lines.length) return;
    const allocatedAt = `${lines[0].file}:${lines[0].line}`;
    const seen = new Set<string>();
    lines.forEach((loc, depth) => {
      const key = `${loc.file}:${loc.line}`;
      if (seen.has(key)) return;
      seen.add(key);
      const via = depth > 0 ? bareName(lines[depth - 1].function) || undefined : undefined;
      const site = by.get(key);
      if (site) {
        site.bytes += s.bytes;
        site.allocations += s.allocations;
        site.oldestAgeMs = Math.max(site.oldestAgeMs, s.oldestAgeMs);
        site.stacks.push(i);
        site.bytesStdErr = combineStdErr([site.bytesStdErr, s.bytesStdErr]);
        if (depth === 0) site.kind = 'allocation';
        if (s.bytes > site.viaBytes) {
          site.viaBytes = s.bytes;
          site.via = via;
          site.allocatedAt = allocatedAt;
        }
      } else {
        const fresh: LeakSite & { viaBytes: number } = {
          key,
          file: loc.file,
          line: loc.line,
          kind: depth === 0 ? 'allocation' : 'caller',
          bytes: s.bytes,
          allocations: s.allocations,
          oldestAgeMs: s.oldestAgeMs,
          stacks: [i],
          viaBytes: s.bytes,
          allocatedAt,
        };
        if (loc.function) fresh.function = bareName(loc.function);
        if (via) fresh.via = via;
        if (s.bytesStdErr !== undefined) fresh.bytesStdErr = s.bytesStdErr;
        by.set(key, fresh);
      }
    });
  });
  return [...by.values()]
    .map(({ viaBytes: _unused, ...site }) => {
      if (site.via === undefined) delete site.via;
      if (site.bytesStdErr === undefined) delete site.bytesStdErr;
      return site;
    })
    .sort((a, b) => b.bytes - a.bytes || (a.kind === b.kind ? 0 : a.kind === 'allocation' ? -1 : 1));
}

/**
 * The one size format of every leak figure (lens, view, status line): binary units written KB/MB,
 * as heaptrack and most memory tools print them — 10 × 4096 bytes read "40 KB". The exact bytes go
 * in the tooltip (exactBytes).
 */
export function formatLeakBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const s = i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v.toFixed(1).replace(/\.0$/, '');
  return `${n < 0 ? '-' : ''}${s} ${units[i]}`;
}

/** "40,960 bytes": the exact figure behind formatLeakBytes. */
export function exactBytes(n: number): string {
  return `${formatCount(n)} byte${Math.abs(n) === 1 ? '' : 's'}`;
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

type SiteFigures = Pick<LeakSite, 'bytes' | 'allocations' | 'oldestAgeMs' | 'bytesStdErr'> & Partial<Pick<LeakSite, 'kind' | 'via'>>;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * "⚠ allocated here: 40 KB outstanding in 10 allocations · oldest 12 s · +4 KB/s" on the allocation
 * line, "⚠ via make_record: leaks 40 KB in 10 allocations · …" on a caller line.
 */
export function lensText(site: SiteFigures, rate?: number): string {
  const est = site.bytesStdErr !== undefined;
  const size = est ? `≈${formatLeakBytes(site.bytes)} ± ${formatLeakBytes(site.bytesStdErr!)}` : formatLeakBytes(site.bytes);
  const count = est ? `≈${plural(site.allocations, 'allocation')} (sampled estimate)` : plural(site.allocations, 'allocation');
  const head = site.kind === 'caller' ? `⚠ via ${site.via ?? 'a call'}: leaks ${size} in ${count}` : `⚠ ${site.kind === 'allocation' ? 'allocated here: ' : ''}${size} outstanding in ${count}`;
  const parts = [head, `oldest ${formatAge(site.oldestAgeMs)}`];
  if (rate !== undefined) parts.push(`${rate >= 0 ? '+' : '-'}${formatLeakBytes(Math.abs(rate))}/s`);
  return parts.join(' · ');
}

/** The lens tooltip: exact bytes, and what the figures cover. */
export function lensTooltip(site: SiteFigures & Pick<LeakSite, 'stacks'> & Partial<Pick<LeakSite, 'allocatedAt'>>): string {
  const exact = `${site.bytesStdErr !== undefined ? '≈' : ''}${exactBytes(site.bytes)} in ${plural(site.allocations, 'allocation')} not yet freed, from ${plural(site.stacks.length, 'call stack')}`;
  const what =
    site.kind === 'caller'
      ? `This line calls ${site.via ?? 'a function'}, which leads to an allocation nobody freed${site.allocatedAt ? ` (${site.allocatedAt.slice(site.allocatedAt.lastIndexOf('/') + 1)})` : ''}; the figures include every leaking stack through this line.`
      : 'Memory allocated on this line and not yet freed; the figures include every leaking stack that allocates here.';
  return `${exact}. ${what} Click to show these stacks in the leak view.`;
}

/** snapshot → lenses; `history` maps a site key to its bytes over recent updates. */
export function placeLenses(stacks: MemleakStack[], roots: string[], history?: Map<string, { atMs: number; bytes: number }[]>, wrappers?: RegExp): LeakLens[] {
  return leakSites(stacks, roots, wrappers).map((s) => ({
    file: s.file,
    line: s.line,
    key: s.key,
    kind: s.kind,
    text: lensText(s, history ? growthRate(history.get(s.key) ?? []) : undefined),
    tooltip: lensTooltip(s),
  }));
}
