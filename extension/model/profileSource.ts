// Which lines of which source files a CPU profile touched, for CodeLens and line heat in the
// editor: per function its self and total share with the lowest sampled line as its anchor,
// per line its self (leaf) and total (on the stack) samples. Pure (no vscode).
import { stackValue, type ProfileEvent, type ProfileResult } from '../protocol/profile';
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

export interface SourceAnnotations {
  /** samples in the profile (the 100%); off-CPU and wall profiles: µs */
  samples: number;
  /** what the weights measure (absent: CPU samples) */
  event?: ProfileEvent;
  functions: Map<string, FunctionShare[]>;
  lines: Map<string, Map<number, LineShare>>;
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
  return { samples, ...(r.event && r.event !== 'cpu' ? { event: r.event } : {}), functions: out, lines };
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
