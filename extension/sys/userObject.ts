// A user's own BPF object (Run BPF Program, Load and Verify, a BPF project's loader) is
// root-equivalent once loaded, so the helper loads one only when the request carries the
// SHA-256 the user confirmed in the editor (extension/editor/helperClient/objectConfirm.ts), and only if it is a
// regular ELF file for EM_BPF. It opens the file once, checks and hashes the bytes read from
// that fd, and hands libbpf a private root-only copy of exactly those bytes: a file swapped or
// rewritten after the check is never what gets loaded.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inputError } from '../protocol/errors';
import { openRegularFile, readOpened } from './elf/fileCheck';

export const EM_BPF = 247;
/** Objects larger than this are refused before they are read (ours are under 1 MiB). */
export const MAX_OBJECT_BYTES = 64 * 1024 * 1024;
/** The `.bpf.c` next to an object is read for annotations only up to this size. */
export const MAX_SOURCE_BYTES = 4 * 1024 * 1024;
const SHA256 = /^[0-9a-f]{64}$/;

export interface UserObject {
  /** the path the user named, for messages */
  original: string;
  /** the private copy libbpf opens */
  path: string;
  sha256: string;
  dispose(): void;
}

/** Reads a regular file through one fd, refusing FIFOs, devices and anything over `limit` bytes. */
export function readRegularOnce(file: string, limit: number, what: string): Buffer {
  const { fd, st } = openRegularFile(file, what);
  try {
    if (st.size > limit) throw inputError(`${what} ${file} is ${st.size} bytes, over the limit of ${limit}`);
    return readOpened(fd, st.size);
  } finally {
    fs.closeSync(fd);
  }
}

export function sha256(buf: Buffer): string {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

/** Why these bytes are not a BPF ELF object, or undefined. */
export function notBpfElf(b: Buffer): string | undefined {
  if (b.length < 20 || b.readUInt32BE(0) !== 0x7f454c46) return 'is not an ELF object file';
  const machine = b[5] === 1 ? b.readUInt16LE(18) : b.readUInt16BE(18);
  if (machine !== EM_BPF) return `is an ELF file for another machine (e_machine ${machine}), not BPF (e_machine ${EM_BPF})`;
  return undefined;
}

/**
 * Opens the user's object for loading as root: refuses without a matching confirmation, or when
 * it is not a regular BPF ELF file. The caller must dispose() the private copy.
 */
export function openUserObject(objectPath: string, confirmedSha256: unknown): UserObject {
  if (!path.isAbsolute(objectPath)) throw inputError(`objectPath must be absolute, got "${objectPath}"`);
  const bytes = readRegularOnce(objectPath, MAX_OBJECT_BYTES, 'object file');
  const bad = notBpfElf(bytes);
  if (bad) throw inputError(`${objectPath} ${bad}: give a .bpf.o built with clang -target bpf`);
  const hash = sha256(bytes);
  if (typeof confirmedSha256 !== 'string' || !SHA256.test(confirmedSha256)) {
    throw inputError(`refused: loading ${objectPath} into the kernel needs your confirmation (a request without confirmedSha256); run the command from the editor, which asks`);
  }
  if (confirmedSha256 !== hash) {
    throw inputError(`refused: ${objectPath} changed since you confirmed it (SHA-256 ${hash.slice(0, 12)}…, confirmed ${confirmedSha256.slice(0, 12)}…); run the command again to confirm the new build`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpf-studio-obj-'));
  fs.chmodSync(dir, 0o700);
  const copy = path.join(dir, path.basename(objectPath));
  fs.writeFileSync(copy, bytes, { mode: 0o400, flag: 'wx' });
  return { original: objectPath, path: copy, sha256: hash, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A source file read for annotations: regular, at most MAX_SOURCE_BYTES, through one fd; '' when unusable. */
export function readSourceOnce(file: string): string {
  try {
    return readRegularOnce(file, MAX_SOURCE_BYTES, 'source file').toString('utf8');
  } catch {
    return '';
  }
}
