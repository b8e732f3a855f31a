// Who the privileged helper works for. The helper (and the CLI run under sudo) decides this
// itself, from what pkexec/sudo set or from who started it, never from a request: commands it
// launches and files it writes for a user get this uid/gid. Used by memleak's launch mode and by
// anything else that runs a user's program (e.g. a BPF project's own loader).
import fs from 'node:fs';
import { inputError } from '../protocol/errors';

export interface InvokingUser {
  uid: number;
  gid: number;
  /** how it was decided, for logs and error messages */
  source: 'self' | 'PKEXEC_UID' | 'SUDO_UID' | 'parent';
}

const ID = /^\d{1,10}$/;

function idOf(v: string | undefined): number | undefined {
  if (v === undefined || !ID.test(v)) return undefined;
  const n = Number(v);
  return n <= 0xfffffffe ? n : undefined;
}

/** Primary gid of a uid from /etc/passwd (the uid itself when it has no entry). */
export function primaryGid(uid: number, passwd = readOr('/etc/passwd')): number {
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && Number(f[2]) === uid && ID.test(f[3])) return Number(f[3]);
  }
  return uid;
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Real uid and gid of a process, from the Uid:/Gid: lines of /proc/PID/status. */
export function processIds(pid: number): { uid: number; gid: number } | undefined {
  const s = readOr(`/proc/${pid}/status`);
  const u = /^Uid:\s+(\d+)/m.exec(s);
  const g = /^Gid:\s+(\d+)/m.exec(s);
  return u && g ? { uid: Number(u[1]), gid: Number(g[1]) } : undefined;
}

/**
 * The user this process acts for. Not root: itself. Root: PKEXEC_UID (set by pkexec), else
 * SUDO_UID/SUDO_GID (set by sudo), else the real uid of the parent process (pkexec execs us,
 * so a desktop editor is the parent; a root editor or a root shell makes it root).
 */
export function invokingUser(env: NodeJS.ProcessEnv = process.env, euid = process.geteuid?.() ?? 0, ppid = process.ppid): InvokingUser {
  if (euid !== 0) return { uid: process.getuid?.() ?? euid, gid: process.getgid?.() ?? euid, source: 'self' };
  const pk = idOf(env.PKEXEC_UID);
  if (pk !== undefined) return { uid: pk, gid: primaryGid(pk), source: 'PKEXEC_UID' };
  const su = idOf(env.SUDO_UID);
  if (su !== undefined) return { uid: su, gid: idOf(env.SUDO_GID) ?? primaryGid(su), source: 'SUDO_UID' };
  const parent = processIds(ppid);
  if (parent) return { ...parent, source: 'parent' };
  return { uid: 0, gid: 0, source: 'parent' };
}

/**
 * The ids a command launched for a request runs as. A request's own uid/gid is never used:
 * asking for root while the invoking user is not root is refused; any other value is ignored.
 */
export function launchIdentity(requested: { uid?: number; gid?: number }, user: InvokingUser = invokingUser()): { uid: number; gid: number } {
  if (user.uid !== 0 && (requested.uid === 0 || requested.gid === 0)) {
    throw inputError(`refused: the request asks to run the command as root, but the helper works for uid ${user.uid} (from ${user.source}); commands always run as the user who started the helper`);
  }
  return { uid: user.uid, gid: user.gid };
}
