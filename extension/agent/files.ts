// The files the agent trusts: its config, the token or password file scrapers authenticate with,
// and its TLS certificate and key. The agent runs as root and acts on every process of the machine,
// so what these files say is root's decision: each must be owned by root or by the user the agent
// runs as, and writable by no one else. A secret (token, passwords, TLS key) must also not be
// readable by every user; its group may read it (0640 root:prometheus lets Prometheus scrape).
// Checked on the file actually opened (fstat of the descriptor), so a path swapped between check and
// read changes nothing; errors name the file and the fix, never its content.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inputError } from '../protocol/errors';
import { readOpened } from '../sys/elf/fileCheck';

/** More than any config or secret needs; a device or a log named by mistake is not read whole. */
const MAX_BYTES = 1 << 20;

export interface TrustedFile {
  text: Buffer;
  /** every user may read it: its content may be quoted in errors */
  worldReadable: boolean;
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

function openError(file: string, what: string, e: NodeJS.ErrnoException): Error {
  const code = e.code;
  const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable by this user' : code === 'ELOOP' ? 'is a symbolic link loop' : `cannot be opened (${code ?? 'error'})`;
  return inputError(`${what} ${file} ${why}: give the path of a readable file owned by root (see docs/agent.md)`);
}

/** Why a file with these stats may not be trusted, or undefined. */
export function untrustedFileReason(st: { uid: number; mode: number }, secret: boolean, euid = process.geteuid?.() ?? 0): string | undefined {
  if (st.uid !== 0 && st.uid !== euid)
    return `is owned by uid ${st.uid}, neither root nor the agent's user (uid ${euid}): whoever owns it decides what the agent does: run chown root on it`;
  if (st.mode & 0o022) return `is writable by ${st.mode & 0o002 ? 'every user' : 'its group'} (mode ${octal(st.mode)}): run chmod go-w on it`;
  if (secret && st.mode & 0o004) return `is a secret readable by every user (mode ${octal(st.mode)}): run chmod o-r on it (0640 root:GROUP lets one group, e.g. prometheus, read it)`;
  return undefined;
}

/** Reads `file` after checking owner, mode and type on the opened descriptor. */
export function readTrusted(file: string, what: string, secret: boolean): TrustedFile {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO named by mistake does not hang the agent before the type check refuses it.
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (e) {
    throw openError(file, what, e as NodeJS.ErrnoException);
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.isDirectory()) throw inputError(`${what} ${file} is a folder: give the path of a file`);
    if (!st.isFile()) throw inputError(`${what} ${file} is not a regular file: give the path of a file`);
    const why = untrustedFileReason(st, secret);
    if (why) throw inputError(`${what} ${file} ${why}`);
    if (st.size > MAX_BYTES) throw inputError(`${what} ${file} is ${st.size} bytes, more than the ${MAX_BYTES} a ${secret ? 'secret' : 'config'} file may have: give the right file`);
    return { text: readOpened(fd, st.size), worldReadable: (st.mode & 0o004) !== 0 };
  } catch (e) {
    if ((e as { kind?: string }).kind) throw e;
    throw inputError(`${what} ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'}): fix its mode or the path`);
  } finally {
    fs.closeSync(fd);
  }
}

/** A group's id: a number, or a name getent knows (/etc/group, or NSS). */
export function groupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  if (!/^[A-Za-z_][A-Za-z0-9_.-]*\$?$/.test(group)) throw inputError(`--group "${group.slice(0, 40)}" is not a group name: give one such as prometheus, or a number`);
  const r = spawnSync('getent', ['group', group], { encoding: 'utf8', timeout: 10_000 });
  const gid = r.status === 0 ? Number(r.stdout.split(':')[2]) : NaN;
  if (!Number.isInteger(gid)) throw inputError(`--group ${group} is not a group of this machine (getent group ${group} finds none): create it (groupadd) or give another`);
  return gid;
}

/**
 * Writes a new random token to `file` (0640 root:gid) unless one is there already, in which case
 * it is checked as the agent will check it. Its folder is made root-owned 0755 if missing, and
 * refused if someone else could replace the file in it. Returns whether a token was made.
 */
export function makeToken(file: string, gid: number): boolean {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const dst = fs.statSync(dir);
  const why = untrustedFileReason(dst, false);
  if (why) throw inputError(`the token's folder ${dir} ${why}`);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw inputError(`cannot create the token file ${file} (${(e as NodeJS.ErrnoException).code}): check its folder`);
    readTrusted(file, 'the existing token file', true);
    return false;
  }
  try {
    // Group and mode are set on the descriptor before the token is written: no moment where
    // another group could read it.
    fs.fchownSync(fd, process.geteuid?.() ?? 0, gid);
    fs.fchmodSync(fd, 0o640);
    fs.writeSync(fd, `${crypto.randomBytes(32).toString('hex')}\n`);
  } catch (e) {
    fs.rmSync(file, { force: true });
    throw inputError(`cannot give the token file ${file} to group ${gid} (${(e as NodeJS.ErrnoException).code}): run --make-token as root`);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}
