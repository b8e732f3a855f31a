// Which mount holds a folder in a process's mount namespace, and with what options, from
// /proc/PID/mountinfo. A container's /tmp (a tmpfs of its own, read-only, noexec) is only visible
// this way: the host's mount table says nothing about it.
import fs from 'node:fs';

export interface MountEntry {
  /** mount point, as the process sees it */
  point: string;
  /** per-mount options (ro/rw, noexec, nosuid, ...) */
  options: string[];
  /** the filesystem's own options (after " - "): a read-only superblock is "ro" here */
  superOptions: string[];
  fsType: string;
}

/** The mount in effect at `dir` (absolute): the last mount on the longest mount point that contains it. */
export function mountAt(dir: string, mountinfo: string): MountEntry | undefined {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": field 5 is
  // the mount point, field 6 its per-mount options; after the "-" the type, source and superblock options.
  let best: MountEntry | undefined;
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ');
    if (f.length < 6) continue;
    const point = f[4].replace(/\\040/g, ' ');
    if (!(point === '/' || point === dir || dir.startsWith(point + '/'))) continue;
    if (best && point.length < best.point.length) continue;
    const dash = f.indexOf('-', 6);
    best = { point, options: f[5].split(','), fsType: dash > 0 ? (f[dash + 1] ?? '') : '', superOptions: dash > 0 ? (f[dash + 3] ?? '').split(',') : [] };
  }
  return best;
}

/** /proc/PID/mountinfo, or undefined when it cannot be read. */
export function readMountinfo(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Why a file placed in `dir` of the process's namespace could not be mapped executable, or undefined when it can. */
export function execBlocker(dir: string, mountinfo: string): string | undefined {
  const m = mountAt(dir, mountinfo);
  if (!m) return `${dir} is not mounted`;
  if (m.options.includes('ro') || m.superOptions.includes('ro')) return `${dir} is read-only`;
  if (m.options.includes('noexec')) return `${dir} is mounted noexec`;
  return undefined;
}
