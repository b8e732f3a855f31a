// Compiled unwind tables kept on disk across sessions, for root only: a whole-host profile meets
// libc, node, libjvm... every time, and compiling them is most of what its first seconds cost
// (node's .eh_frame alone takes ~330 ms). An entry is keyed by the file's device, inode, size,
// mtime and ctime (ctime no user can set, so a file put in a deleted one's inode never matches),
// and trusted only when everything that could have written it is root: every directory from / to
// the cache is root's and writable by no one else (or sticky), the cache directory is 0700, the
// entry a regular root-owned file with one link, opened without following links. Each entry is
// also validated on read (size limits, a header with version and key, a SHA-256 of the whole);
// one that fails is deleted and its table compiled afresh, never used.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CFI_MAX_FILE_ROWS, CFI_ROW_SIZE } from '../sys/elf/cfiTable';

const MAGIC = Buffer.from('EBSCFI\0\0', 'latin1');
/** Bump when the row encoding or the compiler's output changes: older entries are then ignored (and replaced). */
export const CFI_CACHE_VERSION = 1;
const HEADER = 8 + 4 * 4;
const SUM = 32;
const MAX_KEY = 256;
const MAX_META = 64 << 10;
const MAX_PAGES = 1 << 22;
const MAX_ENTRY = HEADER + MAX_KEY + MAX_META + CFI_MAX_FILE_ROWS * CFI_ROW_SIZE + MAX_PAGES * 4 + SUM;
/** Disk the cache may take; the least recently used entries go beyond it (node's table is 4.5 MB, a desktop's set ~45 MB). */
export const CFI_CACHE_MAX_BYTES = 256 << 20;
const ENTRY_NAME = /^[0-9a-f]{64}\.cfi$/;

export interface CachedTable {
  /** rows as struct cfi_row */
  rows: Buffer;
  nrows: number;
  /** the page index (row numbers relative to the file) */
  pages: { base: number; idx: Uint32Array };
  fdes: number;
  debugFrameFdes?: number;
  unsupported: Record<string, number>;
  loads: { offset: bigint; filesz: bigint; delta: bigint }[];
  /** separate debug files the table depends on, each with its cacheKey() when compiled ("-": absent then) */
  debugDeps?: [string, string][];
}

/** The key of the file at p now: device, inode, size, mtime, ctime (ns). */
export function cacheKey(p: string): string {
  const st = fs.statSync(p, { bigint: true });
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** cacheKey() of a file that may be absent ("-"). */
function stampOrAbsent(p: string): string {
  try {
    return cacheKey(p);
  } catch {
    return '-';
  }
}

/** The debug files a table was compiled with, as they are now. */
export function debugDepsOf(files: readonly string[] | undefined): [string, string][] | undefined {
  return files?.length ? files.map((f) => [f, stampOrAbsent(f)]) : undefined;
}

/** Whether a debug file the table depends on was added, changed or removed since it was compiled. */
export function debugDepsChanged(deps: readonly [string, string][] | undefined): boolean {
  return Boolean(deps?.some(([f, stamp]) => stampOrAbsent(f) !== stamp));
}

/** Why a directory on the way to the cache is unsafe (someone other than root could change it), or undefined. */
function unsafeDir(p: string, last: boolean): string | undefined {
  const st = fs.lstatSync(p);
  if (!st.isDirectory()) return `${p} is not a directory`;
  if (st.uid !== 0) return `${p} is not root's`;
  if (last) return st.mode & 0o077 ? `${p} is open to others` : undefined;
  // a sticky directory (/tmp) lets no one rename or remove root's entries in it
  return st.mode & 0o022 && !(st.mode & 0o1000) ? `${p} is writable by others` : undefined;
}

export class CfiDiskCache {
  private constructor(
    readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  /**
   * The cache under the state directory, for root only; undefined (said in the log) when this is
   * not root or the directory cannot be made safe: tables are then compiled every session.
   */
  static open(log: (m: string) => void, state = stateDir(), maxBytes = CFI_CACHE_MAX_BYTES): CfiDiskCache | undefined {
    if (process.geteuid?.() !== 0) return undefined;
    try {
      const want = path.join(path.resolve(state), 'cfi-tables');
      fs.mkdirSync(want, { recursive: true, mode: 0o700 });
      const dir = fs.realpathSync(want);
      const parts = dir.split(path.sep).filter(Boolean);
      for (let i = 0; i <= parts.length; i++) {
        const why = unsafeDir(path.sep + parts.slice(0, i).join(path.sep), i === parts.length);
        if (why) throw new Error(why);
      }
      return new CfiDiskCache(dir, maxBytes);
    } catch (e) {
      log(`cfi: no table cache on disk (${(e as Error).message}); tables are compiled every session`);
      return undefined;
    }
  }

  /** Where key's entry lives. */
  file(key: string): string {
    return path.join(this.dir, `${crypto.createHash('sha256').update(key).digest('hex')}.cfi`);
  }

  /** The entry for key, or undefined (absent, or not valid: then removed). */
  get(key: string): CachedTable | undefined {
    const file = this.file(key);
    let buf: Buffer;
    try {
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try {
        const st = fs.fstatSync(fd);
        if (!st.isFile() || st.uid !== 0 || st.nlink !== 1 || st.mode & 0o022 || st.size > MAX_ENTRY) throw new Error('not ours');
        buf = Buffer.alloc(st.size);
        if (fs.readSync(fd, buf, 0, st.size, 0) !== st.size) throw new Error('short read');
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.drop(file);
      return undefined;
    }
    const t = decodeEntry(buf, key);
    if (!t) this.drop(file);
    else this.touch(file);
    return t;
  }

  /** Writes key's entry (a new file renamed into place), then trims the cache to its size. */
  put(key: string, t: CachedTable): void {
    const file = this.file(key);
    const tmp = `${file}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`;
    const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
    try {
      try {
        fs.writeSync(fd, encodeEntry(key, t));
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
    } catch (e) {
      this.drop(tmp);
      throw e;
    }
    this.trim();
  }

  /** Marks an entry used now (evicted last); one another session just evicted is no matter. */
  private touch(file: string): void {
    try {
      const now = new Date();
      fs.utimesSync(file, now, now);
    } catch {
      /* gone: stored again when next compiled */
    }
  }

  private drop(file: string): void {
    try {
      fs.unlinkSync(file);
    } catch {
      /* gone already */
    }
  }

  /** Oldest entries (by last use) removed until the cache fits; leftover temporary files of dead writers too. */
  private trim(): void {
    const entries: { f: string; size: number; mtime: number }[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      const f = path.join(this.dir, name);
      const st = fs.lstatSync(f, { throwIfNoEntry: false });
      if (!st?.isFile()) continue;
      if (name.endsWith('.tmp') && Date.now() - st.mtimeMs > 3600_000) this.drop(f);
      if (ENTRY_NAME.test(name)) entries.push({ f, size: st.size, mtime: st.mtimeMs });
    }
    let total = entries.reduce((n, e) => n + e.size, 0);
    for (const e of entries.sort((a, b) => a.mtime - b.mtime)) {
      if (total <= this.maxBytes) break;
      this.drop(e.f);
      total -= e.size;
    }
  }
}

/** The state directory the tool uses (root's for the cache). */
function stateDir(): string {
  return process.env.EBPF_STUDIO_STATE_DIR || path.join(os.userInfo().homedir, '.local', 'state', 'ebpf-studio');
}

/** An entry's bytes: header, key, meta, rows, page index, SHA-256 of all that. */
export function encodeEntry(key: string, t: CachedTable): Buffer {
  const k = Buffer.from(key);
  const meta = Buffer.from(JSON.stringify({ base: t.pages.base, fdes: t.fdes, debugFrameFdes: t.debugFrameFdes, unsupported: t.unsupported, loads: t.loads.map((l) => [String(l.offset), String(l.filesz), String(l.delta)]), ...(t.debugDeps ? { debugDeps: t.debugDeps } : {}) }));
  const h = Buffer.alloc(HEADER);
  MAGIC.copy(h, 0);
  h.writeUInt32LE(CFI_CACHE_VERSION, 8);
  h.writeUInt32LE(k.length, 12);
  h.writeUInt32LE(meta.length, 16);
  h.writeUInt32LE(t.nrows, 20);
  const pages = Buffer.from(t.pages.idx.buffer, t.pages.idx.byteOffset, t.pages.idx.byteLength);
  const body = Buffer.concat([h, k, meta, t.rows.subarray(0, t.nrows * CFI_ROW_SIZE), pages]);
  return Buffer.concat([body, crypto.createHash('sha256').update(body).digest()]);
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The table in an entry's bytes, or undefined when anything about it is off (any of it: never half-trusted). */
export function decodeEntry(buf: Buffer, key: string): CachedTable | undefined {
  try {
    if (buf.length < HEADER + SUM || buf.length > MAX_ENTRY || !buf.subarray(0, 8).equals(MAGIC) || buf.readUInt32LE(8) !== CFI_CACHE_VERSION) return undefined;
    const body = buf.subarray(0, buf.length - SUM);
    if (!crypto.createHash('sha256').update(body).digest().equals(buf.subarray(buf.length - SUM))) return undefined;
    const [klen, mlen, nrows] = [buf.readUInt32LE(12), buf.readUInt32LE(16), buf.readUInt32LE(20)];
    if (klen > MAX_KEY || mlen > MAX_META || nrows === 0 || nrows > CFI_MAX_FILE_ROWS) return undefined;
    const rowsAt = HEADER + klen + mlen;
    const pageBytes = body.length - rowsAt - nrows * CFI_ROW_SIZE;
    if (pageBytes < 8 || pageBytes % 4 || pageBytes / 4 > MAX_PAGES) return undefined;
    if (buf.toString('utf8', HEADER, HEADER + klen) !== key) return undefined;
    const m = JSON.parse(buf.toString('utf8', HEADER + klen, rowsAt)) as Record<string, unknown>;
    if (!isCount(m.base) || !isCount(m.fdes) || (m.debugFrameFdes !== undefined && !isCount(m.debugFrameFdes))) return undefined;
    const unsupported = m.unsupported as Record<string, unknown>;
    if (!unsupported || typeof unsupported !== 'object' || Object.values(unsupported).some((n) => !isCount(n))) return undefined;
    if (!Array.isArray(m.loads) || m.loads.length > 64) return undefined;
    const loads = (m.loads as unknown[]).map((l) => {
      if (!Array.isArray(l) || l.length !== 3 || l.some((s) => typeof s !== 'string' || !/^-?\d{1,20}$/.test(s))) throw new Error('bad load');
      return { offset: BigInt(l[0] as string), filesz: BigInt(l[1] as string), delta: BigInt(l[2] as string) };
    });
    const deps = m.debugDeps;
    const goodDep = (d: unknown) => Array.isArray(d) && d.length === 2 && d.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 4096);
    if (deps !== undefined && (!Array.isArray(deps) || deps.length > 8 || !deps.every(goodDep))) return undefined;
    const rows = Buffer.from(buf.subarray(rowsAt, rowsAt + nrows * CFI_ROW_SIZE));
    const idx = new Uint32Array(pageBytes / 4);
    Buffer.from(idx.buffer).set(buf.subarray(rowsAt + nrows * CFI_ROW_SIZE, body.length));
    if (idx.some((r) => r >= nrows)) return undefined;
    return { rows, nrows, pages: { base: m.base, idx }, fdes: m.fdes, debugFrameFdes: m.debugFrameFdes as number | undefined, unsupported: unsupported as Record<string, number>, loads, ...(deps ? { debugDeps: deps as [string, string][] } : {}) };
  } catch {
    return undefined;
  }
}
