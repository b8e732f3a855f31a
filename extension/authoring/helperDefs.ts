// Parses libbpf's bpf_helper_defs.h (generated from the kernel's UAPI docs by bpf_doc.py) into
// helper signatures and documentation, for completion and hover. Each helper is a comment block
// followed by "static RET (*NAME)(ARGS) = (void *) ID;".

export interface HelperDef {
  name: string;
  id: number;
  returnType: string;
  params: string[];
  /** "long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags)" */
  signature: string;
  /** description as markdown */
  description: string;
  returns: string;
}

const DECL = /^static\s+(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)\s*=\s*\(void \*\)\s*(\d+)\s*;/;

function rstMarkdown(s: string): string {
  // The docs are reStructuredText-ish: **bold**, *emphasis*; tabs indent nested lists.
  return s.replace(/\t/g, '    ').replace(/\\ /g, '').replace(/\*\*(\S[^*]*?)\*\*/g, '`$1`');
}

function splitParams(args: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of args) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() && cur.trim() !== 'void') out.push(cur.trim());
  return out;
}

export function parseHelperDefs(text: string): HelperDef[] {
  const lines = text.split('\n');
  const out: HelperDef[] = [];
  let comment: string[] = [];
  let inComment = false;
  for (const line of lines) {
    if (line.startsWith('/*')) {
      inComment = true;
      comment = [];
      continue;
    }
    if (inComment) {
      if (line.startsWith(' */')) inComment = false;
      else comment.push(line.replace(/^ \* ?/, '').replace(/^ \*$/, ''));
      continue;
    }
    const m = DECL.exec(line);
    if (!m) continue;
    const [, ret, name, args, id] = m;
    // comment[0] is the helper's name; "Returns" splits description from return value.
    const body = comment[0]?.trim() === name ? comment.slice(1) : comment;
    const ri = body.findIndex((l) => l.trim() === 'Returns');
    const desc = (ri >= 0 ? body.slice(0, ri) : body).map((l) => l.replace(/^\t/, '')).join('\n').trim();
    const returns = ri >= 0 ? body.slice(ri + 1).map((l) => l.replace(/^\t/, '')).join('\n').trim() : '';
    const returnType = ret.trim();
    const params = splitParams(args);
    const sep = returnType.endsWith('*') ? '' : ' ';
    out.push({
      name,
      id: Number(id),
      returnType,
      params,
      signature: `${returnType}${sep}${name}(${params.length ? params.join(', ') : 'void'})`,
      description: rstMarkdown(desc),
      returns: rstMarkdown(returns),
    });
    comment = [];
  }
  return out;
}

export function helperMarkdown(h: HelperDef): string {
  return ['```c', h.signature, '```', '', h.description, ...(h.returns ? ['', '**Returns**', '', h.returns] : []), '', `_BPF helper #${h.id}_`].join('\n');
}
