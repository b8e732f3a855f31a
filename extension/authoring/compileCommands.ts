// compile_commands.json for clangd: every BPF build writes an entry with the exact clang command
// it ran (-target bpf, -D__TARGET_ARCH_<arch>, -I to the generated vmlinux.h, the multiarch and
// configured include folders), so clangd's diagnostics, completion and go-to-definition match
// the real build. A project's own entries are kept: only the entry for the same file is
// replaced. The merge is pure; the write is atomic (temp file + rename) so clangd never reads
// half a file. Hand-written: no library does this merge (bear/compiledb generate from builds).
import fs from 'node:fs';
import path from 'node:path';
import { inputError } from '../protocol/errors';

export interface CompileEntry {
  directory: string;
  file: string;
  arguments: string[];
  output?: string;
}

export const COMPILE_COMMANDS = 'compile_commands.json';

/** The entry for one clang run (`command` is [clang, ...args] as compileBpf ran it). */
export function entryFor(command: string[], source: string, output: string, directory: string): CompileEntry {
  return { directory, file: path.resolve(directory, source), arguments: command, output };
}

function entryFile(e: { directory?: unknown; file?: unknown }): string | undefined {
  if (typeof e.file !== 'string') return undefined;
  return path.resolve(typeof e.directory === 'string' ? e.directory : '/', e.file);
}

/**
 * `existing` (the file's text, or undefined when there is none) with `entries` added, replacing
 * only entries for the same files. Throws an input error when the existing file is not a JSON
 * array: overwriting it would destroy the project's own database.
 */
export function mergeCompileCommands(existing: string | undefined, entries: CompileEntry[], where = COMPILE_COMMANDS): string {
  let list: unknown[] = [];
  if (existing !== undefined && existing.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(existing);
    } catch (e) {
      throw inputError(`${where} is not valid JSON (${(e as Error).message}); fix or delete it so the BPF build can add its entries`);
    }
    if (!Array.isArray(parsed)) throw inputError(`${where} is not a JSON array of compile commands; fix or delete it so the BPF build can add its entries`);
    list = parsed;
  }
  const replaced = new Set(entries.map((e) => path.resolve(e.directory, e.file)));
  const kept = list.filter((e) => {
    if (!e || typeof e !== 'object') return true;
    const f = entryFile(e as { directory?: unknown; file?: unknown });
    return !f || !replaced.has(f);
  });
  return JSON.stringify([...kept, ...entries], null, 2) + '\n';
}

/** Merges `entries` into DIR/compile_commands.json atomically; returns the file's path. */
export function updateCompileCommands(dir: string, entries: CompileEntry[]): string {
  const file = path.join(dir, COMPILE_COMMANDS);
  let existing: string | undefined;
  try {
    existing = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw inputError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const text = mergeCompileCommands(existing, entries, file);
  if (text === existing) return file;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
  return file;
}

/**
 * Where a build of `source` records its command: the nearest folder between the source and the
 * workspace root that already holds a compile_commands.json, else the source's folder when it is
 * a project (has a Makefile), else the workspace root. One database per project, never a second
 * one at the root for a project in a subfolder. `projectEntry`: that database already has an
 * entry for the source (written by New BPF Project for its Makefile).
 */
export function compileCommandsDir(source: string, workspaceRoot: string): { dir: string; projectEntry: boolean } {
  const file = path.resolve(source);
  const root = path.resolve(workspaceRoot);
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const db = path.join(dir, COMPILE_COMMANDS);
    if (fs.existsSync(db)) {
      let projectEntry = false;
      try {
        const list = JSON.parse(fs.readFileSync(db, 'utf8')) as { directory?: unknown; file?: unknown }[];
        projectEntry = Array.isArray(list) && fs.existsSync(path.join(dir, 'Makefile')) && list.some((e) => e && entryFile(e) === file);
      } catch {
        /* unreadable: updateCompileCommands reports it */
      }
      return { dir, projectEntry };
    }
    if (dir === root || !dir.startsWith(root + path.sep) || dir === path.dirname(dir)) break;
  }
  if (fs.existsSync(path.join(path.dirname(file), 'Makefile'))) return { dir: path.dirname(file), projectEntry: false };
  return { dir: root, projectEntry: false };
}
