// A rootless podman container's id and its user's containers-storage index, found from the host as
// root. Such a container runs in a user namespace of its own user, its processes owned (as the
// host numbers them) by that user; on cgroup v1 it gets no cgroup of its own (it stays in its
// user's cgroup, "/" on a host without systemd), so its id is not in /proc/PID/cgroup. Its parent
// is podman's conmon, run by the same user, whose command line names the id (-c) and the bundle
// under the user's store (-b <graphroot>/<driver>-containers/<id>/userdata).
//
// Everything here is the user's own: conmon's command line and the store's files are written by
// that user. They are trusted only to name that user's own processes: every process on the way
// up to conmon must be owned by the same uid, and containers.json is read only when that uid owns
// it (a user pointing at root's or another user's file gets nothing). So a user can at most label
// their own process falsely, which they could do by naming their own container so anyway. The
// file is reached one path component at a time, never following a symbolic link (a user's
// ~/.local cannot lead root's read to another file), opened without blocking (a FIFO), and read
// only when it is a regular file within a size limit.
import fs from 'node:fs';
import { readOpened } from '../elf/fileCheck';

export interface RootlessContainer {
  /** the host uid that runs the container (its conmon and its processes) */
  uid: number;
  /** the full 64-hex-digit id */
  id: string;
  /** the containers-storage index that names it: <graphroot>/<driver>-containers/containers.json */
  index: string;
}

/** How far up a process's parents conmon is looked for (a shell, a JVM launcher, init). */
const MAX_DEPTH = 16;
const ID = /^[0-9a-f]{64}$/;

interface Proc {
  ppid: number;
  uid: number;
  comm: string;
}

function procOf(proc: string, pid: number): Proc | undefined {
  try {
    const status = fs.readFileSync(`${proc}/${pid}/status`, 'utf8');
    const ppid = /^PPid:\s+(\d+)/m.exec(status);
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
    const comm = /^Name:\s+(.*)$/m.exec(status);
    if (!ppid || !uids || !comm) return undefined;
    // a process whose uids differ (setuid, a changed effective uid) is not one user's alone
    if (new Set(uids.slice(1)).size !== 1) return undefined;
    return { ppid: Number(ppid[1]), uid: Number(uids[1]), comm: comm[1] };
  } catch {
    return undefined;
  }
}

/** The container id and store index a conmon command line (NUL-separated) names, or undefined. */
export function parseConmonArgs(cmdline: string): { id: string; index: string } | undefined {
  const argv = cmdline.split('\0');
  const arg = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const id = arg('-c');
  const bundle = arg('-b');
  if (!id || !ID.test(id) || !bundle) return undefined;
  const m = new RegExp(`^(/.+/(?:overlay|vfs|btrfs|zfs)-containers)/${id}/userdata$`).exec(bundle);
  if (!m || m[1].split('/').some((s) => s === '..' || s === '.')) return undefined;
  return { id, index: `${m[1]}/containers.json` };
}

/**
 * The rootless podman container `pid` runs in, from its conmon ancestor; undefined for root's
 * processes, processes in the host's user namespace, and anything that does not add up.
 */
export function rootlessContainerOf(pid: number, proc = '/proc'): RootlessContainer | undefined {
  try {
    // a rootless container always has a user namespace of its own: the cheap test first
    if (fs.readlinkSync(`${proc}/${pid}/ns/user`) === fs.readlinkSync(`${proc}/self/ns/user`)) return undefined;
  } catch {
    return undefined;
  }
  const self = procOf(proc, pid);
  if (!self || self.uid === 0) return undefined;
  let p: Proc | undefined = self;
  for (let depth = 0, at = pid; p && depth < MAX_DEPTH; depth++) {
    if (p.uid !== self.uid) return undefined;
    if (p.comm === 'conmon' && at !== pid) {
      let cmdline: string;
      try {
        cmdline = fs.readFileSync(`${proc}/${at}/cmdline`, 'utf8');
      } catch {
        return undefined;
      }
      const found = parseConmonArgs(cmdline);
      return found && { uid: self.uid, ...found };
    }
    if (p.ppid <= 1) return undefined;
    at = p.ppid;
    p = procOf(proc, at);
  }
  return undefined;
}

/**
 * A regular file owned by `uid` (at most `max` bytes), or undefined. Opened one component at a
 * time through the directory already opened (/proc/self/fd/N/NAME), each with O_NOFOLLOW: no
 * symbolic link the user planted is followed, and nothing but a regular file is read. `under` is
 * a directory of ours the path is taken below ("/", or "/proc/1/root" for the host's files seen
 * from a container sharing its pid namespace).
 */
export function readUserOwnedFile(file: string, uid: number, max: number, under = '/'): string | undefined {
  const parts = file.split('/').filter(Boolean);
  if (!file.startsWith('/') || parts.some((s) => s === '..' || s === '.')) return undefined;
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = fs.constants;
  let fd: number | undefined;
  try {
    fd = fs.openSync(under, O_RDONLY | O_DIRECTORY);
    for (let i = 0; i < parts.length; i++) {
      const last = i === parts.length - 1;
      const next = fs.openSync(`/proc/self/fd/${fd}/${parts[i]}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (last ? 0 : O_DIRECTORY));
      fs.closeSync(fd);
      fd = next;
    }
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== uid || st.size > max) return undefined;
    return readOpened(fd, st.size).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
