// Checks of a user-given file before libbpf or our ELF reader opens it: exists, is a regular
// file (a FIFO or device would block or never end), not empty, and starts with ELF magic.
import fs from 'node:fs';
import { inputError } from '../../protocol/errors';

export interface FileHead {
  size: number;
  head: Buffer;
}

/**
 * Opens a user-given path once and checks the opened file, not the path, so the checks and the
 * read that follows see the same file: it exists and is a regular file. The caller closes the fd.
 */
export function openRegularFile(file: string, what: string): { fd: number; st: fs.Stats } {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears.
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw inputError(code === 'ENOENT' ? `${what} ${file} does not exist` : `cannot read ${what} ${file}: ${(e as Error).message}`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw inputError(`${what} ${file} is not a regular file`);
    return { fd, st };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** Reads `size` bytes of an opened file from its start (fewer if it shrank meanwhile). */
export function readOpened(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let got = 0;
  while (got < buf.length) {
    const n = fs.readSync(fd, buf, got, buf.length - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** Reads the first `bytes` bytes of a regular, non-empty file; `what` names it in errors. */
export function readRegularFileHead(file: string, bytes: number, what: string, emptyHint = ''): FileHead {
  const { fd, st } = openRegularFile(file, what);
  try {
    if (st.size === 0) throw inputError(`${what} ${file} is empty${emptyHint ? `: ${emptyHint}` : ''}`);
    const head = Buffer.alloc(Math.min(bytes, st.size));
    fs.readSync(fd, head, 0, head.length, 0);
    return { size: st.size, head };
  } finally {
    fs.closeSync(fd);
  }
}

export function isElfHead(head: Buffer): boolean {
  return head.length >= 4 && head.readUInt32BE(0) === 0x7f454c46;
}

/** A regular ELF file, or an input error naming `what` and the file. */
export function requireElfFile(file: string, what: string): void {
  const { head } = readRegularFileHead(file, 20, what);
  if (!isElfHead(head)) throw inputError(`${what} ${file} is not an ELF file (a shared library such as libjemalloc.so.2 is expected)`);
}
