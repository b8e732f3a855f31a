// The bytes of one JFR chunk as its readers see them: big-endian fixed-width integers, or (when the
// chunk header says so, as every HotSpot chunk since JDK 9 does) LEB128-style compressed integers,
// and strings in six encodings. Every read is bounds-checked and a failure names the byte offset in
// the file, so a truncated or corrupted recording is reported where it went wrong. Pure: no I/O.
import { ImportError } from '../readLimits';

/** A recording we cannot read: the message says why and at which byte of the file. */
export class JfrError extends ImportError {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`at byte ${offset}: ${reason}`);
    this.name = 'JfrError';
  }
}

const TWO_32 = 2 ** 32;

/** String encodings of the JFR format (the byte before each string). */
export const STRING_NULL = 0;
export const STRING_EMPTY = 1;
export const STRING_POOL = 2;
export const STRING_UTF8 = 3;
export const STRING_CHARS = 4;
export const STRING_LATIN1 = 5;

const utf8 = new TextDecoder('utf-8');
const latin1 = new TextDecoder('latin1');

/** A string read from a chunk: literal, or a key into the chunk's java.lang.String pool. */
export type JfrString = string | null | { pool: number };

export class Cursor {
  pos: number;

  constructor(
    readonly buf: Uint8Array,
    /** where buf[0] sits in the file: offsets in errors are the file's */
    readonly fileOffset: number,
    /** integers compressed (the chunk header's feature bit 0) */
    public compressed: boolean,
    /** the longest string or array, in bytes or elements, that a read may claim */
    readonly maxLength: number,
    pos = 0,
    /** the end of what may be read (an event's end): defaults to the buffer's */
    public end = buf.length,
  ) {
    this.pos = pos;
  }

  fail(reason: string, at = this.pos): never {
    throw new JfrError(this.fileOffset + at, reason);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) this.fail(this.end === this.buf.length ? `the recording ends inside a value (${n} more bytes needed)` : `a value runs past the end of its event (${n} more bytes needed)`);
  }

  private cutInteger(): never {
    return this.fail(this.end === this.buf.length ? 'the recording ends inside a compressed integer' : 'a compressed integer runs past the end of its event');
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++];
  }

  u16(): number {
    this.need(2);
    const b = this.buf;
    const v = (b[this.pos] << 8) | b[this.pos + 1];
    this.pos += 2;
    return v;
  }

  i32(): number {
    this.need(4);
    const b = this.buf;
    const p = this.pos;
    this.pos += 4;
    return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) | 0;
  }

  /** A signed 64-bit integer as a number (exact up to 2^53; ids and sizes stay far below). */
  i64(): number {
    const hi = this.i32();
    const lo = this.i32() >>> 0;
    return hi * TWO_32 + lo;
  }

  f32(): number {
    this.need(4);
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 4).getFloat32(0);
    this.pos += 4;
    return v;
  }

  f64(): number {
    this.need(8);
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0);
    this.pos += 8;
    return v;
  }

  /**
   * A compressed integer: 7 bits a byte, least significant first, the high bit set on every byte
   * but the last; the ninth byte carries 8 bits. A 64-bit value with the top bit set is negative.
   */
  varint(): number {
    const b = this.buf;
    let p = this.pos;
    const end = this.end;
    if (p < end && b[p] < 0x80) {
      this.pos = p + 1;
      return b[p];
    }
    let v = 0;
    let scale = 1;
    // up to 7 bytes (49 bits) a double is exact; longer values (negative longs are 9 bytes) take BigInt
    for (let i = 0; i < 7; i++) {
      if (p >= end) this.cutInteger();
      const x = b[p++];
      v += (x & 0x7f) * scale;
      scale *= 128;
      if (x < 0x80) {
        this.pos = p;
        return v;
      }
    }
    return this.longVarint();
  }

  private longVarint(): number {
    const b = this.buf;
    let p = this.pos;
    let v = 0n;
    for (let i = 0; i < 9; i++) {
      if (p >= this.end) this.cutInteger();
      const x = b[p++];
      if (i === 8) {
        v |= BigInt(x) << 56n;
        break;
      }
      v |= BigInt(x & 0x7f) << BigInt(7 * i);
      if (x < 0x80) break;
    }
    this.pos = p;
    return Number(BigInt.asIntN(64, v));
  }

  /** A compressed int: the low 32 bits, signed. */
  int(): number {
    return this.compressed ? toInt32(this.varint()) : this.i32();
  }

  long(): number {
    return this.compressed ? this.varint() : this.i64();
  }

  short(): number {
    return this.compressed ? (toInt32(this.varint()) << 16) >> 16 : (this.u16() << 16) >> 16;
  }

  /** A length (of a string, an array, a table): non-negative and at most maxLength. */
  length(what: string): number {
    const at = this.pos;
    const n = this.int();
    if (n < 0 || n > this.maxLength) this.fail(`${what} has a length of ${n} (the limit is ${this.maxLength})`, at);
    return n;
  }

  string(): JfrString {
    const at = this.pos;
    const enc = this.u8();
    switch (enc) {
      case STRING_NULL:
        return null;
      case STRING_EMPTY:
        return '';
      case STRING_POOL:
        return { pool: this.long() };
      case STRING_UTF8:
      case STRING_LATIN1: {
        const n = this.length('a string');
        this.need(n);
        const s = (enc === STRING_UTF8 ? utf8 : latin1).decode(this.buf.subarray(this.pos, this.pos + n));
        this.pos += n;
        return s;
      }
      case STRING_CHARS: {
        const n = this.length('a string');
        const units = new Array<number>(n);
        for (let i = 0; i < n; i++) units[i] = this.int() & 0xffff;
        let s = '';
        for (let i = 0; i < n; i += 8192) s += String.fromCharCode(...units.slice(i, i + 8192));
        return s;
      }
      default:
        return this.fail(`unknown string encoding ${enc}`, at);
    }
  }

  /** A string that may not be a pool reference (the metadata's own table). */
  literal(): string | null {
    const at = this.pos;
    const s = this.string();
    if (s !== null && typeof s !== 'string') this.fail('a metadata string refers to a constant pool', at);
    return s;
  }
}

function toInt32(v: number): number {
  if (v <= 0x7fffffff && v >= -0x80000000) return v;
  return Number(BigInt.asIntN(32, BigInt(v)));
}
