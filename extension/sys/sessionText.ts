// Reads a saved session file's text within SESSION_LIMITS: the size from fstat of the descriptor
// that is read, then at most maxFileBytes + 1 bytes, so a file that grows (or is swapped for a
// larger one) after the check costs no more than the limit. Then the JSON shape check
// (../model/readLimits.ts checkSessionJson) before anyone parses it.
import fs from 'node:fs';
import path from 'node:path';
import { ImportError, LimitError, SESSION_LIMITS, checkSessionJson, type SessionLimits } from '../model/readLimits';

/** Non-blocking, so a FIFO named like a session file cannot hold the open (then refused as not a file). */
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK;

const notFile = (name: string) => new ImportError(`${name} is not a regular file; a session file is written by "Export" in the Sessions view`);

function tooBig(name: string, size: number, limits: SessionLimits): LimitError {
  return LimitError.of('maxFileBytes', limits.maxFileBytes, name, `the size of the file (${size.toLocaleString('en-US')} bytes${size > limits.maxFileBytes + 1 ? '' : ' or more'})`);
}

/** Checks bytes already read (from a file system that is not the local one) against the limits; returns the text. */
export function sessionTextOf(bytes: Uint8Array, name: string, limits: SessionLimits = SESSION_LIMITS): string {
  if (bytes.length > limits.maxFileBytes) throw tooBig(name, bytes.length, limits);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
  checkSessionJson(text, name, limits);
  return text;
}

/** A session file's text by path, read within `limits`; throws a LimitError naming the file and the limit. */
export async function readSessionText(file: string, limits: SessionLimits = SESSION_LIMITS): Promise<string> {
  const name = path.basename(file);
  const fh = await fs.promises.open(file, OPEN_FLAGS);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw notFile(name);
    const size = st.size;
    if (size > limits.maxFileBytes) throw tooBig(name, size, limits);
    const buf = Buffer.alloc(Math.min(size, limits.maxFileBytes) + 1);
    let n = 0;
    for (let r = 1; r > 0 && n < buf.length; n += r) r = (await fh.read(buf, n, buf.length - n, n)).bytesRead;
    return sessionTextOf(buf.subarray(0, n), name, limits);
  } finally {
    await fh.close();
  }
}

/** The same, synchronously (the session store reads its own files while a panel is restored). */
export function readSessionTextSync(file: string, limits: SessionLimits = SESSION_LIMITS): string {
  const name = path.basename(file);
  const fd = fs.openSync(file, OPEN_FLAGS);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw notFile(name);
    const size = st.size;
    if (size > limits.maxFileBytes) throw tooBig(name, size, limits);
    const buf = Buffer.alloc(Math.min(size, limits.maxFileBytes) + 1);
    let n = 0;
    for (let r = 1; r > 0 && n < buf.length; n += r) r = fs.readSync(fd, buf, n, buf.length - n, n);
    return sessionTextOf(buf.subarray(0, n), name, limits);
  } finally {
    fs.closeSync(fd);
  }
}
