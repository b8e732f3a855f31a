// The JFR reader's primitives: compressed integers (LEB128, 9 bytes for a negative long), the six
// string encodings, and errors that name the byte offset of the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cursor, JfrError } from '../../extension/model/jfr/cursor';
import { readChunkHeader } from '../../extension/model/jfr/chunk';

/** LEB128 as HotSpot writes it: 7 bits a byte, the ninth byte whole. */
function leb(v: bigint): number[] {
  let u = BigInt.asUintN(64, v);
  const out: number[] = [];
  for (let i = 0; i < 8; i++) {
    const low = Number(u & 0x7fn);
    u >>= 7n;
    if (u === 0n) return [...out, low];
    out.push(low | 0x80);
  }
  return [...out, Number(u & 0xffn)];
}

const cur = (bytes: number[], compressed = true, offset = 1000) => new Cursor(Uint8Array.from(bytes), offset, compressed, 1 << 20);

test('compressed integers decode from 1 to 9 bytes, negatives included', () => {
  for (const v of [0n, 1n, 127n, 128n, 300n, 16383n, 16384n, 2n ** 31n - 1n, 2n ** 32n, 2n ** 49n - 1n, 2n ** 49n, 2n ** 53n - 1n, -1n, -16384n, -(2n ** 40n), -(2n ** 53n) + 1n]) {
    const c = cur(leb(v));
    assert.equal(c.long(), Number(v), `long ${v}`);
    assert.equal(c.pos, leb(v).length);
  }
  assert.equal(leb(-1n).length, 9);
  // an int is the low 32 bits, signed: HotSpot writes -1 as an unsigned 32-bit value
  assert.equal(cur(leb(0xffffffffn)).int(), -1);
  assert.equal(cur(leb(-1n)).int(), -1);
  assert.equal(cur(leb(2147483647n)).int(), 2147483647);
});

test('fixed-width integers when the chunk does not compress them', () => {
  const c = cur([0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], false);
  assert.equal(c.int(), -2);
  assert.equal(c.long(), 2 ** 32 + 2);
  assert.equal(c.long(), -1);
});

test('strings in every encoding: null, empty, pool reference, UTF-8, char array, Latin-1', () => {
  const utf8 = [...Buffer.from('Grüße → 𝄞', 'utf8')];
  // a char array holds UTF-16 units (a surrogate pair is two)
  const units = 'Grüße 𝄞'.split('').map((x) => x.charCodeAt(0));
  const latin = [0x63, 0x61, 0x66, 0xe9];
  const bytes = [0, 1, 2, ...leb(4242n), 3, ...leb(BigInt(utf8.length)), ...utf8, 4, ...leb(BigInt(units.length)), ...units.flatMap((u) => leb(BigInt(u))), 5, ...leb(4n), ...latin];
  const c = cur(bytes);
  assert.equal(c.string(), null);
  assert.equal(c.string(), '');
  assert.deepEqual(c.string(), { pool: 4242 });
  assert.equal(c.string(), 'Grüße → 𝄞');
  assert.equal(c.string(), 'Grüße 𝄞');
  assert.equal(c.string(), 'café');
  assert.equal(c.pos, bytes.length);
});

test('errors name the byte offset in the file', () => {
  const fail = (f: () => unknown, offset: number, re: RegExp) =>
    assert.throws(f, (e: unknown) => e instanceof JfrError && e.offset === offset && re.test(e.message) && e.message.startsWith(`at byte ${offset}:`));
  // a varint whose continuation bit runs off the end: the offset is where it starts
  fail(() => cur([0x80, 0x80]).long(), 1000, /ends inside a compressed integer/);
  // an unknown string encoding at the 3rd byte
  const c = cur([1, 1, 9]);
  c.string();
  c.string();
  fail(() => c.string(), 1002, /unknown string encoding 9/);
  // a string longer than the bytes left, and one longer than the limit
  fail(() => cur([3, 10, 0x41]).string(), 1002, /ends inside a value/);
  fail(() => new Cursor(Uint8Array.from([3, ...leb(2n ** 30n)]), 0, true, 1 << 20).string(), 1, /length of 1073741824/);
  // a header that is not a chunk, and one cut short
  fail(() => readChunkHeader(new Uint8Array(68), 5000), 5000, /no "FLR\\0" magic/);
  fail(() => readChunkHeader(Uint8Array.from([0x46, 0x4c, 0x52, 0]), 5000), 5000, /ends inside a chunk header/);
});
