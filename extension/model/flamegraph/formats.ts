// Export and import of flame profiles: folded stacks ("root;...;leaf count", the input of
// flamegraph.pl and inferno) and speedscope's JSON file format. Frame kinds travel as the
// annotation suffixes async-profiler writes with its `ann` option, a superset of flamegraph.pl's:
// _[k] kernel, _[j] JIT-compiled Java (C2, or tier unknown), _[1] C1-compiled, _[i] inlined,
// _[0] interpreted; native frames carry none. An exported file so opens back with its colors.
// (Before frame types existed, _[i] marked HotSpot's "Interpreter" perf-map frame; such files
// still read that frame as interpreted.) Pure functions, no DOM.
import type { ProfileResult } from '../../protocol/profile';
import { FrameTable, fromProfileResult, type FlameProfile, type FlameStack, type FrameKind, type JavaFrameType } from './profileData';

const SUFFIX: Record<FrameKind, string> = { kernel: '_[k]', jit: '_[j]', interpreted: '_[0]', native: '' };
const JAVA_SUFFIX: Record<JavaFrameType, string> = { interpreted: '_[0]', c1: '_[1]', c2: '_[j]', compiled: '_[j]', inlined: '_[i]' };

export function annotate(name: string, kind: FrameKind, javaType?: JavaFrameType): string {
  return name + (javaType && kind !== 'native' ? JAVA_SUFFIX[javaType] : SUFFIX[kind]);
}

export function parseAnnotation(text: string): { name: string; kind: FrameKind; javaType?: JavaFrameType } {
  const m = /^(.*)_\[([kji01])\]$/.exec(text);
  if (!m) return { name: text, kind: 'native' };
  const name = m[1];
  switch (m[2]) {
    case 'k':
      return { name, kind: 'kernel' };
    case 'j':
      return { name, kind: 'jit' };
    case '0':
      return { name, kind: 'interpreted' };
    case '1':
      return { name, kind: 'jit', javaType: 'c1' };
    default:
      return name === 'Interpreter' ? { name, kind: 'interpreted' } : { name, kind: 'jit', javaType: 'inlined' };
  }
}

/** Folded names cannot hold the separator or line breaks. */
function foldedName(name: string, kind: FrameKind, javaType?: JavaFrameType): string {
  return annotate(name.replace(/;/g, ',').replace(/[\r\n]+/g, ' '), kind, javaType);
}

export function toFolded(p: FlameProfile): string {
  const lines = new Map<string, number>();
  for (const s of p.stacks) {
    if (s.frames.length === 0 || s.weight <= 0) continue;
    const key = s.frames.map((i) => foldedName(p.frames[i].name, p.frames[i].kind, p.frames[i].javaType)).join(';');
    lines.set(key, (lines.get(key) ?? 0) + s.weight);
  }
  return [...lines].map(([k, w]) => `${k} ${w}\n`).join('');
}

export class ImportError extends Error {}

export function fromFolded(text: string, name = 'folded'): FlameProfile {
  const table = new FrameTable();
  const seen = new Map<string, number>();
  const stacks: FlameStack[] = [];
  let total = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (!line.trim() || line.startsWith('#')) return;
    const sp = line.lastIndexOf(' ');
    const weight = Number(line.slice(sp + 1));
    if (sp <= 0 || !Number.isFinite(weight) || weight < 0) {
      throw new ImportError(`line ${i + 1} is not folded stacks ("frame;frame;... COUNT"): ${JSON.stringify(line.slice(0, 80))}`);
    }
    const frames = line
      .slice(0, sp)
      .split(';')
      .map((f) => {
        let id = seen.get(f);
        if (id === undefined) {
          const a = parseAnnotation(f);
          seen.set(f, (id = table.intern(a.name, a.kind, undefined, undefined, undefined, 0, a.javaType)));
        }
        return id;
      });
    stacks.push({ frames, weight });
    total += weight;
  });
  if (stacks.length === 0) throw new ImportError('the file holds no stacks (expected lines like "main;work;leaf 12")');
  return { name, frames: table.finish(), stacks, total };
}

// ---- speedscope (https://www.speedscope.app/file-format-schema.json) ----------------------

interface SpeedscopeFrame {
  name: string;
  file?: string;
  line?: number;
  col?: number;
}
interface SampledProfile {
  type: 'sampled';
  name: string;
  unit: string;
  startValue: number;
  endValue: number;
  samples: number[][];
  weights: number[];
}
interface EventedProfile {
  type: 'evented';
  name: string;
  unit: string;
  startValue: number;
  endValue: number;
  events: { type: 'O' | 'C'; at: number; frame: number }[];
}
export interface SpeedscopeFile {
  $schema: string;
  shared: { frames: SpeedscopeFrame[] };
  profiles: (SampledProfile | EventedProfile)[];
  name?: string;
  activeProfileIndex?: number;
  exporter?: string;
}

export const SPEEDSCOPE_SCHEMA = 'https://www.speedscope.app/file-format-schema.json';

export function toSpeedscope(p: FlameProfile): SpeedscopeFile {
  const frames: SpeedscopeFrame[] = p.frames.map((f) => {
    const out: SpeedscopeFrame = { name: annotate(f.name, f.kind, f.javaType) };
    if (f.file) out.file = f.file;
    if (f.line) out.line = f.line;
    return out;
  });
  const live = p.stacks.filter((s) => s.weight > 0);
  return {
    $schema: SPEEDSCOPE_SCHEMA,
    shared: { frames },
    profiles: [{ type: 'sampled', name: p.name, unit: 'none', startValue: 0, endValue: p.total, samples: live.map((s) => s.frames), weights: live.map((s) => s.weight) }],
    name: p.name,
    activeProfileIndex: 0,
    exporter: 'ebpf-studio',
  };
}

function speedscopeFrames(file: SpeedscopeFile, table: FrameTable): ((weight: number) => number)[] {
  // Each speedscope frame becomes an interner call so the line weight follows the samples.
  return file.shared.frames.map((f) => {
    if (!f || typeof f.name !== 'string') throw new ImportError('a speedscope frame has no name');
    const a = parseAnnotation(f.name);
    return (w: number) => table.intern(a.name, a.kind, undefined, f.file, f.line, w, a.javaType);
  });
}

export function fromSpeedscope(json: unknown, fallbackName = 'speedscope'): FlameProfile {
  const file = json as SpeedscopeFile;
  if (!file || typeof file !== 'object' || !file.shared || !Array.isArray(file.shared.frames) || !Array.isArray(file.profiles)) {
    throw new ImportError('not a speedscope file: expected "shared.frames" and "profiles" (see https://www.speedscope.app/file-format-schema.json)');
  }
  const index = file.activeProfileIndex ?? 0;
  const prof = file.profiles[index] ?? file.profiles[0];
  if (!prof) throw new ImportError('the speedscope file has no profiles');
  const table = new FrameTable();
  const intern = speedscopeFrames(file, table);
  const frameOf = (i: number, w: number) => {
    const f = intern[i];
    if (!f) throw new ImportError(`a sample refers to frame ${i}, but the file has ${intern.length} frames`);
    return f(w);
  };
  const stacks: FlameStack[] = [];
  let total = 0;
  if (prof.type === 'sampled') {
    prof.samples.forEach((s, i) => {
      const w = prof.weights?.[i] ?? 1;
      stacks.push({ frames: s.map((f) => frameOf(f, w)), weight: w });
      total += w;
    });
  } else if (prof.type === 'evented') {
    // Time between consecutive events belongs to the stack open at that moment.
    const open: number[] = [];
    let last = prof.startValue;
    for (const e of prof.events) {
      const w = e.at - last;
      if (w > 0 && open.length) {
        stacks.push({ frames: open.map((f) => frameOf(f, w)), weight: w });
        total += w;
      }
      last = e.at;
      if (e.type === 'O') open.push(e.frame);
      else if (open.pop() !== e.frame) throw new ImportError(`event at ${e.at} closes frame ${e.frame}, which is not the innermost open frame`);
    }
  } else {
    throw new ImportError(`unsupported speedscope profile type ${JSON.stringify((prof as { type: unknown }).type)}`);
  }
  return { name: prof.name || file.name || fallbackName, frames: table.finish(), stacks, total };
}

/** Any file the view opens: speedscope JSON, the profiler's own --json result, or folded stacks. */
export function importProfile(text: string, name = 'profile'): FlameProfile {
  const t = text.trimStart();
  if (t.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch (e) {
      throw new ImportError(`the file looks like JSON but does not parse: ${(e as Error).message}`);
    }
    if ((json as ProfileResult).tracer === 'profile' && Array.isArray((json as ProfileResult).stacks)) return fromProfileResult(json as ProfileResult, { name });
    return fromSpeedscope(json, name);
  }
  return fromFolded(text, name);
}
