// Root touches a user's files only as that user. Everything the helper (or a root CLI) does in a
// traced process's filesystem, and in folders it makes for a user, goes through here: the addon's
// userFile() forks a child that chroots into /proc/PID/root (so an absolute symlink such as a
// container's /tmp -> /etc resolves inside the target, never back on the host), drops to the
// owner's uid/gid with no groups, and does one operation whose last path component is never
// followed. Opened files come back as fds, so reading and writing happen on exactly what the user
// could open. Not root (a CLI run by the user itself): the same operations through /proc/PID/root
// with the caller's own rights.
import fs from 'node:fs';
import { defaultAssetDir, loadAddon, type Addon } from './addon';

let addon: Addon | undefined;
function theAddon(): Addon {
  addon ??= loadAddon(defaultAssetDir());
  return addon;
}

/** Whose files, and where: `pid` names the process whose root (and cwd) the path is in; without it a host path. */
export interface FileOwner {
  uid: number;
  gid: number;
  pid?: number;
}

/** The effective uid/gid of a process (the owner its files are touched as), from /proc/PID/status. */
export function processOwner(pid: number): FileOwner {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    throw Object.assign(new Error(`no process with pid ${pid} is running`), { code: 'ESRCH' });
  }
  const uid = /^Uid:\s+\d+\s+(\d+)/m.exec(text);
  const gid = /^Gid:\s+\d+\s+(\d+)/m.exec(text);
  if (!uid || !gid) throw new Error(`cannot read the owner of pid ${pid}`);
  return { uid: Number(uid[1]), gid: Number(gid[1]), pid };
}

type Spec = Parameters<Addon['userFile']>[0];

function run(owner: FileOwner, base: 'root' | 'cwd', spec: Omit<Spec, 'uid' | 'gid' | 'rootPid' | 'base'>): number {
  const root = (process.geteuid?.() ?? 0) === 0;
  if (owner.pid !== undefined && !root) {
    // Not root: no chroot; the kernel checks our own rights on the way through /proc/PID/root.
    const prefix = base === 'cwd' ? `/proc/${owner.pid}/cwd/` : `/proc/${owner.pid}/root`;
    const join = (p: string) => (base === 'cwd' ? prefix + p : prefix + (p.startsWith('/') ? p : `/${p}`));
    return theAddon().userFile({ ...spec, uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0, path: join(spec.path), path2: spec.path2 === undefined ? undefined : join(spec.path2) });
  }
  return theAddon().userFile({ ...spec, uid: owner.uid, gid: owner.gid, rootPid: owner.pid, base });
}

/** Opens `file` as its owner (absolute inside the target's root, or a name in its cwd with base 'cwd'). */
export function openAs(owner: FileOwner, file: string, flags: number, mode = 0o600, base: 'root' | 'cwd' = 'root'): number {
  return run(owner, base, { op: 'open', path: file, flags, mode });
}

/** Creates `file` exclusively (never an existing file, link or not) as its owner; returns the fd open for writing. */
export function createAs(owner: FileOwner, file: string, mode: number, base: 'root' | 'cwd' = 'root'): number {
  const c = fs.constants;
  return openAs(owner, file, c.O_WRONLY | c.O_CREAT | c.O_EXCL, mode, base);
}

export function unlinkAs(owner: FileOwner, file: string, base: 'root' | 'cwd' = 'root'): void {
  run(owner, base, { op: 'unlink', path: file });
}

export function mkdirAs(owner: FileOwner, dir: string, mode: number): void {
  run(owner, 'root', { op: 'mkdir', path: dir, mode });
}

export function rmdirAs(owner: FileOwner, dir: string): void {
  run(owner, 'root', { op: 'rmdir', path: dir });
}

export function renameAs(owner: FileOwner, from: string, to: string): void {
  run(owner, 'root', { op: 'rename', path: from, path2: to });
}

/**
 * Connects to the unix socket `file` as its owner; refused unless the socket file belongs to the
 * owner's uid and, with `peerPid`, the process listening on it is that pid. Returns the socket fd.
 */
export function connectAs(owner: FileOwner, file: string, peerPid?: number): number {
  if ((process.geteuid?.() ?? 0) !== 0 && owner.pid !== undefined) {
    // Not root: connect() by path through /proc/PID/root; the owner and peer checks stay.
    return theAddon().userFile({ op: 'connect', uid: owner.uid, gid: owner.gid, path: `/proc/${owner.pid}/root${file}`, peerPid });
  }
  return theAddon().userFile({ op: 'connect', uid: owner.uid, gid: owner.gid, rootPid: owner.pid, base: 'root', path: file, peerPid });
}

/** Reads a whole file as its owner (regular files only, at most `limit` bytes); undefined when it cannot be opened. */
export function readAs(owner: FileOwner, file: string, limit = 64 << 20): Buffer | undefined {
  let fd: number;
  try {
    fd = openAs(owner, file, fs.constants.O_RDONLY);
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > limit) return undefined;
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `bytes` through an fd and closes it. */
export function writeAllAndClose(fd: number, bytes: Buffer): void {
  try {
    let off = 0;
    while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off);
  } finally {
    fs.closeSync(fd);
  }
}
