// /proc/PID/maps parsing. Addresses stay bigint: user-space addresses above 2^53 exist (vsyscall).
import fs from 'node:fs';

export interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  /** file offset of `start` */
  offset: bigint;
  dev: string;
  inode: number;
  /** file path, "[heap]", "[vdso]", "" for anonymous; " (deleted)" suffix removed */
  path: string;
  deleted: boolean;
}

const LINE = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S{4})\s+([0-9a-f]+)\s+(\S+)\s+(\d+)\s*(.*)$/;

export function parseMaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    let p = m[7].trim();
    const deleted = p.endsWith(' (deleted)');
    if (deleted) p = p.slice(0, -' (deleted)'.length);
    out.push({
      start: BigInt('0x' + m[1]),
      end: BigInt('0x' + m[2]),
      perms: m[3],
      offset: BigInt('0x' + m[4]),
      dev: m[5],
      inode: Number(m[6]),
      path: p,
      deleted,
    });
  }
  return out;
}

export function readMaps(pid: number): Mapping[] {
  return parseMaps(fs.readFileSync(`/proc/${pid}/maps`, 'utf8'));
}

/** The mapping that holds addr, or undefined (binary search; maps are sorted by start). */
export function findMapping(maps: Mapping[], addr: bigint): Mapping | undefined {
  let lo = 0;
  let hi = maps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const m = maps[mid];
    if (addr < m.start) hi = mid - 1;
    else if (addr >= m.end) lo = mid + 1;
    else return m;
  }
  return undefined;
}

/** Distinct file-backed paths whose basename matches, e.g. /libjvm\.so$/ or /^libc[.-]/ */
export function mappedFiles(maps: Mapping[], basename: RegExp): string[] {
  const seen = new Set<string>();
  for (const m of maps) {
    if (!m.path.startsWith('/')) continue;
    const base = m.path.slice(m.path.lastIndexOf('/') + 1);
    if (basename.test(base)) seen.add(m.path);
  }
  return [...seen];
}
