// The JFR reader on chunks written here byte by byte (no JVM): metadata, constant pools whose
// values refer to each other (a cycle included), events decoded from the metadata, and hostile
// chunks: a type that contains itself inline, constant pool events that point at each other, an
// array claiming 2^31 elements, every truncation and every byte set to 0x00 or 0xff. Each ends
// with a JfrError naming an offset inside the chunk, never another exception or a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Chunk, JFR_LIMITS, JfrBudget, readChunkHeader, type JfrObject } from '../../extension/model/jfr/chunk';
import { JfrError } from '../../extension/model/jfr/cursor';

function leb(v: number): number[] {
  let u = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  for (let i = 0; i < 8; i++) {
    const low = Number(u & 0x7fn);
    u >>= 7n;
    if (u === 0n) return [...out, low];
    out.push(low | 0x80);
  }
  return [...out, Number(u & 0xffn)];
}
const utf8 = (s: string) => [3, ...leb(Buffer.byteLength(s)), ...Buffer.from(s)];
/** An event: its size (padded to 4 bytes, as HotSpot writes it), then the body. */
const event = (body: number[]) => {
  const n = body.length + 4;
  return [0x80 | (n & 0x7f), 0x80 | ((n >> 7) & 0x7f), 0x80 | ((n >> 14) & 0x7f), (n >> 21) & 0x7f, ...body];
};

interface ClassSpec {
  id: number;
  name: string;
  superType?: string;
  fields?: { name: string; type: number; cp?: boolean; array?: boolean }[];
}

function metadata(classes: ClassSpec[]): number[] {
  const strings: string[] = [];
  const s = (x: string) => {
    if (!strings.includes(x)) strings.push(x);
    return leb(strings.indexOf(x));
  };
  const el = (name: string, attrs: Record<string, string>, children: number[][]) => [...s(name), ...leb(Object.keys(attrs).length), ...Object.entries(attrs).flatMap(([k, v]) => [...s(k), ...s(v)]), ...leb(children.length), ...children.flat()];
  const classEls = classes.map((c) =>
    el('class', { id: String(c.id), name: c.name, ...(c.superType ? { superType: c.superType } : {}) }, (c.fields ?? []).map((f) => el('field', { name: f.name, class: String(f.type), ...(f.cp ? { constantPool: 'true' } : {}), ...(f.array ? { dimension: '1' } : {}) }, []))),
  );
  const root = el('root', {}, [el('metadata', {}, classEls)]);
  return event([0, 0, 0, 1, ...leb(strings.length), ...strings.flatMap(utf8), ...root]);
}

/** A chunk: header, the events, the constant pool events, the metadata; `cpAt` picks which pool event the header names. */
function chunk(classes: ClassSpec[], events: number[][], pools: ((self: number) => number[])[] = [(_) => event([1, 0, 0, 0, 0, 0])]): Uint8Array {
  const body: number[] = [];
  let at = 68;
  for (const e of events) body.push(...e);
  at += body.length;
  const poolAt: number[] = [];
  for (const p of pools) {
    poolAt.push(at);
    const bytes = p(at);
    body.push(...bytes);
    at += bytes.length;
  }
  const metaAt = at;
  body.push(...metadata(classes));
  const size = 68 + body.length;
  const h = Buffer.alloc(68);
  h.write('FLR\0', 0, 'latin1');
  h.writeUInt16BE(2, 4);
  h.writeUInt16BE(1, 6);
  h.writeBigInt64BE(BigInt(size), 8);
  h.writeBigInt64BE(BigInt(poolAt[poolAt.length - 1]), 16);
  h.writeBigInt64BE(BigInt(metaAt), 24);
  h.writeBigInt64BE(1_000_000_000n, 32);
  h.writeBigInt64BE(5_000_000_000n, 40);
  h.writeBigInt64BE(0n, 48);
  h.writeBigInt64BE(1_000_000_000n, 56);
  h.writeInt32BE(1, 64);
  return Uint8Array.from([...h, ...body]);
}

const LONG = 4;
const STRING = 5;
const NODE = 6;
const EVENT = 7;
const CLASSES: ClassSpec[] = [
  { id: LONG, name: 'long' },
  { id: STRING, name: 'java.lang.String' },
  { id: NODE, name: 'test.Node', fields: [{ name: 'value', type: LONG }, { name: 'label', type: STRING }, { name: 'next', type: NODE, cp: true }] },
  { id: EVENT, name: 'test.Event', superType: 'jdk.jfr.Event', fields: [{ name: 'startTime', type: LONG }, { name: 'name', type: STRING }, { name: 'node', type: NODE, cp: true }, { name: 'values', type: LONG, array: true }] },
];
// the Node pool: 1 → {42, "one", next 2}, 2 → {-7, "two", next 1} (a cycle through the pool), in one pool event;
// the String pool (java.lang.String's) holds 9 → "pooled"
const NODE_POOL = (_: number) => event([1, 0, 0, 0, 1, ...leb(2), ...leb(NODE), ...leb(2), 1, ...leb(42), ...utf8('one'), ...leb(2), 2, ...leb(-7), 2, ...leb(9), ...leb(1), ...leb(STRING), ...leb(1), 9, ...utf8('pooled')]);
const EVENTS = [event([...leb(EVENT), ...leb(123), ...utf8('hello'), ...leb(1), ...leb(3), ...leb(10), ...leb(20), ...leb(-30)]), event([...leb(EVENT), ...leb(124), 1, ...leb(2), ...leb(0)])];

function readAll(buf: Uint8Array, offset = 0): { events: JfrObject[]; chunk: Chunk; counts: Map<string, number> } {
  const h = readChunkHeader(buf.subarray(0, 68), offset);
  if (buf.length < h.size) throw new JfrError(offset + 8, 'truncated');
  const c = new Chunk(buf.subarray(0, h.size), h, new JfrBudget());
  const events: JfrObject[] = [];
  const counts = new Map<string, number>();
  c.events({ count: (n) => counts.set(n, (counts.get(n) ?? 0) + 1), wants: () => true, event: (_, v) => events.push(v) });
  return { events, chunk: c, counts };
}

test('a chunk written here: events decoded from its metadata, pools that refer to each other', () => {
  const buf = chunk(CLASSES, EVENTS, [NODE_POOL]);
  const { events, chunk: c, counts } = readAll(buf);
  assert.deepEqual(Object.fromEntries(counts), { 'test.Event': 2, 'jdk.CheckPoint': 1, 'jdk.Metadata': 1 });
  assert.equal(events[0].startTime, 123);
  assert.equal(events[0].name, 'hello');
  assert.deepEqual(events[0].values, [10, 20, -30]);
  assert.equal(c.get(events[0], 'node', 'value'), 42);
  assert.equal(c.str(events[0], 'node', 'label'), 'one');
  // the cycle 1 → 2 → 1 is followed one reference at a time
  assert.equal(c.get(events[0], 'node', 'next', 'value'), -7);
  assert.equal(c.get(events[0], 'node', 'next', 'next', 'next', 'value'), -7);
  assert.equal(c.str(events[0], 'node', 'next', 'label'), 'pooled');
  assert.equal(events[1].name, '');
  assert.equal(c.ticksToNanos(500_000_000), 1_500_000_000);
});

const isJfrError = (buf: Uint8Array) => (e: unknown) => e instanceof JfrError && e.offset >= 0 && e.offset <= buf.length;

test('a type that contains itself inline stops at the depth limit', () => {
  const deep: ClassSpec[] = [...CLASSES, { id: 8, name: 'test.Deep', fields: [{ name: 'd', type: 8 }] }, { id: 9, name: 'test.Bad', superType: 'jdk.jfr.Event', fields: [{ name: 'deep', type: 8 }] }];
  const buf = chunk(deep, [event([...leb(9)])]);
  assert.throws(() => readAll(buf), (e: unknown) => isJfrError(buf)(e) && /nest deeper than the limit maxValueDepth/.test((e as Error).message));
});

test('constant pool events that point at each other, and an array of 2^31 elements, are refused', () => {
  // pool event A says the previous one is B (right after it), B says A: deltas as 9-byte integers keep both 18 bytes long
  const leb9 = (v: number) => {
    const u = BigInt.asUintN(64, BigInt(v));
    return [...Array.from({ length: 8 }, (_, i) => Number((u >> BigInt(7 * i)) & 0x7fn) | 0x80), Number((u >> 56n) & 0xffn)];
  };
  const loop = [() => event([1, 0, 0, ...leb9(18), 0, 0]), () => event([1, 0, 0, ...leb9(-18), 0, 0])];
  const buf = chunk(CLASSES, EVENTS, loop);
  assert.throws(() => readAll(buf), (e: unknown) => isJfrError(buf)(e) && /loop/.test((e as Error).message));
  const big = chunk(CLASSES, [event([...leb(EVENT), ...leb(1), 1, ...leb(1), ...leb(2 ** 31)])], [NODE_POOL]);
  assert.throws(() => readAll(big), (e: unknown) => isJfrError(big)(e) && /length of -2147483648|length of 2147483648/.test((e as Error).message));
  const runs = chunk(CLASSES, [event([...leb(EVENT), ...leb(1), 1, ...leb(1), ...leb(1_000_000)])], [NODE_POOL]);
  assert.throws(() => readAll(runs), (e: unknown) => isJfrError(runs)(e) && /runs past the end of its event/.test((e as Error).message));
});

test('the values a chunk\'s pools hold are counted, nested ones too, per chunk', () => {
  const buf = chunk(CLASSES, EVENTS, [NODE_POOL]);
  const h = readChunkHeader(buf.subarray(0, 68), 0);
  // 2 nodes (each a struct: 2 more) and 1 string: 5 values; 4 is too few, and the count starts again in every chunk
  assert.throws(() => new Chunk(buf, h, new JfrBudget({ ...JFR_LIMITS, maxPoolValues: 4 })), (e: unknown) => e instanceof JfrError && /maxPoolValues \(4\)/.test(e.message));
  const budget = new JfrBudget({ ...JFR_LIMITS, maxPoolValues: 5 });
  for (let i = 0; i < 3; i++) new Chunk(buf, h, budget);
});

test('every truncation and every byte set to 0x00 or 0xff: a JfrError with an offset, or a clean read', () => {
  const buf = chunk(CLASSES, EVENTS, [NODE_POOL]);
  let refused = 0;
  let read = 0;
  const attempt = (b: Uint8Array, what: string) => {
    try {
      readAll(b, 1000);
      read++;
    } catch (e) {
      assert.ok(e instanceof JfrError, `${what}: ${(e as Error).stack}`);
      assert.ok(e.offset >= 1000 && e.offset <= 1000 + buf.length, `${what}: offset ${e.offset}`);
      refused++;
    }
  };
  for (let n = 0; n < buf.length; n++) attempt(buf.subarray(0, n), `cut at ${n}`);
  for (let i = 0; i < buf.length; i++)
    for (const v of [0x00, 0xff]) {
      const b = Uint8Array.from(buf);
      b[i] = v;
      attempt(b, `byte ${i} = ${v}`);
    }
  assert.ok(refused > buf.length, `${refused} refused, ${read} read`);
});
