// Maps a BPF verifier log to source diagnostics. With BTF line info the log interleaves
// instructions with the source they came from ("; *val += 1; @ prog.bpf.c:22"); the rejected
// instruction is the last one printed before the error, and its nearest preceding source
// annotation names the line. Older kernels print "; *val += 1;" without "@ file:line": then the
// text is searched for in the sources we were given. Pure: text in, diagnostics out.
import path from 'node:path';
import type { VerifierDiagnostic } from '../protocol/authoring';

export interface SourceFile {
  path: string;
  text: string;
}

export interface ProgramLog {
  program?: string;
  lines: string[];
}

const INSN = /^(\d+): \((?:[0-9a-f]{2})\)/;
const STATE = /^(\d+:|from \d+ to \d+:)\s*R\d/;
const ANNOTATION = /^;\s?(.*?)(?:\s@\s(\S+):(\d+))?\s*$/;
const TRAILER = /^(processed \d+ insns|verification time|stack depth|-- END PROG LOAD LOG --|libbpf: )/;
const NOISE = /^(mark_precise:|last_idx|regs=|parent (didn't|already)|frame\d+:|propagating |caller:|callee:|returning from callee|\s*$)/;
/** a line-info annotation without a line ("; @ prog.bpf.c:0"): compiler-made code, it names nothing */
const EMPTY_ANNOTATION = /^;\s*(@\s*\S+:0)?\s*$/;

const HINTS: [RegExp, string][] = [
  [/_or_null'|invalid mem access 'scalar'.*or_null|R\d+ is ptr_\w+_or_null/, 'The pointer may be NULL (bpf_map_lookup_elem, bpf_ringbuf_reserve and similar return NULL on failure): test it, e.g. "if (!val) return 0;", before using it.'],
  [/back-edge|infinite loop detected|loop is not bounded|unreachable insn|BPF program is too large|too many states|complexity limit/, 'The verifier cannot prove the loop ends (or the paths are too many): give the loop a constant bound (for (int i = 0; i < N && i < len; i++)), or use bpf_loop()/bpf_for().'],
  [/GPL-incompatible|cannot call GPL-restricted function/, 'This helper is GPL-only: declare char LICENSE[] SEC("license") = "GPL";'],
  [/unknown func|program of this type cannot use helper|helper call is not allowed|not allowed in (?:this|non-sleepable)|calling kernel function .* is not allowed|cannot be called from/, 'This helper or kfunc is not allowed in this program type (its SEC()): use one the type allows (see the helper\'s documentation on hover), or change the section.'],
  [/invalid access to (?:map value|packet|memory)|outside of the allowed memory range|min value is negative|unbounded memory access|out of bounds|invalid (?:variable-offset|read|write) .*stack|value_size=\d+ off=|invalid access to|max value is outside/, 'An access the verifier cannot prove is in bounds: check the index or length against the buffer size right before the access (e.g. "if (i >= N) return 0;"), and keep sizes unsigned.'],
  [/!read_ok|invalid indirect read from stack|uninitialized/, 'A register or stack slot is read before it is written: initialise the variable or buffer (e.g. "= {}") before passing it to a helper.'],
  [/R\d+ invalid mem access 'scalar'|invalid mem access 'inv'/, 'A plain number is dereferenced as a pointer: read kernel memory with BPF_CORE_READ() or bpf_probe_read_kernel() instead of "->" on an untyped pointer.'],
];

/** A one-line explanation of a common verifier rejection, or undefined. */
export function verifierHint(message: string): string | undefined {
  return HINTS.find(([re]) => re.test(message))?.[1];
}

export interface ProgramStats {
  program?: string;
  /** instructions the verifier processed (over all paths) */
  insns: number;
  /** verification time in microseconds, when the kernel printed it (log level with BPF_LOG_STATS) */
  timeUs?: number;
  totalStates?: number;
  peakStates?: number;
}

/** "processed N insns ... total_states T peak_states P" and "verification time X usec" per program. */
export function verifierStats(log: string): ProgramStats[] {
  const out: ProgramStats[] = [];
  for (const p of splitPrograms(log)) {
    const text = p.lines.join('\n');
    const m = /processed (\d+) insns(?:.*?total_states (\d+))?(?:.*?peak_states (\d+))?/.exec(text);
    if (!m) continue;
    const time = /verification time (\d+) usec/.exec(text);
    out.push({ program: p.program, insns: Number(m[1]), timeUs: time ? Number(time[1]) : undefined, totalStates: m[2] ? Number(m[2]) : undefined, peakStates: m[3] ? Number(m[3]) : undefined });
  }
  return out;
}

/** "on_exec: 42 instructions processed, verified in 310 µs" lines for an accepted object. */
export function formatStats(stats: ProgramStats[]): string {
  return stats.map((s) => `${s.program ?? 'program'}: ${s.insns} instructions processed${s.timeUs !== undefined ? `, verified in ${s.timeUs} µs` : ''}${s.peakStates !== undefined ? ` (peak ${s.peakStates} states)` : ''}`).join('\n');
}

/** Splits libbpf's "-- BEGIN PROG LOAD LOG --" blocks, the addon's "== program X ==" blocks, or a bare log. */
export function splitPrograms(log: string): ProgramLog[] {
  const lines = log.replace(/\r/g, '').split('\n');
  const out: ProgramLog[] = [];
  let cur: ProgramLog | undefined;
  let inLibbpfBlock = false;
  for (const raw of lines) {
    const begin = /^libbpf: prog '([^']+)': -- BEGIN PROG LOAD LOG --/.exec(raw);
    if (begin) {
      cur = { program: begin[1], lines: [] };
      out.push(cur);
      inLibbpfBlock = true;
      continue;
    }
    if (/^-- END PROG LOAD LOG --/.test(raw)) {
      inLibbpfBlock = false;
      cur = undefined;
      continue;
    }
    const addon = /^== program (\S+) ==$/.exec(raw);
    if (addon) {
      cur = { program: addon[1], lines: [] };
      out.push(cur);
      continue;
    }
    if (/^== libbpf ==$/.test(raw)) {
      cur = undefined;
      continue;
    }
    if (!inLibbpfBlock && raw.startsWith('libbpf: ')) continue;
    if (!cur) {
      cur = { lines: [] };
      out.push(cur);
    }
    cur.lines.push(raw);
  }
  return out.filter((p) => p.lines.some((l) => l.trim() !== ''));
}

/** The program libbpf names as failed ("prog 'x': failed to load"), if any. */
export function failedProgram(log: string): string | undefined {
  return /libbpf: prog '([^']+)': (?:failed to load|BPF program load failed)/.exec(log)?.[1];
}

function locateText(text: string, sources: SourceFile[], hintFile?: string): { file: string; line: number; column: number } | undefined {
  const needle = text.trim();
  if (!needle) return undefined;
  const ordered = hintFile ? [...sources].sort((a, b) => Number(path.basename(b.path) === hintFile) - Number(path.basename(a.path) === hintFile)) : sources;
  for (const s of ordered) {
    const lines = s.text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const col = lines[i].indexOf(needle);
      if (col >= 0) return { file: s.path, line: i + 1, column: col + 1 };
    }
  }
  return undefined;
}

function columnOf(text: string, file: string, line: number, sources: SourceFile[]): { file: string; column: number } {
  const src = sources.find((s) => s.path === file || path.basename(s.path) === path.basename(file));
  if (!src) return { file, column: 1 };
  const lineText = src.text.split('\n')[line - 1] ?? '';
  const idx = text.trim() ? lineText.indexOf(text.trim()) : -1;
  const firstNonSpace = lineText.search(/\S/);
  return { file: src.path, column: idx >= 0 ? idx + 1 : firstNonSpace >= 0 ? firstNonSpace + 1 : 1 };
}

/** Diagnoses one program's log; undefined when it holds no error (a successful load's log). */
export function diagnoseProgram(p: ProgramLog, sources: SourceFile[] = []): VerifierDiagnostic | undefined {
  const lines = p.lines;
  // The error sits between the last instruction and the trailer ("processed N insns ...").
  let end = lines.length;
  for (let i = 0; i < lines.length; i++) {
    if (/^processed \d+ insns/.test(lines[i])) {
      end = i;
      break;
    }
  }
  let lastInsn = -1;
  for (let i = end - 1; i >= 0; i--) {
    if (INSN.test(lines[i])) {
      lastInsn = i;
      break;
    }
  }
  const errorLines = lines
    .slice(lastInsn + 1, end)
    .filter((l) => !ANNOTATION.test(l) && !STATE.test(l) && !INSN.test(l) && !TRAILER.test(l) && !NOISE.test(l))
    .map((l) => l.trim());
  // A successful log ends in "processed ..." right after the last instruction.
  if (errorLines.length === 0) {
    if (end < lines.length) return undefined;
    const tail = lines.filter((l) => l.trim() && !TRAILER.test(l));
    if (tail.length === 0) return undefined;
    errorLines.push(tail[tail.length - 1].trim());
  }
  let where: { file: string; line: number; column: number } | undefined;
  let annotationText = '';
  for (let i = (lastInsn >= 0 ? lastInsn : end) - 1; i >= 0 && !where; i--) {
    const m = ANNOTATION.exec(lines[i]);
    if (!m || !lines[i].startsWith(';')) continue;
    const [, text, file, lineNo] = m;
    if (file && Number(lineNo) > 0) {
      const col = columnOf(text, file, Number(lineNo), sources);
      where = { file: col.file, line: Number(lineNo), column: col.column };
      annotationText = text;
    } else if (!file && text.trim()) {
      where = locateText(text, sources);
      annotationText = text;
    }
  }
  const excerptStart = Math.max(0, (lastInsn >= 0 ? lastInsn : end) - 6);
  const excerpt = lines
    .slice(excerptStart, Math.min(lines.length, Math.max(end, lastInsn + 1 + errorLines.length)))
    .filter((l) => l.trim() !== '' && !EMPTY_ANNOTATION.test(l) && !TRAILER.test(l))
    .join('\n');
  const fallback = sources[0] ? { file: sources[0].path, line: 1, column: 1 } : { file: '', line: 1, column: 1 };
  const loc = where ?? fallback;
  const message = errorLines.join('\n');
  return {
    ...loc,
    severity: 'error',
    message: message + (where ? '' : annotationText ? '' : ' (the log names no source line: was the object built with -g?)'),
    hint: verifierHint(message),
    program: p.program,
    excerpt,
  };
}

/** Every rejected program's diagnostic. `sources` (optional) turn basenames into paths and give columns. */
export function verifierDiagnostics(log: string, sources: SourceFile[] = []): VerifierDiagnostic[] {
  const progs = splitPrograms(log);
  const failed = failedProgram(log);
  const diags: VerifierDiagnostic[] = [];
  for (const p of progs) {
    if (failed && p.program && p.program !== failed) continue;
    const d = diagnoseProgram(p, sources);
    if (d) diags.push(d);
  }
  return diags;
}

/** Whether the text holds a verifier log at all (vs. only libbpf's summary lines). */
export function hasVerifierLog(log: string): boolean {
  return /BEGIN PROG LOAD LOG|^== program /m.test(log) || /^\d+: \(/m.test(log);
}
