// Cgroup v2 paths from the ids BPF programs read (task->cgroups->dfl_cgrp->kn->id). On 64-bit
// kernels that id is the inode number of the cgroup's directory in the cgroup2 file system, so
// a walk of that file system maps ids back to paths ("/system.slice/foo.service"). The cgroup2
// mount is /sys/fs/cgroup on a unified system and /sys/fs/cgroup/unified on a hybrid one (cgroup
// v1 controllers, v2 for membership only): it is found in /proc/self/mountinfo.
import fs from 'node:fs';
import path from 'node:path';

/** Where the cgroup2 file system is mounted, or undefined (no cgroup v2). */
export function cgroup2Mount(mountinfo = '/proc/self/mountinfo'): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(mountinfo, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    // "36 25 0:31 / /sys/fs/cgroup/unified rw,... shared:10 - cgroup2 cgroup2 rw,..."
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fsType = line.slice(sep + 3).split(' ')[0];
    if (fsType !== 'cgroup2') continue;
    const fields = line.slice(0, sep).split(' ');
    if (fields[3] !== '/') continue; // a bind mount of a sub-cgroup (inside a container): not the root
    return fields[4].replace(/\\040/g, ' ');
  }
  return undefined;
}

/**
 * Names cgroups by the low 32 bits of their id. The tree is walked again when an id is not known
 * (a cgroup made since), at most once per `rescanMs`, so a flood of unknown ids costs one walk.
 */
export class CgroupNames {
  private readonly byId = new Map<number, string>();
  private lastScan = -Infinity;

  constructor(
    readonly root = cgroup2Mount(),
    private readonly rescanMs = 5000,
    /** the walk stops after this many directories (a machine with very many containers) */
    private readonly maxDirs = 100_000,
  ) {}

  /** The cgroup's path below the cgroup2 root ("/" for the root itself), or undefined. */
  name(id32: number, now = Date.now()): string | undefined {
    const known = this.byId.get(id32);
    if (known !== undefined || !this.root) return known;
    if (now - this.lastScan < this.rescanMs) return undefined;
    this.scan(now);
    return this.byId.get(id32);
  }

  private scan(now: number): void {
    this.lastScan = now;
    this.byId.clear();
    const stack = ['/'];
    let seen = 0;
    while (stack.length && seen < this.maxDirs) {
      const rel = stack.pop()!;
      const dir = path.join(this.root!, rel);
      let ino: bigint;
      try {
        ino = fs.statSync(dir, { bigint: true }).ino;
      } catch {
        continue; // removed while walking
      }
      seen++;
      this.byId.set(Number(ino & 0xffffffffn), rel);
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) if (e.isDirectory()) stack.push(rel === '/' ? `/${e.name}` : `${rel}/${e.name}`);
    }
  }
}

/**
 * The cgroup v2 path of a process from /proc/PID/cgroup: its "0::PATH" line (the only line on a
 * unified machine; beside the v1 controllers' lines on a hybrid one). Relative to the reader's
 * cgroup namespace: on the host, the full path. Undefined: the process is gone, or no cgroup v2.
 */
export function cgroupOfPid(pid: number): string | undefined {
  try {
    return parseProcCgroup(fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The v2 path in the text of a /proc/PID/cgroup file. */
export function parseProcCgroup(text: string): string | undefined {
  for (const line of text.split('\n')) if (line.startsWith('0::')) return line.slice(3).replace(/ \(deleted\)$/, '');
  return undefined;
}
