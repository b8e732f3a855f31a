// A helper raised to root by pkexec or sudo must run only root-owned code: its script, the
// addon and launcher next to it, the BPF objects it loads and the node binary. A file or any
// folder above it that another user can write would let that user run code as root.
import fs from 'node:fs';
import path from 'node:path';

/** Why `file` is not safe for root to run, or undefined when it and every folder above it are root-owned and not writable by others. */
export function untrustedReason(file: string): string | undefined {
  let real: string;
  try {
    real = fs.realpathSync(file);
  } catch (e) {
    return `${file}: ${(e as Error).message}`;
  }
  for (let p = real; ; p = path.dirname(p)) {
    const st = fs.statSync(p);
    if (st.uid !== 0) return `${p} is owned by uid ${st.uid}, not root`;
    // Group/other write, except a sticky folder like /tmp where others cannot replace our entries.
    if (st.mode & 0o022 && !(st.isDirectory() && st.mode & 0o1000)) return `${p} is writable by ${st.mode & 0o002 ? 'every user' : `group ${st.gid}`}`;
    if (p === '/') return undefined;
  }
}

/** Problems with the files a privileged helper would run from `assetDir`, empty when all are root-owned. */
export function untrustedFiles(files: string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (!fs.existsSync(f)) continue;
    const why = untrustedReason(f);
    if (why) out.push(why);
  }
  return out;
}
