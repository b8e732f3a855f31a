// Foreign processes: the one check every tracer goes through before it sends a HotSpot attach
// request (which makes the JVM create files and load code), injects the leak interposer
// (memleak --mode inject), asks a process to write a perf map,
// or reads a file private to a process (its perf map, the Java agent's output). A process whose
// owner is not the requester is refused, unless the requester is root. The requester is whom we
// act for: the helper's invoking user (pkexec/sudo/parent, set once when the helper starts), or
// the CLI's own euid (root under sudo: allowed). Tracing with BPF alone is not covered here.
import fs from 'node:fs';
import { privilegeError } from '../protocol/errors';

export interface Requester {
  uid: number;
  /** primary gid, when known (what the requester may read is judged with its groups) */
  gid?: number;
  /** how it was decided (e.g. "SUDO_UID"), for messages */
  source?: string;
}

let current: Requester | undefined;

/** The helper sets its invoking user once at start; without it, the process's own euid. */
export function setRequester(r: Requester): void {
  current = r;
}

export function requester(): Requester {
  return current ?? { uid: process.geteuid?.() ?? 0, source: 'self' };
}

/** Effective uid/gid of a process (-1 when unreadable). */
export function effectiveIds(pid: number): { uid: number; gid: number } {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const uid = /^Uid:\s+\d+\s+(\d+)/m.exec(text);
  const gid = /^Gid:\s+\d+\s+(\d+)/m.exec(text);
  return { uid: uid ? Number(uid[1]) : -1, gid: gid ? Number(gid[1]) : -1 };
}

/** The owner's uid when `pid` belongs to another user than the requester and the requester is not root, else undefined. */
export function foreignOwner(pid: number, who: Requester = requester()): number | undefined {
  if (who.uid === 0) return undefined;
  try {
    const { uid } = effectiveIds(pid);
    return uid !== who.uid ? uid : undefined;
  } catch {
    return undefined; // gone: nothing to touch either
  }
}

/** Throws a privilege error naming owner, requester and fix when `what` would touch another user's process. */
export function assertOwnProcess(pid: number, what: string, who: Requester = requester()): void {
  const owner = foreignOwner(pid, who);
  if (owner === undefined) return;
  const by = who.source && who.source !== 'self' ? `uid ${who.uid}, from ${who.source}` : `uid ${who.uid}`;
  throw privilegeError(`refused: ${what} of pid ${pid}, a process of uid ${owner}, not yours (${by}). Only root may do that for another user's process: run as root (sudo) or as uid ${owner}, or pick your own process`);
}
