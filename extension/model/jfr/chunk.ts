// One chunk of a JFR recording: its header, metadata and constant pools, and its events decoded
// generically from the metadata (any event type, also ones this code has never heard of). A
// recording is a sequence of self-contained chunks; the file reader (sys/jfrFile.ts) hands them here
// one at a time, so memory is one chunk's bytes and pools, whatever the recording's length.
// Pure: no I/O.
import { Cursor, JfrError } from './cursor';
import { readMetadata, type JfrClass, type JfrField, type JfrMetadata } from './metadata';

const MiB = 1024 * 1024;

/** What one read of a recording may cost, whatever its bytes say (model/readLimits.ts's conventions). */
export const JFR_LIMITS = {
  /** Bytes of one chunk, held in memory while it is read: HotSpot rotates chunks at 12 MiB by default. */
  maxChunkBytes: 512 * MiB,
  /** Elements of one array or characters of one string (a stack is at most 2,048 frames deep in HotSpot). */
  maxLength: 4 * MiB,
  /** Nesting of inline values (a struct inside a struct): real types nest 3 deep. */
  maxValueDepth: 32,
  /** Elements of the metadata tree: JDK 25's describes ~200 classes in ~5,000 elements. */
  maxMetadataElements: 1_000_000,
  /**
   * Values held in one chunk's constant pools, nested ones included (each stack frame of each pooled
   * stack trace is one): ~100 bytes each, so ~1.6 GB at worst. A 12 MB HotSpot chunk holds < 1M.
   */
  maxPoolValues: 16_000_000,
  /** Wall time of one read: a 1 GB recording parses in well under this. */
  maxReadMs: 300_000,
} as const;

export type JfrLimits = { [K in keyof typeof JFR_LIMITS]: number };

export const CHUNK_HEADER_BYTES = 68;
const MAGIC = [0x46, 0x4c, 0x52, 0x00]; // "FLR\0"
const METADATA_TYPE = 0;
const CONSTANT_POOL_TYPE = 1;

export interface ChunkHeader {
  /** where the chunk starts in the file */
  offset: number;
  major: number;
  minor: number;
  size: number;
  constantPoolOffset: number;
  metadataOffset: number;
  startNanos: number;
  durationNanos: number;
  startTicks: number;
  ticksPerSecond: number;
  compressed: boolean;
}

/** A value read from a chunk: an event's or a pooled value's fields, an array, a pool reference or a primitive. */
export type JfrValue = number | boolean | string | null | JfrValue[] | JfrObject | PoolRef;
export interface JfrObject {
  [field: string]: JfrValue;
}

/** A field stored as a key into the pool of its type: resolved on demand (pools refer to each other). */
export class PoolRef {
  constructor(
    readonly type: number,
    readonly key: number,
  ) {}
}

/** Reads and checks the 68-byte header of the chunk at `offset`. */
export function readChunkHeader(buf: Uint8Array, offset: number, limits: JfrLimits = JFR_LIMITS): ChunkHeader {
  const c = new Cursor(buf, offset, false, 0);
  if (buf.length < CHUNK_HEADER_BYTES) c.fail(`the recording ends inside a chunk header (${buf.length} of ${CHUNK_HEADER_BYTES} bytes)`, 0);
  for (let i = 0; i < 4; i++) if (buf[i] !== MAGIC[i]) c.fail('not a JFR chunk (no "FLR\\0" magic)', 0);
  c.pos = 4;
  const major = c.u16();
  const minor = c.u16();
  if (major < 1 || major > 2) c.fail(`JFR version ${major}.${minor} is not one we read (1.x and 2.x are)`, 4);
  const size = c.i64();
  const constantPoolOffset = c.i64();
  const metadataOffset = c.i64();
  const h: ChunkHeader = { offset, major, minor, size, constantPoolOffset, metadataOffset, startNanos: c.i64(), durationNanos: c.i64(), startTicks: c.i64(), ticksPerSecond: c.i64(), compressed: (c.i32() & 1) !== 0 };
  if (size === 0) c.fail('the chunk was never finished (size 0: the recording was copied while the JVM was writing it)', 8);
  if (size < CHUNK_HEADER_BYTES) c.fail(`the chunk header gives a chunk size of ${size}`, 8);
  if (size > limits.maxChunkBytes) c.fail(`the chunk is ${size.toLocaleString('en-US')} bytes, over the limit maxChunkBytes (${limits.maxChunkBytes.toLocaleString('en-US')})`, 8);
  if (metadataOffset < CHUNK_HEADER_BYTES || metadataOffset >= size) c.fail(`the metadata offset ${metadataOffset} is outside the chunk`, 24);
  if (constantPoolOffset !== 0 && (constantPoolOffset < CHUNK_HEADER_BYTES || constantPoolOffset >= size)) c.fail(`the constant pool offset ${constantPoolOffset} is outside the chunk`, 16);
  if (!(h.ticksPerSecond > 0)) c.fail(`the chunk's clock has ${h.ticksPerSecond} ticks per second`, 56);
  return h;
}

type Decoder = (c: Cursor, depth: number) => JfrValue;

/** Looks at the clock every so often and stops a read past its deadline. */
export class JfrBudget {
  private n = 0;
  readonly deadline: number;

  constructor(
    readonly limits: JfrLimits = JFR_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.deadline = now() + limits.maxReadMs;
  }

  tick(c: Cursor): void {
    if ((++this.n & 0xfff) === 0 && this.now() > this.deadline) c.fail(`the read took longer than the limit maxReadMs (${this.limits.maxReadMs.toLocaleString('en-US')} ms)`);
  }
}

export interface EventVisitor {
  /** every event, pools and metadata included (as jdk.CheckPoint and jdk.Metadata, like `jfr summary`) */
  count?(name: string, size: number): void;
  /** whether to decode events of this type */
  wants(t: JfrClass): boolean;
  event(t: JfrClass, value: JfrObject, chunk: Chunk): void;
}

export class Chunk {
  readonly metadata: JfrMetadata;
  readonly pools = new Map<number, Map<number, JfrValue>>();
  private readonly decoders = new Map<number, Decoder>();
  private readonly stringType: number | undefined;

  constructor(
    readonly buf: Uint8Array,
    readonly header: ChunkHeader,
    readonly budget: JfrBudget,
  ) {
    const c = this.cursor(header.metadataOffset);
    this.metadata = readMetadata(c, budget.limits.maxMetadataElements);
    this.stringType = this.metadata.byName.get('java.lang.String')?.id;
    this.readPools();
  }

  cursor(pos: number, end = this.header.size): Cursor {
    return new Cursor(this.buf, this.header.offset, this.header.compressed, this.budget.limits.maxLength, pos, end);
  }

  /** ticks of this chunk's clock → ns since the epoch */
  ticksToNanos(ticks: number): number {
    return this.header.startNanos + ((ticks - this.header.startTicks) * 1e9) / this.header.ticksPerSecond;
  }

  /** a duration in ticks → ns */
  durationNanos(ticks: number): number {
    return (ticks * 1e9) / this.header.ticksPerSecond;
  }

  private decoder(typeId: number, c: Cursor): Decoder {
    let d = this.decoders.get(typeId);
    if (d) return d;
    const t = this.metadata.classes.get(typeId);
    if (!t) return c.fail(`a value has type ${typeId}, which the chunk's metadata does not describe`);
    d = this.primitive(t.name) ?? this.struct(t);
    this.decoders.set(typeId, d);
    return d;
  }

  private primitive(name: string): Decoder | undefined {
    switch (name) {
      case 'boolean':
        return (c) => c.u8() !== 0;
      case 'byte':
        return (c) => (c.u8() << 24) >> 24;
      case 'char':
      case 'short':
        return (c) => c.short();
      case 'int':
        return (c) => c.int();
      case 'long':
        return (c) => c.long();
      case 'float':
        return (c) => c.f32();
      case 'double':
        return (c) => c.f64();
      case 'java.lang.String':
        return (c) => {
          const s = c.string();
          return s === null || typeof s === 'string' ? s : new PoolRef(this.stringType ?? -1, s.pool);
        };
      default:
        return undefined;
    }
  }

  private field(f: JfrField): Decoder {
    let one: Decoder;
    if (f.constantPool) one = (c) => new PoolRef(f.typeId, c.long());
    else one = (c, depth) => this.decoder(f.typeId, c)(c, depth);
    if (!f.array) return one;
    return (c, depth) => {
      const n = c.length(`array ${f.name}`);
      if (this.pooling) this.countPoolValues(c, n);
      const out: JfrValue[] = [];
      for (let i = 0; i < n; i++) out.push(one(c, depth));
      return out;
    };
  }

  private struct(t: JfrClass): Decoder {
    const fields = t.fields.map((f) => ({ name: f.name, read: this.field(f) }));
    const max = this.budget.limits.maxValueDepth;
    return (c, depth) => {
      if (depth >= max) c.fail(`values of ${t.name} nest deeper than the limit maxValueDepth (${max})`);
      if (this.pooling) this.countPoolValues(c, 1);
      const o: JfrObject = {};
      for (const f of fields) o[f.name] = f.read(c, depth + 1);
      return o;
    };
  }

  /** Decodes a value of `typeId` at the cursor. */
  read(typeId: number, c: Cursor): JfrValue {
    return this.decoder(typeId, c)(c, 0);
  }

  /** While pools are read, every value decoded is kept: counted against maxPoolValues. */
  private pooling = false;
  private poolValues = 0;

  private countPoolValues(c: Cursor, n: number): void {
    this.poolValues += n;
    if (this.poolValues > this.budget.limits.maxPoolValues) c.fail(`the chunk's constant pools hold more than the limit maxPoolValues (${this.budget.limits.maxPoolValues.toLocaleString('en-US')}) values`);
  }

  /** The constant pool events, last to first (each names the offset of the one before it). */
  private readPools(): void {
    this.pooling = true;
    try {
      this.readPoolChain();
    } finally {
      this.pooling = false;
    }
  }

  private readPoolChain(): void {
    const seen = new Set<number>();
    let pos = this.header.constantPoolOffset;
    while (pos !== 0) {
      if (seen.has(pos) || pos < CHUNK_HEADER_BYTES || pos >= this.header.size) this.cursor(0).fail(`a constant pool event points at offset ${pos} of the chunk (outside it, or a loop)`);
      seen.add(pos);
      const delta = this.readPool(pos);
      pos = delta === 0 ? 0 : pos + delta;
    }
  }

  private readPool(pos: number): number {
    const c = this.cursor(pos);
    const size = c.int();
    if (size <= 0 || pos + size > this.header.size) c.fail(`a constant pool event has a size of ${size}`, pos);
    c.end = pos + size;
    if (c.long() !== CONSTANT_POOL_TYPE) c.fail('the constant pool chain leads to an event that is not a constant pool', pos);
    c.long(); // start time
    c.long(); // duration
    const delta = c.long();
    c.u8(); // checkpoint kind (flush, header, statics, thread)
    const nPools = c.length('a constant pool event\'s pools');
    for (let i = 0; i < nPools; i++) {
      const typeId = c.long();
      let pool = this.pools.get(typeId);
      if (!pool) this.pools.set(typeId, (pool = new Map()));
      const n = c.length('a constant pool');
      this.countPoolValues(c, n);
      const d = this.decoder(typeId, c);
      for (let j = 0; j < n; j++) {
        const key = c.long();
        pool.set(key, d(c, 0));
        this.budget.tick(c);
      }
    }
    return delta;
  }

  /** A pool reference's value (undefined when the pool has no such key); anything else as it is. */
  resolve(v: JfrValue | undefined): JfrValue | undefined {
    return v instanceof PoolRef ? this.pools.get(v.type)?.get(v.key) : v;
  }

  /** Follows references along a path of fields: resolvePath(event, 'stackTrace', 'frames'). */
  get(v: JfrValue | undefined, ...path: string[]): JfrValue | undefined {
    let x = this.resolve(v);
    for (const p of path) {
      if (x === null || x === undefined || typeof x !== 'object' || Array.isArray(x)) return undefined;
      x = this.resolve((x as JfrObject)[p]);
    }
    return x;
  }

  /** A string field through any number of references (jdk.types.Symbol → its string). */
  str(v: JfrValue | undefined, ...path: string[]): string | undefined {
    let x = this.get(v, ...path);
    for (let i = 0; i < 4 && x && typeof x === 'object' && !Array.isArray(x); i++) x = this.resolve((x as JfrObject).string ?? Object.values(x)[0]);
    return typeof x === 'string' ? x : undefined;
  }

  /** Every event of the chunk in file order; metadata and pool events are counted, not decoded. */
  events(v: EventVisitor): void {
    const c = this.cursor(CHUNK_HEADER_BYTES);
    const end = this.header.size;
    while (c.pos < end) {
      const start = c.pos;
      c.end = end;
      const size = c.int();
      if (size <= 0 || start + size > end) c.fail(`an event has a size of ${size} (${end - start} bytes of the chunk are left)`, start);
      c.end = start + size;
      const typeId = c.long();
      this.budget.tick(c);
      if (typeId === METADATA_TYPE || typeId === CONSTANT_POOL_TYPE) v.count?.(typeId === METADATA_TYPE ? 'jdk.Metadata' : 'jdk.CheckPoint', size);
      else {
        const t = this.metadata.classes.get(typeId);
        if (!t) return c.fail(`an event has type ${typeId}, which the chunk's metadata does not describe`, start);
        v.count?.(t.name, size);
        if (v.wants(t)) v.event(t, this.read(typeId, c) as JfrObject, this);
      }
      c.pos = start + size;
    }
  }
}

export { JfrError };

/** A recording already in memory (a profile file read whole, ≤ PROFILE_LIMITS.maxFileBytes): its chunks in order. */
export function readJfrBytes(buf: Uint8Array, visitor: EventVisitor, limits: JfrLimits = JFR_LIMITS): number {
  const budget = new JfrBudget(limits);
  let chunks = 0;
  for (let pos = 0; pos < buf.length; chunks++) {
    const h = readChunkHeader(buf.subarray(pos, pos + CHUNK_HEADER_BYTES), pos, limits);
    if (pos + h.size > buf.length) throw new JfrError(pos + 8, `the chunk at byte ${pos} is ${h.size.toLocaleString('en-US')} bytes but the file ends ${(buf.length - pos).toLocaleString('en-US')} bytes after its start (a truncated recording)`);
    new Chunk(buf.subarray(pos, pos + h.size), h, budget).events(visitor);
    pos += h.size;
  }
  return chunks;
}

/** Whether bytes start like a JFR recording ("FLR\0"). */
export function isJfr(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === MAGIC[0] && b[1] === MAGIC[1] && b[2] === MAGIC[2] && b[3] === MAGIC[3];
}
