// The one way to reach a file a process maps, from the host: the name in /proc/PID/maps is only
// valid inside the process's own root (a container's /usr/lib/jvm/... is another file than the
// host's of the same path, or absent on the host), so the file is opened through
// /proc/PID/map_files/START-END (the mapped file itself, whatever its name now resolves to) or
// /proc/PID/root/NAME, and either is checked against the mapping's device and inode. A same-named
// host file is used only when it is that file (same device and inode), never in its place:
// uprobes and USDT probes on another file would never fire.
//
// Uprobes live on an inode. Under overlayfs (every container image) the kernel puts them on the
// layer's real file, which every container of the image shares, while /proc/PID/maps shows the
// overlay's device: `identity` names the real file, so tracers that attach machine-wide
// (pid -1) attach once per real file and never twice (each GC would be counted twice).
import fs from 'node:fs';
import path from 'node:path';
import { unsuitableError } from '../../protocol/errors';
import type { Mapping } from './maps';

export interface ReachedFile {
  /** the path the process knows it by (inside its root) */
  name: string;
  /** a path that opens exactly the mapped file from here (hand it to libbpf) */
  path: string;
  /** maps' "major:minor" (hex) and inode */
  dev: string;
  inode: number;
  /** the real file behind it, "major:minor:inode" (under overlayfs: the layer's file) */
  identity: string;
}

/** maps' "fe:01" as numbers. */
function parseDev(dev: string): [number, number] {
  const [a, b] = dev.split(':');
  return [parseInt(a, 16), parseInt(b, 16)];
}

/** glibc's major()/minor() of an st_dev (libuv builds st_dev with makedev()). */
export function splitDev(dev: bigint): [number, number] {
  const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
  const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
  return [major, minor];
}

function statMatches(p: string, m: Mapping): boolean {
  try {
    const st = fs.statSync(p, { bigint: true });
    const [maj, min] = splitDev(st.dev);
    const [wantMaj, wantMin] = parseDev(m.dev);
    return st.isFile() && st.ino === BigInt(m.inode) && maj === wantMaj && min === wantMin;
  } catch {
    return false;
  }
}

/**
 * A path from this process to the file `m` maps in `pid`, checked by device and inode. Throws an
 * unsuitable error naming the file when neither way reaches it.
 */
export function reachMapped(pid: number, m: Mapping): ReachedFile {
  const range = `${m.start.toString(16)}-${m.end.toString(16)}`;
  // map_files is the mapped file itself (a name swapped inside the container cannot redirect
  // it; it reaches deleted files too); it needs CAP_SYS_ADMIN, which uprobes need anyway.
  const candidates = [`/proc/${pid}/map_files/${range}`];
  // The name inside its root; last, the name here, which is the same file only when device and
  // inode say so (a process whose /proc entries are closed to us, e.g. in another user namespace).
  if (!m.deleted) candidates.push(`/proc/${pid}/root${m.path}`, m.path);
  for (const p of candidates) {
    if (statMatches(p, m)) return { name: m.path, path: p, dev: m.dev, inode: m.inode, identity: realIdentity(pid, m) };
  }
  throw unsuitableError(
    `cannot reach ${m.path} as pid ${pid} maps it (device ${m.dev}, inode ${m.inode}) through /proc/${pid}/map_files or /proc/${pid}/root${m.deleted ? ': it was deleted' : ''}; ` +
      'a file of the same name elsewhere (e.g. on the host, outside the container) is not the one it runs',
  );
}

/** The first mapping whose file's basename matches, reached as reachMapped does; undefined when none matches. */
export function reachMappedByName(pid: number, maps: Mapping[], basename: RegExp): ReachedFile | undefined {
  const m = maps.find((x) => x.path.startsWith('/') && basename.test(x.path.slice(x.path.lastIndexOf('/') + 1)));
  return m ? reachMapped(pid, m) : undefined;
}

interface MountLine {
  dev: string;
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string;
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function parseMountinfo(text: string): MountLine[] {
  const out: MountLine[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const a = line.slice(0, sep).split(' ');
    const b = line.slice(sep + 3).split(' ');
    if (a.length < 5 || b.length < 3) continue;
    out.push({ dev: a[2], root: unescape(a[3]), mountPoint: unescape(a[4]), fsType: b[0], superOptions: b.slice(2).join(' ') });
  }
  return out;
}

/** An overlay mount's layers, upper first (the order overlayfs looks a name up in). */
export function overlayLayers(superOptions: string): string[] {
  const opts = new Map<string, string>();
  // Options are comma-separated; a comma inside a path is escaped as "\,".
  for (const o of superOptions.split(/(?<!\\),/)) {
    const eq = o.indexOf('=');
    if (eq > 0) opts.set(o.slice(0, eq), o.slice(eq + 1).replace(/\\,/g, ','));
  }
  const layers: string[] = [];
  const upper = opts.get('upperdir');
  if (upper) layers.push(upper);
  for (const l of (opts.get('lowerdir') ?? '').split(/(?<!\\):+/)) if (l) layers.push(l.replace(/\\:/g, ':'));
  return layers;
}

/**
 * "major:minor:inode" of the file the kernel puts uprobes on: for a file on overlayfs, the
 * layer's own file (found as overlayfs finds it: the first layer that has the name, and it must
 * carry the inode number maps shows); otherwise what maps says.
 */
export function realIdentity(pid: number, m: Mapping): string {
  const [maj, min] = parseDev(m.dev);
  const asIs = `${maj}:${min}:${m.inode}`;
  // overlayfs has an anonymous device (major 0): a file on a block device is itself, and its
  // process's mountinfo need not be read (the agent names every JVM that starts by this).
  if (maj !== 0) return asIs;
  let mounts: MountLine[];
  try {
    mounts = parseMountinfo(fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8'));
  } catch {
    return asIs;
  }
  const under = (mp: string) => mp === '/' || m.path === mp || m.path.startsWith(mp + '/');
  const mount = mounts
    .filter((x) => x.dev === `${maj}:${min}` && under(x.mountPoint))
    .sort((x, y) => y.mountPoint.length - x.mountPoint.length)[0];
  if (!mount || mount.fsType !== 'overlay') return asIs;
  const rel = path.posix.join(mount.root, mount.mountPoint === '/' ? m.path : m.path.slice(mount.mountPoint.length));
  for (const layer of overlayLayers(mount.superOptions)) {
    let st: fs.BigIntStats;
    try {
      st = fs.lstatSync(path.posix.join(layer, rel), { bigint: true });
    } catch {
      continue;
    }
    if (!st.isFile() || st.ino !== BigInt(m.inode)) return asIs;
    const [lmaj, lmin] = splitDev(st.dev);
    return `${lmaj}:${lmin}:${m.inode}`;
  }
  return asIs;
}

/** The identity of a host file (as realIdentity names mapped ones), or undefined when it cannot be read. */
export function hostFileIdentity(file: string): string | undefined {
  try {
    const st = fs.statSync(file, { bigint: true });
    const [maj, min] = splitDev(st.dev);
    return `${maj}:${min}:${st.ino}`;
  } catch {
    return undefined;
  }
}
