// Export and import of flame profiles: folded stacks ("root;...;leaf count", the input of
// flamegraph.pl and inferno) and speedscope's JSON file format. Frame kinds travel as the
// annotation suffixes async-profiler writes with its `ann` option, a superset of flamegraph.pl's:
// _[k] kernel, _[j] JIT-compiled Java (C2, or tier unknown), _[1] C1-compiled, _[i] inlined,
// _[0] interpreted; native frames carry none. An exported file so opens back with its colors.
// (Before frame types existed, _[i] marked HotSpot's "Interpreter" perf-map frame; such files
// still read that frame as interpreted.) Pure functions, no DOM.
import type { ProfileResult } from '../../protocol/profile';
import { FrameTable, fromProfileResult, type FlameProfile, type FlameStack, type FrameKind, type JavaFrameType } from './profileData';
import { ImportError, parseJson, ReadBudget } from '../readLimits';

export { ImportError };

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

/** Counts and weights past 2^53 lose their units: a file that has them is not a profile we can add up. */
function checkWeight(w: unknown, where: string): number {
  if (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > Number.MAX_SAFE_INTEGER) throw new ImportError(`${where}: the weight ${String(w).slice(0, 40)} is not a count from 0 to 2^53`);
  return w;
}

/** The frames of one folded line (before its count): its depth is checked before it is split. */
function foldedFrames(stack: string, frameId: (f: string) => number, budget: ReadBudget): number[] {
  const max = budget.limits.maxStackDepth;
  let depth = 1;
  for (let at = stack.indexOf(';'); at >= 0; at = stack.indexOf(';', at + 1)) if (++depth > max) budget.depth(depth);
  // split and map make arrays of the exact length (a pushed-to array keeps spare room: 150 bytes for one frame)
  return stack.split(';').map(frameId);
}

export function fromFolded(text: string, name = 'folded', budget = new ReadBudget(name)): FlameProfile {
  const table = new FrameTable(budget);
  const seen = new Map<string, number>();
  const frameId = (f: string) => {
    let id = seen.get(f);
    if (id === undefined) {
      const a = parseAnnotation(f);
      seen.set(f, (id = table.intern(a.name, a.kind, undefined, undefined, undefined, 0, a.javaType)));
    }
    return id;
  };
  const stacks: FlameStack[] = [];
  let total = 0;
  let lineNo = 0;
  for (let at = 0; at <= text.length; ) {
    const nl = text.indexOf('\n', at);
    const line = (nl < 0 ? text.slice(at) : text.slice(at, nl)).trimEnd();
    at = nl < 0 ? text.length + 1 : nl + 1;
    lineNo++;
    if (!line.trim() || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    const weight = Number(line.slice(sp + 1));
    if (sp <= 0 || !Number.isFinite(weight) || weight < 0) {
      throw new ImportError(`line ${lineNo} is not folded stacks ("frame;frame;... COUNT"): ${JSON.stringify(line.slice(0, 80))}`);
    }
    checkWeight(weight, `line ${lineNo}`);
    const frames = foldedFrames(line.slice(0, sp), frameId, budget);
    budget.stack(frames.length);
    stacks.push({ frames, weight });
    total += weight;
  }
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
    if (!f || typeof f !== 'object' || typeof f.name !== 'string') throw new ImportError('a speedscope frame has no name');
    const a = parseAnnotation(f.name);
    const source = typeof f.file === 'string' ? f.file : undefined;
    const line = typeof f.line === 'number' && Number.isFinite(f.line) ? f.line : undefined;
    return (w: number) => table.intern(a.name, a.kind, undefined, source, line, w, a.javaType);
  });
}

type FrameOf = (i: unknown, w: number) => number;

function sampledStacks(prof: SampledProfile, frameOf: FrameOf, budget: ReadBudget): FlameStack[] {
  if (!Array.isArray(prof.samples)) throw new ImportError('a sampled speedscope profile needs a "samples" array');
  const weights: unknown[] = Array.isArray(prof.weights) ? prof.weights : [];
  return prof.samples.map((s, i) => {
    if (!Array.isArray(s)) throw new ImportError(`sample ${i} of the speedscope profile is not an array of frame indices`);
    budget.stack(s.length);
    const w = checkWeight(weights[i] ?? 1, `sample ${i}`);
    return { frames: s.map((f) => frameOf(f, w)), weight: w };
  });
}

/** One distinct open stack of an evented profile: its innermost frame, and its frame ids once needed. */
interface OpenNode {
  parent?: OpenNode;
  frame: unknown;
  depth: number;
  children: Map<unknown, OpenNode>;
  frames?: number[];
}

/** The frame ids of an open stack, root first, built once per distinct stack (ancestors first). */
function nodeFrames(node: OpenNode, frameOf: FrameOf): number[] {
  const unbuilt: OpenNode[] = [];
  for (let n: OpenNode | undefined = node; n && !n.frames; n = n.parent) unbuilt.push(n);
  for (let i = unbuilt.length - 1; i >= 0; i--) {
    const n = unbuilt[i];
    n.frames = n.parent?.frames ? [...n.parent.frames, frameOf(n.frame, 0)] : n.parent ? [frameOf(n.frame, 0)] : [];
  }
  return node.frames!;
}

/**
 * Time between consecutive events belongs to the stack open at that moment. Open stacks are
 * nodes of a tree, so a stack that comes back (a call repeated on top of a deep stack) is built
 * once and its frame array shared; the source-line weight of a frame is what was emitted while it
 * was open (a difference of running totals, not a walk of the stack per event). What is left is
 * the frames of the distinct stacks, which the budget bounds: a ramp of N opens makes N stacks of
 * up to N frames, N²/2, and is refused by name.
 */
function eventedStacks(prof: EventedProfile, frameOf: FrameOf, budget: ReadBudget): FlameStack[] {
  if (!Array.isArray(prof.events)) throw new ImportError('an evented speedscope profile needs an "events" array');
  const stacks: FlameStack[] = [];
  const root: OpenNode = { frame: undefined, depth: 0, children: new Map(), frames: [] };
  const open: { node: OpenNode; since: number }[] = [];
  let node = root;
  let emitted = 0;
  const close = (o: { node: OpenNode; since: number }) => {
    if (emitted > o.since) frameOf(o.node.frame, emitted - o.since);
  };
  let last = typeof prof.startValue === 'number' ? prof.startValue : 0;
  for (const e of prof.events) {
    if (!e || typeof e !== 'object' || typeof e.at !== 'number' || !Number.isFinite(e.at)) throw new ImportError('a speedscope event has no time ("at")');
    const w = e.at - last;
    if (w > 0 && node !== root) {
      budget.stack(node.depth);
      if (!node.frames) budget.work(node.depth);
      stacks.push({ frames: nodeFrames(node, frameOf), weight: w });
      emitted += w;
    }
    last = e.at;
    if (e.type === 'O') {
      if (typeof e.frame !== 'number' || !Number.isInteger(e.frame)) throw new ImportError(`the event at ${e.at} opens no frame index`);
      budget.depth(node.depth + 1);
      let child = node.children.get(e.frame);
      if (!child) node.children.set(e.frame, (child = { parent: node, frame: e.frame, depth: node.depth + 1, children: new Map() }));
      open.push({ node: child, since: emitted });
      node = child;
    } else if (e.type === 'C') {
      const o = open.pop();
      if (!o || o.node.frame !== e.frame) throw new ImportError(`event at ${e.at} closes frame ${String(e.frame).slice(0, 40)}, which is not the innermost open frame`);
      close(o);
      node = node.parent ?? root;
    } else throw new ImportError(`a speedscope event has type ${String(JSON.stringify(e.type)).slice(0, 40)}, not "O" or "C"`);
  }
  for (const o of open) close(o);
  return stacks;
}

export function fromSpeedscope(json: unknown, fallbackName = 'speedscope', budget = new ReadBudget(fallbackName)): FlameProfile {
  const file = json as SpeedscopeFile;
  if (!file || typeof file !== 'object' || !file.shared || !Array.isArray(file.shared.frames) || !Array.isArray(file.profiles)) {
    throw new ImportError('not a speedscope file: expected "shared.frames" and "profiles" (see https://www.speedscope.app/file-format-schema.json)');
  }
  const index = file.activeProfileIndex ?? 0;
  const prof = (typeof index === 'number' ? file.profiles[index] : undefined) ?? file.profiles[0];
  if (!prof || typeof prof !== 'object') throw new ImportError('the speedscope file has no profiles');
  const table = new FrameTable(budget);
  const intern = speedscopeFrames(file, table);
  const frameOf: FrameOf = (i, w) => {
    const f = typeof i === 'number' ? intern[i] : undefined;
    if (!f) throw new ImportError(`a sample refers to frame ${String(i).slice(0, 40)}, but the file has ${intern.length} frames`);
    return f(w);
  };
  let stacks: FlameStack[];
  if (prof.type === 'sampled') stacks = sampledStacks(prof, frameOf, budget);
  else if (prof.type === 'evented') stacks = eventedStacks(prof, frameOf, budget);
  else throw new ImportError(`unsupported speedscope profile type ${String(JSON.stringify((prof as { type: unknown }).type)).slice(0, 40)}`);
  const total = stacks.reduce((t, x) => t + x.weight, 0);
  const name = [prof.name, file.name].find((n) => typeof n === 'string' && n) ?? fallbackName;
  return { name, frames: table.finish(), stacks, total };
}

/** Any file the view opens: speedscope JSON, the profiler's own --json result, or folded stacks. */
export function importProfile(text: string, name = 'profile', budget = new ReadBudget(name)): FlameProfile {
  const t = text.trimStart();
  if (t.startsWith('{')) {
    const json = parseJson(t, budget);
    if ((json as ProfileResult)?.tracer === 'profile' && Array.isArray((json as ProfileResult).stacks)) return fromProfileResult(checkResult(json, budget), { name, budget });
    return fromSpeedscope(json, name, budget);
  }
  return fromFolded(text, name, budget);
}

const FRAME_KINDS = new Set<string>(['kernel', 'native', 'jit', 'interpreted']);
const optional = (v: unknown, type: string) => v === undefined || v === null || typeof v === type;

/**
 * Our own --json result read back from a file: every field the views read is checked for its
 * type, and the stacks are counted against the budget.
 */
export function checkResult(json: unknown, budget: ReadBudget): ProfileResult {
  const r = json as ProfileResult;
  for (const [i, s] of r.stacks.entries()) {
    if (!s || typeof s !== 'object' || !Array.isArray(s.frames)) throw new ImportError(`stack ${i} of the profile has no "frames" array`);
    if (!optional(s.count, 'number') || !optional(s.value, 'number') || !optional(s.pid, 'number') || !optional(s.comm, 'string')) throw new ImportError(`stack ${i} of the profile has a field of the wrong type`);
    budget.stack(s.frames.length);
    for (const f of s.frames) {
      const ok = f && typeof f === 'object' && FRAME_KINDS.has(f.kind) && optional(f.function, 'string') && optional(f.module, 'string') && optional(f.file, 'string') && optional(f.line, 'number');
      if (!ok) throw new ImportError(`stack ${i} of the profile has a frame that is not {function, module, file, line, kind}`);
    }
  }
  if (!optional(r.frequency, 'number') || !optional(r.lost, 'number')) throw new ImportError('the profile\'s "frequency" or "lost" is not a number');
  return r;
}
