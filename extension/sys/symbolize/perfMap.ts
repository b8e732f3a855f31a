// JIT perf maps (/tmp/perf-PID.map): one "START SIZE name" line per code blob, hex with or
// without 0x (HotSpot's Compiler.perfmap writes 0x-prefixed, perf-map-agent and Node do not).
// Later lines win where ranges overlap, because a JIT reuses freed code-cache addresses.
import fs from 'node:fs';
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

/** Candidate locations of the perf map, the process's own mount namespace first. */
export function perfMapPaths(pid: number): string[] {
  const nsPid = namespacePid(pid);
  const paths = [`/proc/${pid}/root/tmp/perf-${nsPid}.map`];
  if (nsPid === pid) paths.push(`/tmp/perf-${pid}.map`);
  return paths;
}

/** Reads the first perf map found; undefined when there is none. */
export function readPerfMap(pid: number): { path: string; table: AddressTable<PerfMapEntry> } | undefined {
  for (const p of perfMapPaths(pid)) {
    let text: string;
    try {
      text = fs.readFileSync(p, 'utf8');
    } catch {
      continue;
    }
    return { path: p, table: parsePerfMap(text) };
  }
  return undefined;
}
