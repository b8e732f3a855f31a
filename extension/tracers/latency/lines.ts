// From a source line to the function to probe, and from a function's machine code to the
// instructions its calls end at. Pure: the texts parsed are llvm-dwarfdump's --debug-line output
// and objdump's disassembly (what the tracer runs), so it is unit-tested without either.

export interface LineRow {
  address: bigint;
  line: number;
  /** the source file's path as the line table names it (directory joined) */
  file: string;
  /** a statement start (is_stmt) */
  stmt: boolean;
}

export interface FunctionSymbol {
  name: string;
  /** link-time address */
  value: bigint;
  size: bigint;
}

const FILE_NAME = /^file_names\[\s*(\d+)\]:/;
const DIR = /^include_directories\[\s*(\d+)\] = "(.*)"$/;
const ROW = /^0x([0-9a-f]+)\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+\d+\s*(.*)$/;

/** The rows of every line table in `llvm-dwarfdump --debug-line` output, with their files' paths. */
export function parseDebugLine(text: string): LineRow[] {
  const rows: LineRow[] = [];
  let dirs = new Map<number, string>();
  let files = new Map<number, string>();
  let pending: { index: number; name?: string } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('debug_line[')) {
      dirs = new Map();
      files = new Map();
      continue;
    }
    const d = DIR.exec(line);
    if (d) {
      dirs.set(Number(d[1]), d[2]);
      continue;
    }
    const f = FILE_NAME.exec(line);
    if (f) {
      pending = { index: Number(f[1]) };
      continue;
    }
    if (pending && line.startsWith('name:')) {
      pending.name = line.slice(5).trim().replace(/^"|"$/g, '');
      continue;
    }
    if (pending?.name !== undefined && line.startsWith('dir_index:')) {
      const dir = dirs.get(Number(line.slice(10).trim())) ?? '';
      files.set(pending.index, pending.name.startsWith('/') || !dir ? pending.name : `${dir}/${pending.name}`);
      pending = undefined;
      continue;
    }
    const r = ROW.exec(line);
    if (r && !r[4].includes('end_sequence')) {
      rows.push({ address: BigInt('0x' + r[1]), line: Number(r[2]), file: files.get(Number(r[3])) ?? '', stmt: r[4].includes('is_stmt') });
    }
  }
  return rows;
}

/** How many trailing path components of `tablePath` match `wanted` (0: not the same file name). */
export function pathMatch(tablePath: string, wanted: string): number {
  const a = tablePath.split('/').filter((p) => p && p !== '.');
  const b = wanted.split('/').filter((p) => p && p !== '.');
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return n;
}

export type LinePick = { function: FunctionSymbol; line: number; file: string } | { why: string };

/** The function containing an address, from symbols sorted or not. */
function containing(symbols: FunctionSymbol[], a: bigint): FunctionSymbol | undefined {
  return symbols.find((s) => s.size > 0n && a >= s.value && a < s.value + s.size);
}

/**
 * The function FILE:LINE names: the line itself, or, from a function's signature, the first line
 * below it with code (its opening brace) within a few lines. Among the functions with code on that
 * line, the one it is the first line of (a definition), else the one with its lowest address.
 */
export function pickLine(rows: LineRow[], symbols: FunctionSymbol[], file: string, line: number): LinePick {
  const best = Math.max(0, ...rows.map((r) => pathMatch(r.file, file)));
  if (best === 0) return { why: `no line table names a file ${file} (was it compiled with -g?)` };
  const inFile = rows.filter((r) => pathMatch(r.file, file) === best);
  const lines = [...new Set(inFile.map((r) => r.line))].filter((l) => l >= line && l <= line + 3).sort((x, y) => x - y);
  if (!lines.length) return { why: `${file}:${line} has no code (no line table row there or in the 3 lines below)` };
  const at = inFile.filter((r) => r.line === lines[0]);
  const entries = at.map((r) => containing(symbols, r.address)).filter((s): s is FunctionSymbol => s !== undefined);
  if (!entries.length) return { why: `the code of ${file}:${lines[0]} lies in no function symbol` };
  const definition = entries.find((s) => at.some((r) => r.address === s.value));
  const lowest = [...at].sort((x, y) => (x.address < y.address ? -1 : 1)).map((r) => containing(symbols, r.address)).find(Boolean)!;
  return { function: definition ?? lowest, line: lines[0], file: at[0].file };
}

export interface ReturnSites {
  /** link-time addresses of the ret instructions */
  rets: bigint[];
  /** jumps out of the function (tail calls): its end is then not at a ret of its own */
  tailCalls: string[];
}

const INSN = /^\s*([0-9a-f]+):\s+(.*)$/;

/** ret instructions and jumps leaving [start, end) in `objdump -d --no-show-raw-insn` output. */
export function returnSites(disassembly: string, start: bigint, end: bigint): ReturnSites {
  const rets: bigint[] = [];
  const tailCalls: string[] = [];
  for (const l of disassembly.split('\n')) {
    const m = INSN.exec(l);
    if (!m) continue;
    const address = BigInt('0x' + m[1]);
    if (address < start || address >= end) continue;
    const insn = m[2].replace(/^(bnd|notrack|rep|repz)\s+/, '').trim();
    if (/^retq?\b/.test(insn)) {
      rets.push(address);
      continue;
    }
    const j = /^j[a-z]+\s+([0-9a-f]+)\s*(<[^>]*>)?/.exec(insn);
    if (j) {
      const target = BigInt('0x' + j[1]);
      if (target < start || target >= end) tailCalls.push(j[2] ? j[2].slice(1, -1) : `0x${j[1]}`);
    } else if (/^jmpq?\s+\*/.test(insn) && !/^notrack/.test(m[2].trim())) {
      // An indirect jump without notrack is a call through a pointer left as a jump.
      tailCalls.push(insn.replace(/\s+/g, ' '));
    }
  }
  return { rets, tailCalls };
}
