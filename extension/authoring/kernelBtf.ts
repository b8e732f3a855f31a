// The running kernel's types read straight from its raw BTF (/sys/kernel/btf/vmlinux), for the
// language server's hover (member offsets and sizes, which vmlinux.h does not carry) and attach
// target checks (every FUNC is a function fentry/fexit can attach to; every "btf_trace_X" typedef
// is a raw tracepoint X). Hand-written: the BTF encoding is a small fixed format
// (Documentation/bpf/btf.rst), and the alternative, `bpftool -j btf dump` of the whole kernel,
// produces ~100 MB of JSON for the few facts we need. The parser is pure (bytes in); the file
// read is loadKernelBtf's.
import fs from 'node:fs';
import type { BtfType } from './btfDecode';

const MAGIC = 0xeb9f;

const KIND = {
  INT: 1,
  PTR: 2,
  ARRAY: 3,
  STRUCT: 4,
  UNION: 5,
  ENUM: 6,
  FWD: 7,
  TYPEDEF: 8,
  VOLATILE: 9,
  CONST: 10,
  RESTRICT: 11,
  FUNC: 12,
  FUNC_PROTO: 13,
  VAR: 14,
  DATASEC: 15,
  FLOAT: 16,
  DECL_TAG: 17,
  TYPE_TAG: 18,
  ENUM64: 19,
} as const;

export interface BtfMemberInfo {
  name: string;
  typeId: number;
  /** offset from the start of the struct, in bits */
  bitOffset: number;
  /** bitfield width in bits, 0 when the member is not a bitfield */
  bitSize: number;
}

interface RawType {
  kind: number;
  name: string;
  /** size for INT/STRUCT/UNION/ENUM/FLOAT/DATASEC; referenced type for PTR/TYPEDEF/qualifiers/FUNC/VAR */
  sizeOrType: number;
  members?: BtfMemberInfo[];
  array?: { elemType: number; nelems: number };
}

const QUALIFIER_KINDS = new Set<number>([KIND.TYPEDEF, KIND.VOLATILE, KIND.CONST, KIND.RESTRICT, KIND.TYPE_TAG]);

export interface FieldFacts {
  /** "struct task_struct" */
  owner: string;
  name: string;
  /** C type, e.g. "pid_t" or "struct task_struct *" */
  type: string;
  /** bytes from the start of the owner */
  offset: number;
  /** bytes the member takes (bitfields: 0, see bitSize) */
  size: number;
  bitSize: number;
  bitOffset: number;
}

export class KernelBtf {
  private readonly types: RawType[] = [{ kind: 0, name: 'void', sizeOrType: 0 }];
  private readonly byName = new Map<string, number>();
  private functionNames?: Set<string>;

  /** Parses a raw BTF blob; throws when it is not one. */
  constructor(buf: Buffer) {
    if (buf.length < 24 || buf.readUInt16LE(0) !== MAGIC) throw new Error('not a BTF blob (bad magic; big-endian BTF is not read)');
    const hdrLen = buf.readUInt32LE(4);
    const typeOff = buf.readUInt32LE(8);
    const typeLen = buf.readUInt32LE(12);
    const strOff = buf.readUInt32LE(16);
    const strLen = buf.readUInt32LE(20);
    const strBase = hdrLen + strOff;
    const str = (off: number) => {
      if (off >= strLen) return '';
      const end = buf.indexOf(0, strBase + off);
      return buf.toString('latin1', strBase + off, end < 0 ? strBase + strLen : end);
    };
    let p = hdrLen + typeOff;
    const end = p + typeLen;
    while (p + 12 <= end) {
      const nameOff = buf.readUInt32LE(p);
      const info = buf.readUInt32LE(p + 4);
      const sizeOrType = buf.readUInt32LE(p + 8);
      p += 12;
      const vlen = info & 0xffff;
      const kind = (info >>> 24) & 0x1f;
      const kindFlag = info >>> 31 === 1;
      const t: RawType = { kind, name: str(nameOff), sizeOrType };
      switch (kind) {
        case KIND.INT:
        case KIND.VAR:
        case KIND.DECL_TAG:
          p += 4;
          break;
        case KIND.ARRAY:
          t.array = { elemType: buf.readUInt32LE(p), nelems: buf.readUInt32LE(p + 8) };
          p += 12;
          break;
        case KIND.STRUCT:
        case KIND.UNION:
          t.members = [];
          for (let i = 0; i < vlen; i++, p += 12) {
            const off = buf.readUInt32LE(p + 8);
            t.members.push({ name: str(buf.readUInt32LE(p)), typeId: buf.readUInt32LE(p + 4), bitOffset: kindFlag ? off & 0xffffff : off, bitSize: kindFlag ? off >>> 24 : 0 });
          }
          break;
        case KIND.ENUM:
        case KIND.FUNC_PROTO:
          p += 8 * vlen;
          break;
        case KIND.DATASEC:
        case KIND.ENUM64:
          p += 12 * vlen;
          break;
        default:
          break;
      }
      const id = this.types.length;
      this.types.push(t);
      if (t.name && (kind === KIND.STRUCT || kind === KIND.UNION || kind === KIND.TYPEDEF || kind === KIND.FUNC)) {
        const key = `${kind === KIND.UNION ? 'struct' : kind === KIND.TYPEDEF ? 'typedef' : kind === KIND.FUNC ? 'func' : 'struct'} ${t.name}`;
        // A full definition wins over a later forward or a duplicate from another module.
        if (!this.byName.has(key)) this.byName.set(key, id);
      }
    }
  }

  get typeCount(): number {
    return this.types.length - 1;
  }

  private resolve(id: number): RawType | undefined {
    let t = this.types[id];
    for (let i = 0; t && QUALIFIER_KINDS.has(t.kind) && i < 32; i++) t = this.types[t.sizeOrType];
    return t;
  }

  sizeOf(id: number): number {
    const t = this.resolve(id);
    if (!t) return 0;
    if (t.kind === KIND.ARRAY) return (t.array?.nelems ?? 0) * this.sizeOf(t.array?.elemType ?? 0);
    if (t.kind === KIND.PTR) return 8;
    if (t.kind === KIND.STRUCT || t.kind === KIND.UNION || t.kind === KIND.INT || t.kind === KIND.ENUM || t.kind === KIND.ENUM64 || t.kind === KIND.FLOAT) return t.sizeOrType;
    return 0;
  }

  typeName(id: number, depth = 0): string {
    const t = this.types[id];
    if (!t || id === 0) return 'void';
    if (depth > 16) return '...';
    switch (t.kind) {
      case KIND.STRUCT:
        return t.name ? `struct ${t.name}` : 'struct {...}';
      case KIND.UNION:
        return t.name ? `union ${t.name}` : 'union {...}';
      case KIND.ENUM:
      case KIND.ENUM64:
        return t.name ? `enum ${t.name}` : 'enum {...}';
      case KIND.PTR:
        return this.types[t.sizeOrType]?.kind === KIND.FUNC_PROTO ? 'function pointer' : `${this.typeName(t.sizeOrType, depth + 1)} *`;
      case KIND.ARRAY:
        return `${this.typeName(t.array?.elemType ?? 0, depth + 1)} [${t.array?.nelems ?? 0}]`;
      case KIND.CONST:
        return `const ${this.typeName(t.sizeOrType, depth + 1)}`;
      case KIND.VOLATILE:
        return `volatile ${this.typeName(t.sizeOrType, depth + 1)}`;
      case KIND.RESTRICT:
      case KIND.TYPE_TAG:
        return this.typeName(t.sizeOrType, depth + 1);
      default:
        return t.name || 'anonymous';
    }
  }

  /** The struct/union (or typedef of one) by name, with its byte size. */
  struct(name: string): { id: number; name: string; kind: 'struct' | 'union'; size: number } | undefined {
    let id = this.byName.get(`struct ${name}`);
    if (id === undefined) {
      const td = this.byName.get(`typedef ${name}`);
      if (td !== undefined) {
        let r = td;
        for (let i = 0; i < 32 && QUALIFIER_KINDS.has(this.types[r]?.kind ?? 0); i++) r = this.types[r].sizeOrType;
        if (this.types[r]?.members) id = r;
      }
    }
    if (id === undefined) return undefined;
    const t = this.types[id];
    return { id, name: t.name, kind: t.kind === KIND.UNION ? 'union' : 'struct', size: t.sizeOrType };
  }

  /** A member of a struct by name, looking into anonymous nested structs/unions as C does. */
  field(structName: string, field: string): FieldFacts | undefined {
    const s = this.struct(structName);
    if (!s) return undefined;
    const find = (id: number, base: number, depth: number): FieldFacts | undefined => {
      const t = this.resolve(id);
      for (const m of t?.members ?? []) {
        if (m.name === field) {
          return {
            owner: `${s.kind} ${s.name}`,
            name: m.name,
            type: this.typeName(m.typeId),
            offset: Math.floor((base + m.bitOffset) / 8),
            size: m.bitSize ? 0 : this.sizeOf(m.typeId),
            bitSize: m.bitSize,
            bitOffset: (base + m.bitOffset) % 8,
          };
        }
        if (!m.name && depth < 8) {
          const inner = find(m.typeId, base + m.bitOffset, depth + 1);
          if (inner) return inner;
        }
      }
      return undefined;
    };
    return find(s.id, 0, 0);
  }

  /** Names of every kernel function BTF describes (fentry/fexit targets). */
  functions(): Set<string> {
    if (!this.functionNames) {
      this.functionNames = new Set();
      for (const t of this.types) if (t.kind === KIND.FUNC && t.name) this.functionNames.add(t.name);
    }
    return this.functionNames;
  }

  /** Raw tracepoint names: the kernel declares a "btf_trace_<name>" typedef for each. */
  rawTracepoints(): Set<string> {
    const out = new Set<string>();
    for (const t of this.types) if (t.kind === KIND.TYPEDEF && t.name.startsWith('btf_trace_')) out.add(t.name.slice('btf_trace_'.length));
    return out;
  }
}

export const KERNEL_BTF_PATH = '/sys/kernel/btf/vmlinux';

/** The running kernel's BTF, or undefined with the reason (no BTF in this kernel, unreadable). */
export function loadKernelBtf(file = KERNEL_BTF_PATH): { btf?: KernelBtf; problem?: string } {
  try {
    return { btf: new KernelBtf(fs.readFileSync(file)) };
  } catch (e) {
    return { problem: `cannot read the kernel's BTF at ${file}: ${(e as Error).message} (a kernel built with CONFIG_DEBUG_INFO_BTF=y has it)` };
  }
}

const KIND_NAMES = ['UNKN', 'INT', 'PTR', 'ARRAY', 'STRUCT', 'UNION', 'ENUM', 'FWD', 'TYPEDEF', 'VOLATILE', 'CONST', 'RESTRICT', 'FUNC', 'FUNC_PROTO', 'VAR', 'DATASEC', 'FLOAT', 'DECL_TAG', 'TYPE_TAG', 'ENUM64'];

/**
 * Every type of a standalone raw BTF blob (a program's BTF, as the kernel returns it by id) in the
 * shape `bpftool -j btf dump` prints, so btfDecode's Btf decodes map keys and values with it
 * without running bpftool.
 */
export function rawBtfTypes(buf: Buffer): BtfType[] {
  if (buf.length < 24 || buf.readUInt16LE(0) !== MAGIC) throw new Error('not a BTF blob (bad magic)');
  const hdrLen = buf.readUInt32LE(4);
  const typeOff = buf.readUInt32LE(8);
  const typeLen = buf.readUInt32LE(12);
  const strOff = buf.readUInt32LE(16);
  const strLen = buf.readUInt32LE(20);
  const strBase = hdrLen + strOff;
  const str = (off: number) => {
    if (off >= strLen) return '';
    const end = buf.indexOf(0, strBase + off);
    return buf.toString('latin1', strBase + off, end < 0 ? strBase + strLen : end);
  };
  const named = (off: number) => str(off) || '(anon)';
  const out: BtfType[] = [];
  let p = hdrLen + typeOff;
  const end = p + typeLen;
  for (let id = 1; p + 12 <= end; id++) {
    const name = named(buf.readUInt32LE(p));
    const info = buf.readUInt32LE(p + 4);
    const sizeOrType = buf.readUInt32LE(p + 8);
    p += 12;
    const vlen = info & 0xffff;
    const kind = (info >>> 24) & 0x1f;
    const kindFlag = info >>> 31 === 1;
    const t: BtfType = { id, kind: KIND_NAMES[kind] ?? `KIND${kind}`, name };
    switch (kind) {
      case KIND.INT: {
        const v = buf.readUInt32LE(p);
        p += 4;
        const enc = (v >>> 24) & 0xf;
        t.size = sizeOrType;
        t.encoding = enc & 1 ? 'SIGNED' : enc & 2 ? 'CHAR' : enc & 4 ? 'BOOL' : '(none)';
        t.nr_bits = v & 0xff;
        break;
      }
      case KIND.ARRAY:
        t.type_id = buf.readUInt32LE(p);
        t.nr_elems = buf.readUInt32LE(p + 8);
        p += 12;
        break;
      case KIND.STRUCT:
      case KIND.UNION:
        t.size = sizeOrType;
        t.members = [];
        for (let i = 0; i < vlen; i++, p += 12) {
          const off = buf.readUInt32LE(p + 8);
          const m: BtfType['members'] extends (infer M)[] | undefined ? M : never = { name: named(buf.readUInt32LE(p)), type_id: buf.readUInt32LE(p + 4), bits_offset: kindFlag ? off & 0xffffff : off };
          if (kindFlag && off >>> 24) m.bitfield_size = off >>> 24;
          t.members.push(m);
        }
        break;
      case KIND.ENUM:
        t.size = sizeOrType;
        t.encoding = kindFlag ? 'SIGNED' : 'UNSIGNED';
        t.values = [];
        for (let i = 0; i < vlen; i++, p += 8) t.values.push({ name: str(buf.readUInt32LE(p)), val: kindFlag ? buf.readInt32LE(p + 4) : buf.readUInt32LE(p + 4) });
        break;
      case KIND.ENUM64:
        t.size = sizeOrType;
        t.values = [];
        for (let i = 0; i < vlen; i++, p += 12) t.values.push({ name: str(buf.readUInt32LE(p)), val: buf.readUInt32LE(p + 4) + buf.readUInt32LE(p + 8) * 2 ** 32 });
        break;
      case KIND.FUNC_PROTO:
        t.type_id = sizeOrType;
        p += 8 * vlen;
        break;
      case KIND.VAR:
      case KIND.DECL_TAG:
        t.type_id = sizeOrType;
        p += 4;
        break;
      case KIND.DATASEC:
        t.size = sizeOrType;
        t.vars = [];
        for (let i = 0; i < vlen; i++, p += 12) t.vars.push({ type_id: buf.readUInt32LE(p), offset: buf.readUInt32LE(p + 4), size: buf.readUInt32LE(p + 8) });
        break;
      case KIND.FLOAT:
        t.size = sizeOrType;
        break;
      default:
        // PTR, FWD, TYPEDEF, qualifiers, FUNC, TYPE_TAG reference another type.
        t.type_id = sizeOrType;
        break;
    }
    out.push(t);
  }
  return out;
}
