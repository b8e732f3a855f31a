// Decodes map keys/values and ring-buffer records with an object's own BTF, as dumped by
// `bpftool -j btf dump file X.bpf.o` (we let bpftool parse .BTF rather than writing an ELF/BTF
// parser of our own: it is the reference reader and it is already required for vmlinux.h).
// This module is pure: JSON types in, JSON values out.
import type { Json } from '../protocol/bpfRun';

export interface BtfMember {
  name: string;
  type_id: number;
  bits_offset: number;
  bitfield_size?: number;
}

export interface BtfType {
  id: number;
  kind: string;
  name: string;
  size?: number;
  type_id?: number;
  nr_elems?: number;
  encoding?: string;
  nr_bits?: number;
  members?: BtfMember[];
  values?: { name: string; val: number }[];
  vars?: { type_id: number; offset: number; size: number }[];
}

export interface MapTypes {
  keyTypeId?: number;
  valueTypeId?: number;
}

const QUALIFIERS = new Set(['TYPEDEF', 'CONST', 'VOLATILE', 'RESTRICT', 'TYPE_TAG']);

export class Btf {
  private readonly types = new Map<number, BtfType>();

  constructor(types: BtfType[]) {
    for (const t of types) this.types.set(t.id, t);
  }

  static fromBpftoolJson(json: unknown): Btf {
    const types = (json as { types?: BtfType[] })?.types;
    if (!Array.isArray(types)) throw new Error('bpftool output has no "types" array');
    return new Btf(types);
  }

  get(id: number): BtfType | undefined {
    return this.types.get(id);
  }

  /** Skips typedefs and qualifiers. */
  resolve(id: number): BtfType | undefined {
    let t = this.types.get(id);
    for (let i = 0; t && QUALIFIERS.has(t.kind) && i < 32; i++) t = this.types.get(t.type_id ?? 0);
    return t;
  }

  sizeOf(id: number): number {
    const t = this.resolve(id);
    if (!t) return 0;
    if (t.kind === 'ARRAY') return (t.nr_elems ?? 0) * this.sizeOf(t.type_id ?? 0);
    if (t.kind === 'PTR') return 8;
    return t.size ?? 0;
  }

  typeName(id: number): string {
    const t = this.types.get(id);
    if (!t) return id === 0 ? 'void' : `type#${id}`;
    const named = t.name && t.name !== '(anon)';
    switch (t.kind) {
      case 'STRUCT':
      case 'UNION':
        return named ? `${t.kind.toLowerCase()} ${t.name}` : `${t.kind.toLowerCase()} {...}`;
      case 'ENUM':
      case 'ENUM64':
        return named ? `enum ${t.name}` : 'enum {...}';
      case 'PTR':
        return `${this.typeName(t.type_id ?? 0)} *`;
      case 'ARRAY':
        return `${this.typeName(t.type_id ?? 0)}[${t.nr_elems}]`;
      case 'CONST':
        return `const ${this.typeName(t.type_id ?? 0)}`;
      case 'VOLATILE':
        return `volatile ${this.typeName(t.type_id ?? 0)}`;
      default:
        return named ? t.name : t.kind.toLowerCase();
    }
  }

  structsNamed(name: string): BtfType[] {
    return [...this.types.values()].filter((t) => (t.kind === 'STRUCT' || t.kind === 'UNION') && t.name === name);
  }

  /** Named structs of exactly `size` bytes: candidates for an undeclared ring-buffer record. */
  structsOfSize(size: number): BtfType[] {
    return [...this.types.values()].filter((t) => t.kind === 'STRUCT' && t.name !== '(anon)' && t.size === size);
  }

  /** BTF-defined maps (DATASEC ".maps"): name → key/value type ids from their __type() members. */
  mapTypes(): Map<string, MapTypes> {
    const out = new Map<string, MapTypes>();
    for (const t of this.types.values()) {
      if (t.kind !== 'DATASEC' || t.name !== '.maps') continue;
      for (const v of t.vars ?? []) {
        const variable = this.types.get(v.type_id);
        const def = variable ? this.resolve(variable.type_id ?? 0) : undefined;
        if (!variable || !def?.members) continue;
        const entry: MapTypes = {};
        for (const m of def.members) {
          const ptr = this.resolve(m.type_id);
          if (ptr?.kind !== 'PTR') continue;
          if (m.name === 'key') entry.keyTypeId = ptr.type_id;
          if (m.name === 'value') entry.valueTypeId = ptr.type_id;
        }
        out.set(variable.name, entry);
      }
    }
    return out;
  }

  decode(id: number, buf: Buffer, offset = 0): Json {
    const t = this.resolve(id);
    if (!t) return buf.subarray(offset).toString('hex');
    switch (t.kind) {
      case 'INT':
        return readInt(buf, offset, t.size ?? 0, t.encoding === 'SIGNED', t.encoding === 'BOOL', t.encoding === 'CHAR');
      case 'ENUM':
      case 'ENUM64': {
        const v = readInt(buf, offset, t.size ?? 4, t.encoding === 'SIGNED', false, false);
        return t.values?.find((e) => e.val === v)?.name ?? v;
      }
      case 'PTR':
        return offset + 8 <= buf.length ? `0x${buf.readBigUInt64LE(offset).toString(16)}` : null;
      case 'FLOAT':
        return t.size === 4 ? buf.readFloatLE(offset) : buf.readDoubleLE(offset);
      case 'ARRAY': {
        const elem = this.resolve(t.type_id ?? 0);
        const n = t.nr_elems ?? 0;
        if (elem?.kind === 'INT' && elem.size === 1 && (elem.name === 'char' || elem.encoding === 'CHAR' || /char/.test(elem.name))) {
          const slice = buf.subarray(offset, offset + n);
          const end = slice.indexOf(0);
          return slice.toString('utf8', 0, end < 0 ? n : end);
        }
        const es = this.sizeOf(t.type_id ?? 0);
        const out: Json[] = [];
        for (let i = 0; i < n && offset + (i + 1) * es <= buf.length; i++) out.push(this.decode(t.type_id ?? 0, buf, offset + i * es));
        return out;
      }
      case 'STRUCT':
      case 'UNION': {
        const obj: { [k: string]: Json } = {};
        const members = t.kind === 'UNION' ? (t.members ?? []).slice(0, 1) : (t.members ?? []);
        for (const m of members) {
          let v: Json;
          if (m.bitfield_size) v = readBits(buf, offset, m.bits_offset, m.bitfield_size);
          else v = this.decode(m.type_id, buf, offset + m.bits_offset / 8);
          // Anonymous nested aggregates: their members belong to the parent, as in C.
          if ((!m.name || m.name === '(anon)') && v && typeof v === 'object' && !Array.isArray(v)) Object.assign(obj, v);
          else obj[m.name] = v;
        }
        return obj;
      }
      default:
        return buf.subarray(offset, offset + (t.size ?? 0)).toString('hex');
    }
  }
}

function readInt(buf: Buffer, off: number, size: number, signed: boolean, bool: boolean, _char: boolean): Json {
  if (off + size > buf.length) return null;
  let v: number | bigint;
  switch (size) {
    case 1:
      v = signed ? buf.readInt8(off) : buf.readUInt8(off);
      break;
    case 2:
      v = signed ? buf.readInt16LE(off) : buf.readUInt16LE(off);
      break;
    case 4:
      v = signed ? buf.readInt32LE(off) : buf.readUInt32LE(off);
      break;
    case 8:
      v = signed ? buf.readBigInt64LE(off) : buf.readBigUInt64LE(off);
      break;
    default:
      return buf.subarray(off, off + size).toString('hex');
  }
  if (bool) return v !== 0 && v !== 0n;
  if (typeof v === 'bigint') return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
  return v;
}

function readBits(buf: Buffer, base: number, bitOffset: number, bits: number): number {
  let v = 0n;
  const first = Math.floor(bitOffset / 8);
  const last = Math.floor((bitOffset + bits - 1) / 8);
  for (let i = last; i >= first; i--) v = (v << 8n) | BigInt(buf[base + i] ?? 0);
  return Number((v >> BigInt(bitOffset - first * 8)) & ((1n << BigInt(bits)) - 1n));
}

/** Adds numbers member-wise: per-CPU values summed into one. Non-numbers keep the first CPU's value. */
export function sumJson(a: Json, b: Json): Json {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (Array.isArray(a) && Array.isArray(b)) return a.map((x, i) => sumJson(x, b[i] ?? null));
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const out: { [k: string]: Json } = {};
    for (const k of Object.keys(a)) out[k] = sumJson(a[k], b[k] ?? null);
    return out;
  }
  return a;
}

/**
 * The log2 bucket counts a decoded value holds: an integer array (e.g. __u64[27]) or a struct
 * with exactly one such array (bcc's struct hist { __u32 slots[26]; char comm[16]; }).
 * Returns the counts and the struct's other members as a label.
 */
export function histogramOf(v: Json): { counts: number[]; label?: string } | undefined {
  const isCounts = (x: Json): x is number[] => Array.isArray(x) && x.length >= 2 && x.every((n) => typeof n === 'number');
  if (isCounts(v)) return { counts: v };
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const arrays = Object.entries(v).filter(([, x]) => isCounts(x));
    const pick = arrays.find(([k]) => k === 'slots') ?? (arrays.length === 1 ? arrays[0] : undefined);
    if (!pick) return undefined;
    const rest = Object.entries(v).filter(([k, x]) => k !== pick[0] && (typeof x === 'string' ? x !== '' : typeof x === 'number'));
    return { counts: pick[1] as number[], label: rest.length ? rest.map(([k, x]) => `${k}=${String(x)}`).join(' ') : undefined };
  }
  return undefined;
}
