// Facts read from a .bpf.c source by pattern, not by a C parser: BTF-defined maps with the
// eunomia-style "/// @sample {...}" annotation above them, and the struct each ring buffer
// carries (from bpf_ringbuf_reserve/output calls). Enough for the run view's presentation;
// the object's BTF stays the authority on layouts.

export interface SampleAnnotation {
  /** milliseconds between snapshots */
  interval?: number;
  /** e.g. "log2_hist", "linear_hist" */
  type?: string;
  /** clear the map after each sample */
  clear?: boolean;
  [key: string]: unknown;
}

export interface MapDecl {
  name: string;
  /** BPF_MAP_TYPE_* as written, e.g. "BPF_MAP_TYPE_HASH" */
  mapType?: string;
  keyType?: string;
  valueType?: string;
  /** 1-based line of "} name SEC(".maps")" */
  line: number;
  sample?: SampleAnnotation;
  /** problem with the annotation, if it did not parse */
  sampleError?: string;
}

function lineAt(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

export function mapDeclarations(text: string): MapDecl[] {
  const out: MapDecl[] = [];
  const re = /struct\s*\{([^{}]*)\}\s*(\w+)\s+SEC\(\s*"\.maps"\s*\)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const body = m[1];
    const decl: MapDecl = {
      name: m[2],
      mapType: /__uint\(\s*type\s*,\s*(\w+)\s*\)/.exec(body)?.[1],
      keyType: /__type\(\s*key\s*,\s*([^)]+?)\s*\)/.exec(body)?.[1],
      valueType: /__type\(\s*value\s*,\s*([^)]+?)\s*\)/.exec(body)?.[1],
      line: lineAt(text, m.index + m[0].lastIndexOf('}')),
    };
    // Comment lines directly above "struct {" (blank lines allowed) may carry the annotation.
    const before = text.slice(0, m.index).split('\n');
    before.pop();
    for (let i = before.length - 1; i >= 0; i--) {
      const l = before[i].trim();
      if (l === '') continue;
      if (!l.startsWith('//') && !l.startsWith('/*') && !l.startsWith('*')) break;
      const a = /^\/\/\/\s*@sample\s+(.*)$/.exec(l);
      if (a) {
        try {
          const v = JSON.parse(a[1]) as unknown;
          if (v && typeof v === 'object' && !Array.isArray(v)) decl.sample = v as SampleAnnotation;
          else decl.sampleError = '@sample takes a JSON object, e.g. {"interval": 1000, "type": "log2_hist"}';
        } catch (e) {
          decl.sampleError = `@sample is not valid JSON (${(e as Error).message}); write e.g. {"interval": 1000, "type": "log2_hist"}`;
        }
        break;
      }
    }
    out.push(decl);
  }
  return out;
}

/** ring buffer map name → struct name of the records it carries, as far as the source shows. */
export function ringbufRecordTypes(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const pointerDecl = (v: string) => new RegExp(`struct\\s+(\\w+)\\s*\\*\\s*${v}\\b`).exec(text)?.[1];
  const valueDecl = (v: string) => new RegExp(`struct\\s+(\\w+)\\s+${v}\\b`).exec(text)?.[1];
  const reserve = /bpf_ringbuf_reserve\(\s*&(\w+)\s*,\s*sizeof\(\s*(?:struct\s+(\w+)|\*\s*(\w+)|(\w+))\s*\)/g;
  for (let m = reserve.exec(text); m; m = reserve.exec(text)) {
    const st = m[2] ?? (m[3] ? pointerDecl(m[3]) : undefined) ?? (m[4] ? valueDecl(m[4]) : undefined);
    if (st && !out.has(m[1])) out.set(m[1], st);
  }
  const output = /bpf_ringbuf_output\(\s*&(\w+)\s*,\s*&?(\w+)\s*,\s*sizeof\(\s*(?:struct\s+(\w+)|\*\s*(\w+)|(\w+))\s*\)/g;
  for (let m = output.exec(text); m; m = output.exec(text)) {
    const st = m[3] ?? (m[4] ? pointerDecl(m[4]) : undefined) ?? (m[5] ? valueDecl(m[5]) ?? pointerDecl(m[5]) : undefined) ?? valueDecl(m[2]) ?? pointerDecl(m[2]);
    if (st && !out.has(m[1])) out.set(m[1], st);
  }
  return out;
}
