// Renderings of a Java heap result (extension/protocol/javaHeap.ts) shared by the CLI and the
// editor: the allocation flame graph as a profile (bytes by stack, the allocated class as the
// leaf frame), folded stacks weighted by bytes, the leak report as text, the CodeLens line, and
// the leak view's rows and message (the live view and a reopened session draw the same).
// Pure: no node modules.
import type { JavaAllocStack, JavaHeapResult, JavaHeapStack } from '../protocol/javaHeap';
import type { LeakSnapshot, LeakViewStack } from './leakSites';
import type { ProfileFrame, ProfileResult } from '../protocol/profile';
import type { MemleakFrame } from '../protocol/memleak';
import { formatBytes } from './units';

/** The class frame at the leaf of an allocation stack: module "[class]" keeps it apart from methods. */
export const CLASS_MODULE = '[class]';

function javaProfileFrame(f: MemleakFrame): ProfileFrame {
  return { address: '0x0', module: '[java]', function: f.function ?? null, file: f.file ?? null, line: f.line ?? null, kind: 'jit' };
}

/**
 * The allocation flame graph as a profile document: each stack's `value` is estimated bytes, its
 * `count` estimated objects, `unit` "bytes"; frames leaf first, the allocated class first.
 */
export function toAllocProfile(r: JavaHeapResult, comm: string): ProfileResult {
  return {
    tracer: 'profile',
    unit: 'bytes',
    frequency: 0,
    samples: r.samples,
    lost: r.dropped,
    stacks: r.allocated.map((s: JavaAllocStack) => ({
      count: s.objects,
      value: s.bytes,
      pid: r.pid,
      tid: r.pid,
      comm,
      frames: [{ address: '0x0', module: CLASS_MODULE, function: s.class, file: null, line: null, kind: 'jit' as const }, ...s.frames.map(javaProfileFrame)],
    })),
  };
}

/** Folded stacks weighted by bytes, root first, the class last: "Main.main;Foo.bar;byte[] 123456". */
export function allocFolded(p: ProfileResult): string {
  const sums = new Map<string, number>();
  for (const s of p.stacks) {
    const key = [...s.frames].reverse().map((f) => (f.function ?? '[unknown]').replace(/[;\n\r ]/g, '_')).join(';');
    sums.set(key, (sums.get(key) ?? 0) + (s.value ?? s.count));
  }
  return [...sums.entries()].map(([k, v]) => `${k} ${v}`).join('\n');
}

const count = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)} k` : `${Math.round(n)}`);
const bytes = (n: number) => formatBytes(n, 1000);

/** "≈ 48 MB live in 12 k byte[] · survived 9 GCs · +2.1 MB/s" (the CodeLens and the report's head line). */
export function liveSiteText(s: JavaHeapStack): string {
  const growth = s.growthBytesPerSecond ? ` · ${s.growthBytesPerSecond > 0 ? '+' : '−'}${bytes(Math.abs(s.growthBytesPerSecond))}/s` : '';
  return `≈ ${bytes(s.bytes)} live in ${count(s.allocations)} ${s.class} · survived ${s.survivedGcs} GC${s.survivedGcs === 1 ? '' : 's'}${growth}`;
}

function frameLine(f: MemleakFrame): string {
  return `\t\t${f.function ?? '??'}${f.file ? ` (${f.file}${f.line ? `:${f.line}` : ''})` : ''}`;
}

/** The leak report: live sites, most live bytes first, leak candidates marked with their evidence. */
export function heapReportText(stacks: JavaHeapStack[], title: string, sampleBytes: number): string {
  const lines = [`${title}: ${stacks.length} Java allocation site${stacks.length === 1 ? '' : 's'} with live sampled objects (estimates from sampling every ~${sampleBytes} bytes; ± is one standard error):`];
  for (const s of stacks) {
    lines.push(`\t${s.leakCandidate ? 'LEAK? ' : ''}${liveSiteText(s)} (± ${bytes(s.bytesStdErr)}; ${bytes(s.allocatedBytes)} allocated)`);
    if (s.leakCandidate && s.evidence) lines.push(`\t  ${s.evidence}`);
    lines.push(...s.frames.map(frameLine));
  }
  return lines.join('\n');
}

/** The allocation report: the sites that allocated most, with their share of all bytes. */
export function allocReportText(r: JavaHeapResult, top = 20): string {
  const total = r.allocated.reduce((a, s) => a + s.bytes, 0);
  const head = `${r.samples} sampled allocations (every ~${r.sampleBytes} bytes) in ${(r.durationMs / 1000).toFixed(1)} s: ≈ ${bytes(total)} allocated, ${r.gcs} GCs`;
  const rows = r.allocated.slice(0, top).map((s) => {
    const at = s.frames[0];
    const pct = total ? ((100 * s.bytes) / total).toFixed(1).padStart(5) : '  0.0';
    return `${pct}%  ≈ ${bytes(s.bytes).padStart(9)}  ${s.class}  ${at?.function ?? '??'}${at?.file ? `  ${at.file}:${at.line ?? '?'}` : ''}`;
  });
  return [head, '', ' share   bytes      class  allocated at', ...rows].join('\n');
}

/** A Java leak site in the workspace: where its CodeLens goes and what it says. */
export interface JavaLeakLens {
  /** absolute path of the workspace file */
  file: string;
  /** 1-based */
  line: number;
  /** "file:line", stable across updates */
  key: string;
  text: string;
  leakCandidate: boolean;
  /** indexes of the stacks summed here */
  stacks: number[];
}

/**
 * Live Java sites → CodeLenses. A stack's site is its first frame whose source `resolve` finds in
 * the workspace (Java frames name "com/x/Foo.java", relative to a source root); stacks sharing a
 * line are summed (bytes, objects, growth; the most GCs survived; the class of the biggest).
 */
export function javaLeakLenses(stacks: JavaHeapStack[], resolve: (relative: string) => string | undefined): JavaLeakLens[] {
  const by = new Map<string, { lens: JavaLeakLens; sum: JavaHeapStack }>();
  stacks.forEach((s, i) => {
    for (const f of s.frames) {
      const file = f.file && f.line ? resolve(f.file) : undefined;
      if (!file) continue;
      const key = `${file}:${f.line}`;
      const at = by.get(key);
      if (!at) by.set(key, { lens: { file, line: f.line!, key, text: '', leakCandidate: s.leakCandidate, stacks: [i] }, sum: { ...s } });
      else {
        at.lens.stacks.push(i);
        at.lens.leakCandidate ||= s.leakCandidate;
        at.sum.bytes += s.bytes;
        at.sum.allocations += s.allocations;
        at.sum.growthBytesPerSecond += s.growthBytesPerSecond;
        at.sum.survivedGcs = Math.max(at.sum.survivedGcs, s.survivedGcs);
      }
      return;
    }
  });
  return [...by.values()]
    .map(({ lens, sum }) => ({ ...lens, text: `${lens.leakCandidate ? '⚠ ' : ''}${liveSiteText(sum)}` }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

/** What identifies a live Java site across updates: the allocated class and the frames' lines. */
export const javaHeapStackKey = (s: JavaHeapStack): string => `${s.class}|${s.frames.map((f) => `${f.function}:${f.line ?? ''}`).join(',')}`;

/**
 * The leak view's rows for live Java sites (webview/memleak): the view titles a stack by its first
 * frame, so that frame names the allocated class ("Foo.bar → new long[]"); each row keeps its
 * live bytes at each update (`history`, for the sparkline) and the workspace line of its lens.
 */
export function javaHeapViewStacks(stacks: JavaHeapStack[], history: ReadonlyMap<string, number[]>, lenses: readonly JavaLeakLens[]): (LeakViewStack & JavaHeapStack)[] {
  const siteOf = new Map<number, string>();
  for (const l of lenses) for (const i of l.stacks) siteOf.set(i, l.key);
  return stacks.map((s, i) => ({
    ...s,
    frames: s.frames.map((f, k) => (k === 0 ? { ...f, function: `${f.function} → new ${s.class}` } : f)),
    key: javaHeapStackKey(s),
    history: history.get(javaHeapStackKey(s)) ?? [s.bytes],
    site: siteOf.get(i),
  }));
}

/** What a Java heap session keeps (its saved session's data): the view's rows and totals. */
export interface JavaHeapViewData {
  /** the JVM */
  pid: number;
  /** estimated live bytes and objects over every site */
  totalBytes: number;
  totalAllocations: number;
  /** the mean sampling interval: every figure is an estimate */
  sampleBytes: number;
  /** as javaHeapViewStacks makes them */
  stacks: (LeakViewStack & JavaHeapStack)[];
}

/** The leak view's snapshot message for a Java heap session (nothing is dropped: the agent keeps every sample). */
export function javaHeapSnapshot(title: string, running: boolean, d: JavaHeapViewData): LeakSnapshot {
  return { type: 'snapshot', title, running, totalBytes: d.totalBytes, totalAllocations: d.totalAllocations, dropped: 0, stacks: d.stacks, sampleBytes: d.sampleBytes };
}
