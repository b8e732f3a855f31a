// What the BPF language server says about a .bpf.c at a given offset: completions, hover and
// diagnostics. Pure (text and knowledge in, plain objects out) so it is unit-tested without a
// client; server.ts only converts offsets to LSP positions. It completes what needs the kernel
// (helpers with their docs, SEC() names and attach targets, map types/flags, kernel struct
// members after "->", "." and inside BPF_CORE_READ, with offsets from the kernel's BTF on hover)
// and diagnoses only what clang cannot see (sections, attach targets missing on this kernel).
import { checkAttachTarget, completeAttachTarget, type AttachTargets } from '../authoring/attachTargets';
import { helperMarkdown, type HelperDef } from '../authoring/helperDefs';
import type { KernelBtf } from '../authoring/kernelBtf';
import type { KernelStructs, StructDef } from '../authoring/kernelStructs';
import { checkSection, DATA_SECTIONS, SECTION_DEFS } from '../authoring/sections';
import { mapDeclarations } from '../authoring/sourceFacts';
import { MAP_FLAGS, UPDATE_FLAGS, type NamedConstant } from './mapTypes';

export interface Knowledge {
  helpers: Map<string, HelperDef>;
  mapTypes: NamedConstant[];
  /** loaded on first use (vmlinux.h is large) */
  structs(): KernelStructs | undefined;
  /** the running kernel's BTF, for member offsets and sizes on hover */
  btf?(): KernelBtf | undefined;
  /** what SEC() can attach to on this kernel */
  targets?(): AttachTargets | undefined;
}

export type ItemKind = 'function' | 'field' | 'enum' | 'constant' | 'module' | 'keyword' | 'variable';

export interface Item {
  label: string;
  kind: ItemKind;
  detail?: string;
  documentation?: string;
  insertText?: string;
  /** insertText is an LSP snippet */
  snippet?: boolean;
}

export interface Completion {
  items: Item[];
  /** more items exist than were sent: the client asks again as the user types */
  incomplete?: boolean;
  /** offset where the text the items replace starts (the cursor is the end) */
  replaceStart: number;
}

export interface Hover {
  markdown: string;
  start: number;
  end: number;
}

export interface Diagnostic {
  start: number;
  end: number;
  severity: 'error' | 'warning' | 'information';
  message: string;
  code: string;
}

const CORE_READ = /^(BPF_CORE_READ(?:_STR_INTO|_INTO|_USER|_USER_INTO|_USER_STR_INTO|_BITFIELD|_BITFIELD_PROBED)?|bpf_core_field_exists|bpf_core_field_size|bpf_core_field_offset)$/;

/** Strips comments and string contents (same length) so brace/paren scans are not fooled. */
export function blankCommentsAndStrings(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, (m) => {
    if (m.startsWith('"') || m.startsWith("'")) return m[0] + m.slice(1, -1).replace(/[^\n]/g, ' ') + m[m.length - 1];
    return m.replace(/[^\n]/g, ' ');
  });
}

interface CallContext {
  callee: string;
  args: string[];
  /** offset where the last (current) argument starts */
  argStart: number;
}

/** The innermost unclosed call around `offset`, with its arguments so far. */
export function enclosingCall(text: string, offset: number): CallContext | undefined {
  const clean = blankCommentsAndStrings(text.slice(0, offset));
  let depth = 0;
  for (let i = clean.length - 1; i >= 0; i--) {
    const ch = clean[i];
    if (ch === ')' || ch === ']') depth++;
    else if (ch === '(' || ch === '[') {
      if (depth > 0) {
        depth--;
        continue;
      }
      if (ch === '[') return undefined;
      const callee = /(\w+)\s*$/.exec(clean.slice(Math.max(0, i - 80), i))?.[1];
      if (!callee) return undefined;
      const inner = clean.slice(i + 1);
      const args: string[] = [];
      let d = 0;
      let start = 0;
      for (let j = 0; j < inner.length; j++) {
        const c = inner[j];
        if (c === '(' || c === '[') d++;
        else if (c === ')' || c === ']') d--;
        else if (c === ',' && d === 0) {
          args.push(text.slice(i + 1 + start, i + 1 + j));
          start = j + 1;
        }
      }
      args.push(text.slice(i + 1 + start, offset));
      return { callee, args, argStart: i + 1 + start };
    } else if (ch === ';' || ch === '{' || ch === '}') {
      if (depth === 0) return undefined;
    }
  }
  return undefined;
}

/** The struct a variable is declared as (pointer or value), searching backwards from `before`. */
export function declaredStruct(text: string, name: string, before: number): string | undefined {
  const re = new RegExp(`\\b(?:struct|union)\\s+(\\w+)\\s*\\*?\\s*(?:const\\s+)?\\b${name}\\b`, 'g');
  let found: string | undefined;
  const head = text.slice(0, before);
  for (let m = re.exec(head); m; m = re.exec(head)) found = m[1];
  if (found) return found;
  // typedef'd kernel names used bare, e.g. "task_struct_t *p" are rare; casts are common:
  const cast = new RegExp(`\\b${name}\\s*=\\s*\\(\\s*(?:struct|union)\\s+(\\w+)\\s*\\*\\s*\\)`, 'g');
  for (let m = cast.exec(head); m; m = cast.exec(head)) found = m[1];
  return found;
}

function fieldItems(k: Knowledge, text: string, offset: number, call: CallContext): Completion | undefined {
  const srcIndex = /_INTO$/.test(call.callee) ? 1 : 0;
  if (call.args.length <= srcIndex + 1) return undefined; // still typing the source pointer: clangd's job
  const structs = k.structs();
  if (!structs) return undefined;
  const src = call.args[srcIndex].trim().replace(/^\(.*\)\s*/, '').replace(/^&/, '');
  const srcName = /^(\w+)$/.exec(src)?.[1] ?? /(\w+)\s*$/.exec(src)?.[1];
  if (!srcName) return undefined;
  const root = declaredStruct(text, srcName, offset);
  if (!root) return undefined;
  const path = call.args
    .slice(srcIndex + 1, -1)
    .flatMap((a) => a.trim().split('.'))
    .filter(Boolean);
  const current = call.args[call.args.length - 1];
  const dots = current.trim().split('.');
  const partial = dots.pop() ?? '';
  const target = structs.walk(root, [...path, ...dots.filter(Boolean)]);
  if (!target) return undefined;
  return {
    replaceStart: offset - partial.length,
    items: target.members.map((m) => ({ label: m.name, kind: 'field' as const, detail: `${m.type} (${target.kind} ${target.name})` })),
  };
}

/** `task->real_parent->` before the cursor → the root variable, the member path and the partial word. */
export function memberAccess(text: string, offset: number): { root: string; path: string[]; partial: string } | undefined {
  const line = text.slice(text.lastIndexOf('\n', offset - 1) + 1, offset);
  const m = /([A-Za-z_]\w*)((?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*)\s*(?:->|\.)\s*(\w*)$/.exec(line);
  if (!m) return undefined;
  const path = m[2].split(/->|\./).map((x) => x.trim()).filter(Boolean);
  return { root: m[1], path, partial: m[3] };
}

/** The kernel struct the member access before the cursor lands in, e.g. task_struct for `task->real_parent->`. */
function memberTarget(k: Knowledge, text: string, offset: number): { def: StructDef; partial: string; structs: KernelStructs } | undefined {
  const acc = memberAccess(text, offset);
  if (!acc) return undefined;
  const structs = k.structs();
  if (!structs) return undefined;
  const root = declaredStruct(text, acc.root, offset - acc.partial.length);
  if (!root) return undefined;
  const def = structs.walk(root, acc.path);
  return def ? { def, partial: acc.partial, structs } : undefined;
}

function fieldDoc(k: Knowledge, owner: string, field: string): string | undefined {
  const f = k.btf?.()?.field(owner, field);
  if (!f) return undefined;
  const where = f.bitSize ? `bits ${f.offset * 8 + f.bitOffset}..${f.offset * 8 + f.bitOffset + f.bitSize - 1} (a ${f.bitSize}-bit bitfield)` : `offset ${f.offset}, size ${f.size}`;
  const core = f.bitSize
    ? 'CO-RE: read it with BPF_CORE_READ_BITFIELD_PROBED (its bit position relocates).'
    : 'CO-RE: relocatable (vmlinux.h marks kernel structs with preserve_access_index, so the offset is fixed up at load time on other kernels).';
  return `\`${f.type} ${f.name}\` in \`${f.owner}\`: ${where} on this kernel.\n\n${core}`;
}

function memberItems(k: Knowledge, text: string, offset: number): Completion | undefined {
  const t = memberTarget(k, text, offset);
  if (!t) return undefined;
  return {
    replaceStart: offset - t.partial.length,
    items: t.def.members.map((m) => ({ label: m.name, kind: 'field' as const, detail: `${m.type} (${t.def.kind} ${t.def.name})`, documentation: fieldDoc(k, t.def.name, m.name) })),
  };
}

function sectionItems(partialStart: number): Completion {
  const items: Item[] = [
    ...SECTION_DEFS.map((s) => ({
      label: s.extras ? `${s.name}/` : s.name,
      kind: 'module' as const,
      detail: s.extras ? `${s.name}/${s.suffix}` : s.name,
      documentation: `${s.doc}${s.autoAttach ? '\n\nlibbpf attaches it automatically from the section name.' : ''}`,
    })),
    ...DATA_SECTIONS.map((s) => ({ label: s.name, kind: 'module' as const, detail: 'data section', documentation: s.doc })),
  ];
  return { items, replaceStart: partialStart };
}

function constantItems(list: NamedConstant[], kind: ItemKind): Item[] {
  return list.map((c) => ({ label: c.name, kind, documentation: c.doc }));
}

/** Absolute binary paths the file already names in usdt sections, offered again after "usdt/". */
function usdtBinariesIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\bSEC\(\s*"usdt(?:\.s)?\/(\/[^":\n]+):/g)].map((m) => m[1]))];
}

export function complete(text: string, offset: number, k: Knowledge): Completion | undefined {
  const line = text.slice(text.lastIndexOf('\n', offset - 1) + 1, offset);
  const sec = /\bSEC\(\s*"([^"]*)$/.exec(line);
  if (sec) {
    const targets = sec[1].includes('/') ? k.targets?.() : undefined;
    const t = targets ? completeAttachTarget(sec[1], targets, usdtBinariesIn(text)) : undefined;
    if (t) {
      const start = offset - sec[1].length;
      const kind: ItemKind = sec[1].startsWith('tp') || sec[1].startsWith('tracepoint') || sec[1].startsWith('raw_') ? 'module' : 'function';
      return { replaceStart: start + t.replaceFrom, incomplete: t.incomplete, items: t.items.map((i) => ({ label: i.label, kind: i.category ? 'module' : kind, detail: i.detail ?? `${sec[1].slice(0, sec[1].indexOf('/'))} target on ${targets!.release}` })) };
    }
    return sectionItems(offset - sec[1].length);
  }
  const word = /(\w*)$/.exec(line)![1];
  const replaceStart = offset - word.length;
  const call = enclosingCall(text, offset);
  if (call && CORE_READ.test(call.callee)) return fieldItems(k, text, offset, call);
  const members = memberItems(k, text, offset);
  if (members) return members;
  if (call?.callee === '__uint') {
    const key = call.args[0]?.trim();
    if (call.args.length === 2 && key === 'type') return { replaceStart, items: constantItems(k.mapTypes, 'enum') };
    if (call.args.length === 2 && key === 'map_flags') return { replaceStart, items: constantItems(MAP_FLAGS, 'constant') };
    if (call.args.length === 1) {
      const fields = ['type', 'max_entries', 'map_flags', 'key_size', 'value_size', 'numa_node', 'map_extra', 'pinning'];
      return { replaceStart, items: fields.map((f) => ({ label: f, kind: 'field' as const, documentation: `map attribute ${f}` })) };
    }
  }
  if (call?.callee === '__type' && call.args.length === 1) {
    return { replaceStart, items: ['key', 'value'].map((f) => ({ label: f, kind: 'field' as const, documentation: `map ${f} type` })) };
  }
  if (!word) return undefined;
  const items: Item[] = [];
  if ('bpf_'.startsWith(word.slice(0, 4)) || word.startsWith('bpf')) {
    for (const h of k.helpers.values()) {
      if (!h.name.startsWith(word)) continue;
      const params = h.params.map((p, i) => `\${${i + 1}:${/(\w+)\s*(\[\])?$/.exec(p)?.[1] ?? `arg${i}`}}`);
      items.push({ label: h.name, kind: 'function', detail: h.signature, documentation: helperMarkdown(h), insertText: `${h.name}(${params.join(', ')})`, snippet: true });
    }
  }
  if (word.startsWith('BPF_')) {
    items.push(...constantItems(k.mapTypes, 'enum').filter((i) => i.label.startsWith(word)));
    items.push(...constantItems([...MAP_FLAGS, ...UPDATE_FLAGS], 'constant').filter((i) => i.label.startsWith(word)));
  }
  return items.length ? { replaceStart, items } : undefined;
}

function wordAt(text: string, offset: number): { word: string; start: number; end: number } | undefined {
  let s = offset;
  let e = offset;
  while (s > 0 && /\w/.test(text[s - 1])) s--;
  while (e < text.length && /\w/.test(text[e])) e++;
  return s === e ? undefined : { word: text.slice(s, e), start: s, end: e };
}

export function hover(text: string, offset: number, k: Knowledge): Hover | undefined {
  // Inside SEC("...")? Explain the section.
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const lineEnd = text.indexOf('\n', offset);
  const lineText = text.slice(lineStart, lineEnd < 0 ? text.length : lineEnd);
  for (const m of lineText.matchAll(/\bSEC\(\s*"([^"]*)"\s*\)/g)) {
    const s = lineStart + m.index! + m[0].indexOf('"') + 1;
    const e = s + m[1].length;
    if (offset >= s && offset <= e) {
      const c = checkSection(m[1]);
      const data = DATA_SECTIONS.find((d) => d.name === m[1] || (d.prefix && m[1].startsWith(d.name + '.')));
      const md = c.ok
        ? c.def
          ? `**SEC("${m[1]}")**: ${c.def.doc}${c.def.extras ? `\n\nForm: \`${c.def.name}/${c.def.suffix}\`` : ''}${c.def.autoAttach ? '\n\nlibbpf attaches it automatically from the section name.' : ''}`
          : `**SEC("${m[1]}")**: ${data?.doc ?? 'data section'}`
        : c.message;
      return { markdown: md, start: s, end: e };
    }
  }
  const w = wordAt(text, offset);
  if (!w) return undefined;
  const h = k.helpers.get(w.word);
  if (h) return { markdown: helperMarkdown(h), start: w.start, end: w.end };
  const c = [...k.mapTypes, ...MAP_FLAGS, ...UPDATE_FLAGS].find((x) => x.name === w.word);
  if (c) return { markdown: `**${c.name}**\n\n${c.doc}`, start: w.start, end: w.end };
  // A field name inside BPF_CORE_READ or after -> / .: its kernel type, offset and size.
  const call = enclosingCall(text, w.end);
  if (call && CORE_READ.test(call.callee)) {
    const fc = fieldItems(k, text, w.end, call);
    const item = fc?.items.find((i) => i.label === w.word);
    const owner = item?.detail ? /\((?:struct|union) (\w+)\)$/.exec(item.detail)?.[1] : undefined;
    if (item) return { markdown: `\`\`\`c\n${item.detail}\n\`\`\`${owner ? `\n\n${fieldDoc(k, owner, w.word) ?? ''}` : ''}`, start: w.start, end: w.end };
  }
  const member = memberTarget(k, text, w.end);
  const m = member?.def.members.find((x) => x.name === w.word);
  if (member && m) {
    return { markdown: `\`\`\`c\n${m.type} ${m.name}; /* ${member.def.kind} ${member.def.name} */\n\`\`\`\n\n${fieldDoc(k, member.def.name, m.name) ?? ''}`, start: w.start, end: w.end };
  }
  // A kernel type name: struct task_struct, or a typedef of one.
  if (/\b(?:struct|union)\s+$/.test(text.slice(Math.max(0, w.start - 16), w.start))) {
    const def = k.structs()?.get(w.word);
    const b = k.btf?.()?.struct(w.word);
    if (def || b) {
      const size = b ? `, ${b.size} bytes on this kernel` : '';
      const n = def ? `${def.members.length} members` : '';
      return { markdown: `**${b?.kind ?? def?.kind} ${w.word}**: kernel type (${[n, size.slice(2)].filter(Boolean).join(', ')}).\n\nCO-RE: member offsets are relocated at load time, so the program runs on other kernels with BTF.`, start: w.start, end: w.end };
    }
  }
  return undefined;
}

export function diagnose(text: string, k?: Pick<Knowledge, 'targets'>): Diagnostic[] {
  const targets = k?.targets?.();
  const out: Diagnostic[] = [];
  const clean = blankCommentsAndStrings(text);
  // Only real SEC() uses: the scan runs on comment-free text, the strings are read from the original.
  const re = /\bSEC\(\s*"/g;
  for (let m = re.exec(clean); m; m = re.exec(clean)) {
    const s = m.index + m[0].length;
    const e = text.indexOf('"', s);
    if (e < 0 || text.slice(s, e).includes('\n')) continue;
    const name = text.slice(s, e);
    const c = checkSection(name);
    if (!c.ok) out.push({ start: s, end: e, severity: 'error', message: c.message, code: 'unknown-section' });
    const missing = c.ok && targets ? checkAttachTarget(name, targets) : undefined;
    if (missing) out.push({ start: s, end: e, severity: 'warning', message: missing, code: 'missing-attach-target' });
  }
  for (const decl of mapDeclarations(text)) {
    if (!decl.sampleError) continue;
    const at = text.lastIndexOf('@sample', text.indexOf(`} ${decl.name}`));
    if (at >= 0) out.push({ start: at, end: text.indexOf('\n', at), severity: 'warning', message: decl.sampleError, code: 'bad-sample-annotation' });
  }
  return out;
}
