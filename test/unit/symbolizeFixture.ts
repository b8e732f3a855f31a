// Builds test/fixtures/c/symfix.c and reads what tests need to know about it: marker line
// numbers from the source, function addresses from nm, and the addresses the program prints.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const SYMFIX_SRC = path.resolve(__dirname, '../fixtures/c/symfix.c');

export function haveTool(name: string): boolean {
  return spawnSync(name, ['--version'], { stdio: 'ignore' }).status === 0;
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Compiles symfix.c into dir; extra flags such as -O2 or -no-pie. */
export function buildSymfix(dir: string, name: string, flags: string[]): string {
  const out = path.join(dir, name);
  execFileSync('gcc', ['-g', '-fno-omit-frame-pointer', ...flags, SYMFIX_SRC, '-o', out], { stdio: 'pipe' });
  return out;
}

/** "@line:NAME" markers → line numbers (1-based). */
export function markerLines(): Record<string, number> {
  const lines = fs.readFileSync(SYMFIX_SRC, 'utf8').split('\n');
  const out: Record<string, number> = {};
  lines.forEach((l, i) => {
    for (const m of l.matchAll(/@line:(\w+)/g)) out[m[1]] = i + 1;
    if (/^int main\(/.test(l)) out.main = i + 1;
  });
  return out;
}

/** Defined function symbols (name → link-time vaddr) from binutils nm, an oracle independent of our ELF reader. */
export function nmFunctions(file: string, dynamic = false): Map<string, bigint> {
  const text = execFileSync('nm', [...(dynamic ? ['-D'] : []), '--defined-only', file], { encoding: 'utf8' });
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([TtWwi]) (\S+)$/.exec(line.trim());
    if (m) out.set(m[3].replace(/@.*$/, ''), BigInt('0x' + m[1]));
  }
  return out;
}

/** Parses the "NAME 0xADDR" lines that symfix prints. */
export function parsePrinted(text: string): Record<string, bigint> {
  const out: Record<string, bigint> = {};
  for (const m of text.matchAll(/^(\w+) (0x[0-9a-f]+)$/gm)) out[m[1]] = BigInt(m[2]);
  return out;
}
