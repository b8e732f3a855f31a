// HotSpot's own performance counters (hsperfdata): the file a JVM keeps at
// /tmp/hsperfdata_USER/PID (PID as the JVM's own pid namespace numbers it) and maps shared, so
// its contents are the live counters. The layout is HotSpot's PerfDataPrologue followed by
// PerfDataEntry records (perfMemory.hpp); the parser is bounded by the buffer and never trusts an
// offset or a count. Read as the JVM's owner inside its root (SECURITY.md, sys/asUser.ts).
import fs from 'node:fs';
import { openAs, processOwner } from '../asUser';
import { namespacePid } from '../symbolize/perfMap';

/** HotSpot's default PerfDataMemorySize is 64 KiB; a larger file is refused rather than read whole. */
export const HSPERF_MAX_BYTES = 1 << 20;
const MAGIC = 0xcafec0c0;
const PROLOGUE = 32;
const ENTRY_HEADER = 20;
const MAX_NAME = 256;

export type HsperfValue = bigint | string;

/** The scalar long counters and the byte-vector strings of an hsperfdata buffer, by name. */
export function parseHsperfdata(buf: Buffer): Map<string, HsperfValue> {
  if (buf.length < PROLOGUE) throw new Error(`hsperfdata is ${buf.length} bytes: shorter than its header`);
  if (buf.readUInt32BE(0) !== MAGIC) throw new Error('not an hsperfdata file (bad magic)');
  const le = buf[4] === 1;
  const i32 = (o: number) => (le ? buf.readInt32LE(o) : buf.readInt32BE(o));
  const major = buf[5];
  if (major !== 2) throw new Error(`hsperfdata version ${major}.${buf[6]} is not supported (2.x is)`);
  const used = Math.min(Math.max(i32(8), 0), buf.length);
  let off = i32(24);
  const count = i32(28);
  const out = new Map<string, HsperfValue>();
  for (let i = 0; i < count && off >= PROLOGUE && off + ENTRY_HEADER <= used; i++) {
    const len = i32(off);
    const nameOff = i32(off + 4);
    const vlen = i32(off + 8);
    const type = String.fromCharCode(buf[off + 12]);
    const dataOff = i32(off + 16);
    if (len < ENTRY_HEADER || off + len > used || nameOff < ENTRY_HEADER || nameOff >= len || dataOff < ENTRY_HEADER || dataOff > len) break;
    const nameEnd = buf.indexOf(0, off + nameOff);
    const name = buf.toString('latin1', off + nameOff, Math.min(nameEnd < 0 ? off + len : nameEnd, off + nameOff + MAX_NAME, off + len));
    const data = off + dataOff;
    if (vlen === 0 && type === 'J' && data + 8 <= off + len) out.set(name, le ? buf.readBigInt64LE(data) : buf.readBigInt64BE(data));
    else if (vlen > 0 && type === 'B') {
      const end = Math.min(data + vlen, off + len);
      const nul = buf.indexOf(0, data);
      out.set(name, buf.toString('utf8', data, nul >= 0 && nul < end ? nul : end));
    }
    off += len;
  }
  return out;
}

/** HotSpot's collector counters: sun.gc.collector.N.{name,invocations}, in N order. */
export interface HsperfCollector {
  index: number;
  /** HotSpot's name for the counter set, e.g. "Serial young collection pauses" */
  name: string;
  invocations: number;
}

export function gcCollectors(counters: Map<string, HsperfValue>): HsperfCollector[] {
  const out: HsperfCollector[] = [];
  for (let i = 0; i < 16; i++) {
    const n = counters.get(`sun.gc.collector.${i}.invocations`);
    if (typeof n !== 'bigint') continue;
    const name = counters.get(`sun.gc.collector.${i}.name`);
    out.push({ index: i, name: typeof name === 'string' ? name : `collector ${i}`, invocations: Number(n) });
  }
  return out;
}

/**
 * A JVM's hsperfdata file, kept open: HotSpot maps it shared, so each read sees the live counters
 * without opening it again. `open` says why there is none (the reason goes into reports).
 */
export class HsperfFile {
  private constructor(
    private readonly fd: number,
    readonly path: string,
  ) {}

  static open(pid: number): HsperfFile | { problem: string } {
    const nspid = namespacePid(pid);
    let dirs: string[];
    try {
      // Names only: the file itself is opened as its owner inside the JVM's root.
      dirs = fs.readdirSync(`/proc/${pid}/root/tmp`).filter((d) => d.startsWith('hsperfdata_'));
    } catch (e) {
      return { problem: `cannot list the JVM's /tmp (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
    }
    let owner;
    try {
      owner = processOwner(pid);
    } catch (e) {
      return { problem: (e as Error).message };
    }
    let refused = '';
    for (const d of dirs) {
      const file = `/tmp/${d}/${nspid}`;
      let fd: number;
      try {
        // O_NONBLOCK: a FIFO in its place must not hold the tracer; fstat below takes regular files only.
        fd = openAs(owner, file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') refused = `${file} cannot be opened as its owner (${code ?? (e as Error).message}: a link or not theirs to read)`;
        continue;
      }
      const st = fs.fstatSync(fd);
      if (st.isFile() && st.size <= HSPERF_MAX_BYTES) return new HsperfFile(fd, file);
      fs.closeSync(fd);
      refused = `${file} is ${st.isFile() ? `${st.size} bytes, more than an hsperfdata file holds` : 'not a regular file'}`;
    }
    return { problem: refused || `the JVM has no /tmp/hsperfdata_*/${nspid} (started with -XX:-UsePerfData or -XX:+PerfDisableSharedMem?)` };
  }

  read(): Map<string, HsperfValue> {
    const size = Math.min(fs.fstatSync(this.fd).size, HSPERF_MAX_BYTES);
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = fs.readSync(this.fd, buf, got, size - got, got);
      if (n <= 0) break;
      got += n;
    }
    return parseHsperfdata(buf.subarray(0, got));
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}
