// JIT perf maps (/tmp/perf-PID.map): one "START SIZE name" line per code blob, hex with or
// without 0x (HotSpot's Compiler.perfmap writes 0x-prefixed, perf-map-agent and Node do not).
// Later lines win where ranges overlap, because a JIT reuses freed code-cache addresses.
import fs from 'node:fs';
import { processOwner, readAs } from '../asUser';
import { foreignOwner } from '../ownership';
import { AddressTable, type Range } from './addressTable';
import { normalizeJavaMethodName, perfMapKind, type FrameKind } from '../../protocol/frames';

export interface PerfMapEntry {
  name: string;
  kind: FrameKind;
}

const LINE = /^(?:0x)?([0-9a-fA-F]+)\s+(?:0x)?([0-9a-fA-F]+)\s+(.*)$/;

/**
 * Java methods come back as `Class.method` (normalizeJavaMethodName); HotSpot names its template interpreter blob "Interpreter"; everything else is compiled code or stubs. */
export function parsePerfMap(text: string): AddressTable<PerfMapEntry> {
  const ranges: Range<PerfMapEntry>[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trim());
    if (!m) continue;
    const start = BigInt('0x' + m[1]);
    const size = BigInt('0x' + m[2]);
    if (size === 0n) continue;
    const name = m[3].trim();
    // compiled Java methods are named `Class.method`, as the JVMTI agent names them
    ranges.push({ start, end: start + size, value: { name: normalizeJavaMethodName(name), kind: perfMapKind(name) } });
  }
  return new AddressTable(ranges, true);
}

/** The pid as the process itself sees it (last NSpid field), for perf-NSPID.map inside a container. */
export function namespacePid(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^NSpid:\s*(.*)$/m.exec(status);
    const ids = m ? m[1].trim().split(/\s+/).map(Number) : [];
    const last = ids[ids.length - 1];
    return Number.isInteger(last) && last > 0 ? last : pid;
  } catch {
    return pid;
  }
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Where the process's perf map is, inside its own root (and mount namespace). */
export function perfMapPath(pid: number): string {
  return `/tmp/perf-${namespacePid(pid)}.map`;
}

/**
 * Reads the process's perf map as the process's owner, inside its root (extension/sys/asUser.ts):
 * a /tmp that is a link back to the host, or a perf map that is a link to a file the owner cannot
 * read, gives nothing. Undefined when there is none.
 */
export function readPerfMap(pid: number): { path: string; table: AddressTable<PerfMapEntry> } | undefined {
  // Another user's perf map is private to them unless we act for root (extension/sys/ownership.ts).
  if (foreignOwner(pid) !== undefined) return undefined;
  const file = perfMapPath(pid);
  // Most processes have none: a cheap look first, so only a real perf map costs the as-owner read
  // (unless its /tmp is a link, which only the read inside its root resolves right).
  if (!fs.existsSync(`/proc/${pid}/root${file}`) && !isLink(`/proc/${pid}/root/tmp`)) return undefined;
  let bytes: Buffer | undefined;
  try {
    bytes = readAs(processOwner(pid), file, 256 << 20);
  } catch {
    return undefined;
  }
  if (!bytes) return undefined;
  return { path: `/proc/${pid}/root${file}`, table: parsePerfMap(bytes.toString('utf8')) };
}
