// Struct layouts from a bpftool-generated vmlinux.h ("format c" of the running kernel's BTF),
// for completing field names inside BPF_CORE_READ(...). The header is ~3 MB and 9000 structs:
// we index where each "struct X {" starts in one pass and parse a body only when asked.
// Anonymous nested structs/unions are flattened, as C lets their members be named directly.

export interface StructMember {
  name: string;
  /** C type as written, e.g. "struct task_struct *", "pid_t", "char [16]" */
  type: string;
  /** the struct/union the member is or points to, for walking chains */
  structName?: string;
  pointer: boolean;
}

export interface StructDef {
  name: string;
  kind: 'struct' | 'union';
  members: StructMember[];
}

function parseDeclarator(decl: string): StructMember | undefined {
  let s = decl.replace(/\s+/g, ' ').trim();
  if (!s || /^(long|int|char|short)\s*:\s*\d+$/.test(s) || /^:/.test(s)) return undefined; // padding
  s = s.replace(/\s*:\s*\d+$/, ''); // bitfield width
  const fn = /\(\s*\*\s*(\w+)\s*\)\s*\(/.exec(s);
  if (fn) return { name: fn[1], type: s.replace(fn[0], '(*)('), pointer: true };
  const m = /^(.*?)(\**)\s*(\w+)\s*((?:\[[^\]]*\])*)$/.exec(s);
  if (!m) return undefined;
  const [, base, stars, name, dims] = m;
  const baseType = base.trim();
  const structName = /^(?:const\s+|volatile\s+)*(?:struct|union)\s+(\w+)$/.exec(baseType)?.[1];
  return { name, type: `${baseType}${stars ? ' ' + stars : ''}${dims ? ' ' + dims : ''}`.trim(), structName, pointer: stars.length > 0 };
}

/** Splits a brace body into top-level declarations; nested anonymous aggregates are flattened. */
function parseBody(body: string): StructMember[] {
  const out: StructMember[] = [];
  let depth = 0;
  let start = 0;
  let nestedStart = -1;
  let nestedBody = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '{') {
      if (depth === 0) nestedStart = i;
      depth++;
    } else if (ch === '}') {
      depth--;
      if (depth === 0) nestedBody = body.slice(nestedStart + 1, i);
    } else if (ch === ';' && depth === 0) {
      const decl = body.slice(start, i).trim();
      start = i + 1;
      if (nestedBody) {
        const after = decl.slice(decl.lastIndexOf('}') + 1).trim();
        const kind = /^\s*(struct|union)/.exec(decl)?.[1] ?? 'struct';
        if (!after) out.push(...parseBody(nestedBody));
        else out.push({ name: after.replace(/[\s*]|\[.*\]/g, ''), type: `${kind} {...}`, pointer: after.includes('*') });
        nestedBody = '';
        continue;
      }
      const m = parseDeclarator(decl);
      if (m) out.push(m);
    }
  }
  return out;
}

export class KernelStructs {
  private readonly index = new Map<string, number>();
  private readonly parsed = new Map<string, StructDef>();
  private readonly typedefs = new Map<string, string>();

  constructor(private readonly text: string) {
    const re = /^(struct|union) (\w+) \{$/gm;
    for (let m = re.exec(text); m; m = re.exec(text)) if (!this.index.has(m[2])) this.index.set(m[2], m.index);
    const td = /^typedef (?:struct|union) (\w+) (\w+);$/gm;
    for (let m = td.exec(text); m; m = td.exec(text)) this.typedefs.set(m[2], m[1]);
  }

  get size(): number {
    return this.index.size;
  }

  names(): IterableIterator<string> {
    return this.index.keys();
  }

  /** The struct or union by name (typedef names resolve to their struct). */
  get(name: string): StructDef | undefined {
    const real = this.index.has(name) ? name : this.typedefs.get(name);
    if (!real) return undefined;
    const cached = this.parsed.get(real);
    if (cached) return cached;
    const start = this.index.get(real)!;
    const open = this.text.indexOf('{', start);
    const close = this.text.indexOf('\n};', open);
    if (open < 0 || close < 0) return undefined;
    const kind = this.text.startsWith('union', start) ? 'union' : 'struct';
    const def: StructDef = { name: real, kind, members: parseBody(this.text.slice(open + 1, close + 1)) };
    this.parsed.set(real, def);
    return def;
  }

  member(structName: string, field: string): StructMember | undefined {
    return this.get(structName)?.members.find((m) => m.name === field);
  }

  /** Follows a.b.c from a struct; returns the struct the last member leads to. */
  walk(structName: string, fields: string[]): StructDef | undefined {
    let cur = this.get(structName);
    for (const f of fields) {
      if (!cur) return undefined;
      const m = cur.members.find((x) => x.name === f);
      if (!m?.structName) return undefined;
      cur = this.get(m.structName);
    }
    return cur;
  }
}
