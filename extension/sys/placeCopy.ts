// Places a copy of one of our shared objects (the Java agent, the leak interposer) in a traced
// process's own filesystem, so a process in a container, which cannot see the host's files, can
// load it. Done as the process's owner inside its root (./asUser.ts): the copy is created
// exclusively under a fresh name and renamed into place, and an existing file is looked at
// through an fd opened without following links, so neither a folder that leads back to the host
// nor a link planted under the name lets root create or read a file outside the process's reach.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createAs, openAs, renameAs, unlinkAs, writeAllAndClose, type FileOwner } from './asUser';

/** A short content hash, so copies are named by what they hold and a loaded copy is reused, never rewritten. */
export function contentTag(bytes: Buffer): string {
  return crypto.createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** Undefined when `name` (in the owner's root) is, or now is, exactly `bytes`; else why not. */
export function placeCopy(owner: FileOwner, name: string, bytes: Buffer): string | undefined {
  let existing: number | undefined;
  try {
    existing = openAs(owner, name, fs.constants.O_RDONLY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') return `${name} exists but cannot be opened as uid ${owner.uid} without following a link (${code})`;
  }
  if (existing !== undefined) {
    // /tmp is world-writable: only a file that is ours byte for byte, owned by root or the
    // process's user and writable by nobody else, is ever loaded; the user's own with one link.
    // A root-owned copy may have more (perf's build-id cache in ~/.debug links every object a
    // `perf record` sees mapped): another name changes nothing, as only root can write it. A
    // loaded copy is never rewritten (a mapped shared object must not change under the process).
    try {
      const st = fs.fstatSync(existing);
      const owned = st.uid === 0 || (st.uid === owner.uid && st.nlink === 1);
      const trusted = st.isFile() && owned && (st.mode & 0o022) === 0 && st.size === bytes.length && fs.readFileSync(existing).equals(bytes);
      return trusted ? undefined : `${name} exists but is not eBPF Studio's copy of uid ${owner.uid} or root (or others can write it, or it has other links)`;
    } finally {
      fs.closeSync(existing);
    }
  }
  const tmp = `${name}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  writeAllAndClose(createAs(owner, tmp, 0o644), bytes);
  try {
    renameAs(owner, tmp, name);
  } catch (e) {
    try {
      unlinkAs(owner, tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
  return undefined;
}
