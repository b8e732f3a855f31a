// One value from a bbolt database file (containerd's metadata store, meta.db), read in place: the
// image a `ctr run` or nerdctl container was made from is kept there and nowhere in the files of
// its running task. Read-only and bounded: pages are read one at a time with pread (the file may
// be hundreds of MiB), at most MAX_PAGES of them, nested buckets at most MAX_DEPTH deep; any page
// that does not look like bbolt's ends the lookup with undefined (the database is written while
// we read it; a torn read names nothing, it never throws).
//
// The layout (bbolt's own, stable since its version 2): pages of `pageSize` bytes, each with a
// 16-byte header (id u64, flags u16, count u16, overflow u32); pages 0 and 1 are the two meta
// pages (magic, version, page size, the root bucket's page), the newer by transaction id wins.
// Branch pages hold (pos u32, ksize u32, pgid u64) elements, leaf pages (flags u32, pos u32,
// ksize u32, vsize u32) elements; a leaf value flagged as a bucket starts with the bucket's root
// page id and sequence, its root 0 meaning the bucket's page follows inline in the value.
import fs from 'node:fs';

const MAGIC = 0xed0cdaed;
const BRANCH = 0x01;
const LEAF = 0x02;
const BUCKET = 0x01;
const HEADER = 16;
const MAX_PAGES = 4096;
const MAX_DEPTH = 8;
const MAX_PAGE_BYTES = 1 << 20;

interface Page {
  flags: number;
  count: number;
  buf: Buffer;
}

class BoltReader {
  private reads = 0;
  constructor(
    private readonly fd: number,
    private readonly pageSize: number,
    private readonly size: number,
  ) {}

  page(id: bigint): Page | undefined {
    if (++this.reads > MAX_PAGES) return undefined;
    const at = Number(id) * this.pageSize;
    if (!Number.isSafeInteger(at) || at + this.pageSize > this.size) return undefined;
    const head = Buffer.alloc(HEADER);
    if (fs.readSync(this.fd, head, 0, HEADER, at) !== HEADER || head.readBigUInt64LE(0) !== id) return undefined;
    const bytes = (head.readUInt32LE(12) + 1) * this.pageSize;
    if (bytes > MAX_PAGE_BYTES || at + bytes > this.size) return undefined;
    const buf = Buffer.alloc(bytes);
    if (fs.readSync(this.fd, buf, 0, bytes, at) !== bytes) return undefined;
    return { flags: buf.readUInt16LE(8), count: buf.readUInt16LE(10), buf };
  }

  /** The value of `key` in the bucket whose root is `root` (a page id, or an inline page). */
  get(root: bigint | Page, key: Buffer, depth = 0): { value: Buffer; bucket: boolean } | undefined {
    const p = typeof root === 'bigint' ? this.page(root) : root;
    if (!p || depth > MAX_DEPTH) return undefined;
    const elems = HEADER + p.count * 16;
    if (elems > p.buf.length) return undefined;
    if (p.flags & BRANCH) {
      // the last element whose key is <= key holds it
      let child: bigint | undefined;
      for (let i = 0; i < p.count; i++) {
        const e = HEADER + i * 16;
        const k = p.buf.subarray(e + p.buf.readUInt32LE(e), e + p.buf.readUInt32LE(e) + p.buf.readUInt32LE(e + 4));
        if (i > 0 && Buffer.compare(k, key) > 0) break;
        child = p.buf.readBigUInt64LE(e + 8);
      }
      return child === undefined ? undefined : this.get(child, key, depth + 1);
    }
    if (!(p.flags & LEAF)) return undefined;
    for (let i = 0; i < p.count; i++) {
      const e = HEADER + i * 16;
      const [flags, pos, ksize, vsize] = [0, 4, 8, 12].map((o) => p.buf.readUInt32LE(e + o));
      const k = e + pos;
      if (k + ksize + vsize > p.buf.length) return undefined;
      if (p.buf.subarray(k, k + ksize).equals(key)) return { value: p.buf.subarray(k + ksize, k + ksize + vsize), bucket: (flags & BUCKET) !== 0 };
    }
    return undefined;
  }

  /** The root of a nested bucket from its value: a page id, or the page stored inline after the header. */
  bucketRoot(value: Buffer): bigint | Page | undefined {
    if (value.length < 16) return undefined;
    const root = value.readBigUInt64LE(0);
    if (root !== 0n) return root;
    const buf = value.subarray(16);
    return buf.length < HEADER ? undefined : { flags: buf.readUInt16LE(8), count: buf.readUInt16LE(10), buf };
  }
}

/** The root bucket's page and the page size from the newer valid meta page, or undefined. */
function meta(fd: number): { pageSize: number; root: bigint } | undefined {
  const best: { txid: bigint; pageSize: number; root: bigint }[] = [];
  const first = Buffer.alloc(HEADER + 64);
  if (fs.readSync(fd, first, 0, first.length, 0) !== first.length) return undefined;
  const pageSize = first.readUInt32LE(HEADER + 8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return undefined;
  for (const at of [0, pageSize]) {
    const b = Buffer.alloc(HEADER + 64);
    if (fs.readSync(fd, b, 0, b.length, at) !== b.length) continue;
    if (b.readUInt32LE(HEADER) !== MAGIC || b.readUInt32LE(HEADER + 4) !== 2 || b.readUInt32LE(HEADER + 8) !== pageSize) continue;
    best.push({ root: b.readBigUInt64LE(HEADER + 16), txid: b.readBigUInt64LE(HEADER + 48), pageSize });
  }
  best.sort((a, b) => (a.txid > b.txid ? -1 : 1));
  return best[0];
}

/**
 * The value at `keys` (bucket names, then the key) in a bbolt file already opened, or undefined.
 * `size` is the file's size from fstat.
 */
export function boltValue(fd: number, size: number, keys: string[]): Buffer | undefined {
  try {
    const m = meta(fd);
    if (!m || keys.length === 0) return undefined;
    const r = new BoltReader(fd, m.pageSize, size);
    let bucket: bigint | Page | undefined = m.root;
    for (const [i, k] of keys.entries()) {
      const hit = bucket === undefined ? undefined : r.get(bucket, Buffer.from(k));
      if (!hit) return undefined;
      if (i === keys.length - 1) return hit.bucket ? undefined : Buffer.from(hit.value);
      if (!hit.bucket) return undefined;
      bucket = r.bucketRoot(hit.value);
    }
    return undefined;
  } catch {
    return undefined;
  }
}
