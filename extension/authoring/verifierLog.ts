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
    .filter((l) => l.trim() !== '')
    .join('\n');
  const fallback = sources[0] ? { file: sources[0].path, line: 1, column: 1 } : { file: '', line: 1, column: 1 };
  const loc = where ?? fallback;
  return {
    ...loc,
    severity: 'error',
    message: errorLines.join('\n') + (where ? '' : annotationText ? '' : ' (the log names no source line: was the object built with -g?)'),
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
