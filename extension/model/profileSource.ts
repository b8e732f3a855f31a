// Which lines of which source files a CPU profile touched, for CodeLens and line heat in the
// editor: per function its self and total share with the lowest sampled line as its anchor,
// per line its self (leaf) and total (on the stack) samples. Pure (no vscode).
import { stackValue, type ProfileEvent, type ProfileResult, type ThreadState } from '../protocol/profile';
import { isJavaKind } from '../protocol/frames';
import type { FlameProfile } from './flamegraph/profileData';
import { frameTotals } from './flamegraph/model';

export interface FunctionShare {
  name: string;
  /** lowest sampled line: the CodeLens goes on the definition found at or above it */
  line: number;
  self: number;
  total: number;
}

export interface LineShare {
  self: number;
  total: number;
}

/** Off-CPU time at one source line: the stacks whose application code waits there (the line that blocks). */
export interface LineWait {
  /** µs */
  total: number;
  /** µs per state (sleep, io, lock, preempted) */
  states: Partial<Record<ThreadState, number>>;
}

export interface SourceAnnotations {
  /** samples in the profile (the 100%); off-CPU and wall profiles: µs */
  samples: number;
  /** what the weights measure (absent: CPU samples) */
  event?: ProfileEvent;
  functions: Map<string, FunctionShare[]>;
  lines: Map<string, Map<number, LineShare>>;
  /**
   * Off-CPU and wall profiles: per Java source file as its frames name it (relative to a source
   * root, "com/x/Foo.java"), the lines where threads waited; waitTotal is all off-CPU µs (the 100%).
   */
  waits?: Map<string, Map<number, LineWait>>;
  waitTotal?: number;
}

/** From the profiler's result: exact per-line counts. Only absolute paths can match editor files. */
export function annotationsFromResult(r: ProfileResult): SourceAnnotations {
  const functions = new Map<string, Map<string, FunctionShare>>();
  const lines = new Map<string, Map<number, LineShare>>();
  let samples = 0;
  for (const s of r.stacks) {
    const w = stackValue(s);
    samples += w;
    const seenFn = new Set<string>();
    const seenLine = new Set<string>();
    s.frames.forEach((f, i) => {
      if (!f.file || !f.line || !f.file.startsWith('/')) return;
      const fnName = f.function ?? `${f.address}`;
      let perFile = functions.get(f.file);
      if (!perFile) functions.set(f.file, (perFile = new Map()));
      let fn = perFile.get(fnName);
      if (!fn) perFile.set(fnName, (fn = { name: fnName, line: f.line, self: 0, total: 0 }));
      fn.line = Math.min(fn.line, f.line);
      if (i === 0) fn.self += w;
      const fk = `${f.file}\0${fnName}`;
      if (!seenFn.has(fk)) {
        seenFn.add(fk);
        fn.total += w;
      }
      let perLine = lines.get(f.file);
      if (!perLine) lines.set(f.file, (perLine = new Map()));
      let ls = perLine.get(f.line);
      if (!ls) perLine.set(f.line, (ls = { self: 0, total: 0 }));
      if (i === 0) ls.self += w;
      const lk = `${f.file}\0${f.line}`;
      if (!seenLine.has(lk)) {
        seenLine.add(lk);
        ls.total += w;
      }
    });
  }
  const out = new Map<string, FunctionShare[]>();
  for (const [file, m] of functions) out.set(file, [...m.values()]);
  // every event measured in waited time (off-CPU, wall, Java locks, virtual threads) gets the wait lenses
  const offcpu = r.event === 'offcpu' || r.event === 'wall' || r.event === 'lock' || r.event === 'vthread';
  return { samples, ...(r.event && r.event !== 'cpu' ? { event: r.event } : {}), functions: out, lines, ...(offcpu ? javaWaits(r) : {}) };
}

/** Sources of the JDK's own classes (java.util.concurrent.locks.LockSupport…): not the application's line that waits. */
const JDK_SOURCE = /^(java|javax|jdk|sun|com\/sun)\//;

/**
 * Off-CPU time by the line where each waiting stack's application code waits: its innermost Java
 * frame with a file:line outside the JDK (ReentrantLock.lock → LockSupport.park lands on the
 * caller's lock() line), else its innermost Java frame with one.
 */
function javaWaits(r: ProfileResult): { waits: Map<string, Map<number, LineWait>>; waitTotal: number } {
  const waits = new Map<string, Map<number, LineWait>>();
  let waitTotal = 0;
  for (const s of r.stacks) {
    if (!s.state || s.state === 'oncpu') continue;
    const w = stackValue(s);
    waitTotal += w;
    const java = s.frames.filter((x) => isJavaKind(x.kind) && x.file && x.line);
    const f = java.find((x) => !JDK_SOURCE.test(x.file!)) ?? java[0];
    if (!f?.file || !f.line) continue;
    let perLine = waits.get(f.file);
    if (!perLine) waits.set(f.file, (perLine = new Map()));
    let lw = perLine.get(f.line);
    if (!lw) perLine.set(f.line, (lw = { total: 0, states: {} }));
    lw.total += w;
    lw.states[s.state] = (lw.states[s.state] ?? 0) + w;
  }
  return { waits, waitTotal };
}

/**
 * The waits of an editor file: Java frames name their source relative to a source root
 * ("com/x/Foo.java"), so a file matches when its path ends with that name (or equals it).
 */
export function waitsForFile(a: SourceAnnotations, fsPath: string): Map<number, LineWait> | undefined {
  if (!a.waits) return undefined;
  const norm = fsPath.replace(/\\/g, '/');
  let out: Map<number, LineWait> | undefined;
  for (const [file, perLine] of a.waits) {
    const rel = file.replace(/\\/g, '/');
    if (norm !== rel && !norm.endsWith(rel.startsWith('/') ? rel : `/${rel}`)) continue;
    if (!out) out = new Map();
    for (const [line, lw] of perLine) {
      const m = out.get(line) ?? { total: 0, states: {} };
      m.total += lw.total;
      for (const [st, v] of Object.entries(lw.states) as [ThreadState, number][]) m.states[st] = (m.states[st] ?? 0) + v;
      out.set(line, m);
    }
  }
  return out;
}

const STATE_WORD: Record<ThreadState, string> = { oncpu: 'on CPU', sleep: 'sleep', io: 'I/O', lock: 'lock', preempted: 'preempted', idle: 'carrier idle' };

/** "2.3 s", "45 ms", "120 µs" from µs. */
export function waitDuration(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(1)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(us >= 1e5 ? 0 : 1)} ms`;
  return `${Math.round(us)} µs`;
}

/** CodeLens title of a line where threads waited: "⏸ 2.3 s waiting (74%) · lock 1.1 s · sleep 1.2 s". */
export function waitLensTitle(w: LineWait, waitTotal: number): string {
  const share = waitTotal > 0 ? ` (${((100 * w.total) / waitTotal).toFixed(0)}%)` : '';
  const states = (Object.entries(w.states) as [ThreadState, number][])
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([st, v]) => `${STATE_WORD[st]} ${waitDuration(v)}`);
  return [`⏸ ${waitDuration(w.total)} waiting${share}`, ...states].join(' · ');
}

/** From an imported profile: one line per function (its hottest), no per-line detail beyond that. */
export function annotationsFromFlame(p: FlameProfile): SourceAnnotations {
  const { self, total } = frameTotals(p);
  const functions = new Map<string, FunctionShare[]>();
  const lines = new Map<string, Map<number, LineShare>>();
  p.frames.forEach((f, i) => {
    if (!f.file || !f.line || !f.file.startsWith('/')) return;
    const list = functions.get(f.file) ?? [];
    list.push({ name: f.name, line: f.line, self: self[i], total: total[i] });
    functions.set(f.file, list);
    const perLine = lines.get(f.file) ?? new Map<number, LineShare>();
    perLine.set(f.line, { self: self[i], total: total[i] });
    lines.set(f.file, perLine);
  });
  return { samples: p.total, functions, lines };
}

/** The bare name to look for in source: "void Hot.loop(long)" → "loop", "ns::f(int)" → "f". */
export function shortFunctionName(name: string): string {
  const noArgs = name.replace(/\(.*$/, '').trim();
  const last = noArgs.split(/\s+/).pop() ?? noArgs;
  const parts = last.split(/::|\./);
  return parts[parts.length - 1] || last;
}

/** The definition line (1-based) of a function at or above a sampled line, else that line. */
export function definitionLine(lines: string[], name: string, sampledLine: number, lookBack = 300): number {
  const short = shortFunctionName(name);
  if (!/^[A-Za-z_$][\w$]*$/.test(short)) return sampledLine;
  const re = new RegExp(`\\b${short.replace(/\$/g, '\\$')}\\s*\\(`);
  for (let l = Math.min(sampledLine, lines.length); l >= Math.max(1, sampledLine - lookBack); l--) if (re.test(lines[l - 1])) return l;
  return sampledLine;
}
