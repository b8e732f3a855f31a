// The profiler's result as pprof's profile.proto (what `go tool pprof`, Pyroscope, Parca and
// Cloud Profiler read) and back. Locations are one address each, with the functions inlined
// there as extra lines (innermost first); mappings are per process and module, with the
// module's build-id; sample types are samples/count and cpu/nanoseconds with the period taken
// from the sampling frequency. Frame kinds travel in the mapping name ("[kernel.kallsyms]",
// "[jit]"), so an exported profile opens back with its colours; so do the Java agent's frame
// types ("[java:c2]", ...), and a Java frame inlined into its caller is an extra line of the
// caller's location, which is what pprof's inline lines mean. The protobuf encoding is
// DataDog's pprof-format (pure JS, no dependencies); gzip is the caller's (./profileFile.ts).
// Pure: no node modules.
import { Function as PFunction, Label, Line, Location, Mapping, Profile, Sample, StringTable, ValueType } from 'pprof-format';
import { JAVA_FRAME_TYPES, stackValue, type FrameKind, type JavaFrameType, type ProfileFrame, type ProfileResult, type ProfileStack, THREAD_STATES, type ThreadState } from '../protocol/profile';
import { perfMapKind } from '../protocol/frames';
import type { FlameProfile } from './flamegraph/profileData';
import { ReadBudget } from './readLimits';
import { PprofError, scanPprof } from './pprofScan';

export const KERNEL_MAPPING = '[kernel.kallsyms]';
/** Java frames from the agent: "[java]", or "[java:<type>]" when the frame type is known. */
export const JAVA_MODULE = '[java]';
const javaMappingType = (file: string): JavaFrameType | undefined => {
  const m = /^\[java:([a-z0-9]+)\]$/.exec(file);
  return m && (JAVA_FRAME_TYPES as string[]).includes(m[1]) ? (m[1] as JavaFrameType) : undefined;
};
const LOST_COMMENT = /(\d+) samples lost/;

export { PprofError };

type Numeric = number | bigint;
const big = (n: Numeric | undefined): bigint => (n === undefined ? 0n : BigInt(n));
const num = (n: Numeric | undefined): number => (n === undefined ? 0 : Number(n));

function addressOf(f: ProfileFrame): bigint {
  try {
    return BigInt(f.address);
  } catch {
    return 0n;
  }
}

/** Leaf first: groups a stack's frames into locations (inlined frames join the frame they were inlined into). */
function locationsOf(frames: ProfileFrame[]): ProfileFrame[][] {
  const out: ProfileFrame[][] = [];
  let cur: ProfileFrame[] = [];
  for (const f of frames) {
    cur.push(f);
    if (!f.inlined) {
      out.push(cur);
      cur = [];
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

export interface PprofOptions {
  /** when the profile was taken (ms since the epoch) */
  startMs?: number;
  durationMs?: number;
}

/** Encodes a profile as an uncompressed profile.proto message. */
export function toPprof(r: ProfileResult, opts: PprofOptions = {}): Uint8Array {
  return new PprofEncoder(r).encode(opts);
}

/** A mapping as the samples are encoded: its address range widens with each frame in it. */
interface MapAcc {
  id: number;
  file: string;
  buildId?: string;
  lo: bigint;
  hi: bigint;
  bias?: bigint;
  symbolized: boolean;
  lines: boolean;
  inline: boolean;
}

/** One profile being encoded: its string table and its mappings, functions and locations, each made once. */
class PprofEncoder {
  private readonly strings = new StringTable();
  private readonly periodNs: number;
  private readonly mappings = new Map<string, MapAcc>();
  private readonly functions = new Map<string, number>();
  private readonly functionRows: PFunction[] = [];
  private readonly locations = new Map<string, number>();
  private readonly locationRows: Location[] = [];

  constructor(private readonly r: ProfileResult) {
    this.periodNs = r.frequency > 0 ? Math.round(1e9 / r.frequency) : 0;
  }

  private s(x: string): number {
    return this.strings.dedup(x);
  }

  private mappingFor(pid: number, f: ProfileFrame): MapAcc | undefined {
    const { mappings } = this;
    const file = f.kind === 'kernel' ? KERNEL_MAPPING : f.module === JAVA_MODULE && f.javaType ? `[java:${f.javaType}]` : f.module;
    if (!file) return undefined;
    const addr = addressOf(f);
    const bias = f.offset !== undefined ? addr - BigInt(f.offset) : undefined;
    // The kernel is one mapping for every process; user mappings are per process and load bias.
    const key = f.kind === 'kernel' ? KERNEL_MAPPING : `${pid}\0${file}\0${bias ?? ''}`;
    let m = mappings.get(key);
    if (!m) {
      const buildId = this.r.buildIds?.[f.kind === 'kernel' ? '[kernel]' : file];
      mappings.set(key, (m = { id: mappings.size + 1, file, buildId, lo: addr, hi: addr, bias, symbolized: true, lines: true, inline: false }));
    }
    // Placeholder frames (a lost stack, an imported folded frame) have no address: they do not widen the range.
    if (addr !== 0n) {
      if (m.lo === 0n || addr < m.lo) m.lo = addr;
      if (addr > m.hi) m.hi = addr;
    }
    return m;
  }

  private functionId(name: string, file: string | null): number {
    const key = `${name}\0${file ?? ''}`;
    let id = this.functions.get(key);
    if (id === undefined) {
      id = this.functionRows.length + 1;
      this.functions.set(key, id);
      this.functionRows.push(new PFunction({ id, name: this.s(name), systemName: this.s(name), filename: file ? this.s(file) : 0 }));
    }
    return id;
  }

  private locationId(pid: number, group: ProfileFrame[]): number {
    const outer = group[group.length - 1];
    const m = this.mappingFor(pid, outer);
    const addr = addressOf(outer);
    const named = group.filter((f) => f.function !== null);
    const key = `${m?.id ?? 0}\0${addr}\0${group.map((f) => `${f.function}\0${f.file}\0${f.line}`).join('\0')}`;
    let id = this.locations.get(key);
    if (id !== undefined) return id;
    id = this.locationRows.length + 1;
    this.locations.set(key, id);
    if (m) {
      if (named.length < group.length) m.symbolized = false;
      if (named.some((f) => !f.file || !f.line)) m.lines = false;
      if (group.length > 1) m.inline = true;
    }
    this.locationRows.push(
      new Location({
        id,
        mappingId: m?.id ?? 0,
        address: addr,
        line: named.map((f) => new Line({ functionId: this.functionId(f.function!, f.file), line: f.line ?? 0 })),
      }),
    );
    return id;
  }

  private samples(timed: boolean): Sample[] {
    const pidKey = this.s('pid');
    const tidKey = this.s('tid');
    const commKey = this.s('comm');
    const stateKey = this.s('state');
    return this.r.stacks
      .filter((st) => st.count > 0)
      .map(
        (st) =>
          new Sample({
            locationId: locationsOf(st.frames).map((g) => this.locationId(st.pid, g)),
            value: [st.count, timed ? stackValue(st) : st.count * this.periodNs],
            label: [
              new Label({ key: pidKey, num: st.pid }),
              new Label({ key: tidKey, num: st.tid }),
              new Label({ key: commKey, str: this.s(st.comm) }),
              ...(st.state ? [new Label({ key: stateKey, str: this.s(st.state) })] : []),
            ],
          }),
      );
  }

  private mappingRows(): Mapping[] {
    return [...this.mappings.values()].map(
      (m) =>
        new Mapping({
          id: m.id,
          memoryStart: m.lo,
          memoryLimit: m.hi + 1n,
          // file offset of memoryStart: exact where the frames knew their offsets
          fileOffset: m.bias !== undefined ? m.lo - m.bias : 0,
          filename: this.s(m.file),
          buildId: m.buildId ? this.s(m.buildId) : 0,
          hasFunctions: m.symbolized,
          hasFilenames: m.symbolized && m.lines,
          hasLineNumbers: m.symbolized && m.lines,
          hasInlineFrames: m.inline,
        }),
    );
  }

  encode(opts: PprofOptions): Uint8Array {
    const { r, periodNs } = this;
    const s = (x: string) => this.s(x);
    // Time profiles (off-CPU, wall) carry their µs as the second value: off_cpu/microseconds or
    // wall/microseconds, the default sample type; the first stays the count of intervals or samples.
    const timed = r.unit === 'us';
    const samples = this.samples(timed);
    const mappingRows = this.mappingRows();
    const comment = [s(timed ? `ebpf-studio ${r.event ?? 'offcpu'} profile: ${r.samples} samples, ${r.lost} samples lost` : `ebpf-studio profile at ${r.frequency} Hz: ${r.samples} samples, ${r.lost} samples lost`)];
    const timeType = r.event === 'wall' ? 'wall' : r.event === 'lock' ? 'lock_wait' : r.event === 'vthread' ? 'vthread_wait' : 'off_cpu';
    const profile = new Profile({
      sampleType: timed
        ? [new ValueType({ type: s(r.event === 'wall' ? 'samples' : 'intervals'), unit: s('count') }), new ValueType({ type: s(timeType), unit: s('microseconds') })]
        : [new ValueType({ type: s('samples'), unit: s('count') }), new ValueType({ type: s('cpu'), unit: s('nanoseconds') })],
      ...(timed ? { defaultSampleType: s(timeType) } : {}),
      sample: samples,
      mapping: mappingRows,
      location: this.locationRows,
      function: this.functionRows,
      stringTable: this.strings,
      timeNanos: opts.startMs ? BigInt(Math.round(opts.startMs)) * 1000000n : 0,
      durationNanos: opts.durationMs ? BigInt(Math.round(opts.durationMs)) * 1000000n : 0,
      periodType: timed ? new ValueType({ type: s(timeType), unit: s('microseconds') }) : new ValueType({ type: s('cpu'), unit: s('nanoseconds') }),
      period: timed ? 1 : periodNs,
      comment,
    });
    return profile.encode();
  }
}

function kindOf(mappingFile: string, address: bigint, name: string | null): FrameKind {
  if (mappingFile.startsWith('[kernel') || mappingFile === '[vmlinux]') return 'kernel';
  if (mappingFile === '[interpreter]' || mappingFile === '[java:interpreted]') return 'interpreted';
  if (mappingFile === JAVA_MODULE || javaMappingType(mappingFile)) return 'jit';
  if (mappingFile === '[jit]' || mappingFile === '[perf-map]' || /^\/tmp\/perf-\d+\.map$/.test(mappingFile)) return name ? perfMapKind(name) : 'jit';
  if (!mappingFile && address >= 0xffff800000000000n) return 'kernel';
  return 'native';
}

/**
 * Decodes an uncompressed profile.proto message (ours or any tool's). The weight of a sample is
 * its samples/count value when the profile has one, else the default (or last) sample type,
 * divided by the period when that is CPU time.
 */
export function fromPprof(bytes: Uint8Array, budget = new ReadBudget('pprof')): ProfileResult {
  // What decoding would build is counted first: the decoder itself knows no limits.
  scanPprof(bytes, budget);
  let p: Profile;
  try {
    p = Profile.decode(bytes);
  } catch (e) {
    throw new PprofError(`not a pprof profile (profile.proto): ${(e as Error).message}`);
  }
  const str = (i: Numeric | undefined) => p.stringTable.strings[num(i)] ?? '';
  const types = p.sampleType.map((t) => ({ type: str(t.type), unit: str(t.unit) }));
  if (types.length === 0) throw new PprofError('the pprof profile has no sample types: it holds no samples we could show');
  const period = num(p.period);
  const periodType = p.periodType ? { type: str(p.periodType.type), unit: str(p.periodType.unit) } : undefined;
  // Time profiles (ours: off_cpu or wall in microseconds): the weight is the time, the count stays
  const ti = types.findIndex((t) => t.unit === 'microseconds');
  const timeType = ti >= 0 ? types[ti].type : undefined;
  let vi = types.findIndex((t) => (t.type === 'samples' || t.type === 'intervals') && t.unit === 'count');
  let divide = 1;
  if (vi < 0) {
    const def = str(p.defaultSampleType);
    vi = def ? types.findIndex((t) => t.type === def) : -1;
    if (vi < 0) vi = types.length - 1;
    if (types[vi].unit === 'nanoseconds' && periodType?.unit === 'nanoseconds' && period > 0) divide = period;
  }
  const mappings = new Map<string, { file: string; buildId: string }>();
  for (const m of p.mapping) mappings.set(String(m.id), { file: str(m.filename), buildId: str(m.buildId) });
  const functions = new Map<string, { name: string; file: string }>();
  for (const f of p.function) functions.set(String(f.id), { name: str(f.name) || str(f.systemName), file: str(f.filename) });
  const buildIds: Record<string, string> = {};
  const locations = new Map<string, ProfileFrame[]>();
  for (const l of p.location) {
    const m = mappings.get(String(l.mappingId));
    const file = m?.file ?? '';
    if (m?.buildId) buildIds[file === KERNEL_MAPPING ? '[kernel]' : file] = m.buildId;
    const address = `0x${big(l.address).toString(16)}`;
    const javaType = javaMappingType(file);
    const module = file === KERNEL_MAPPING ? '[kernel]' : javaType ? JAVA_MODULE : file || null;
    const lines = l.line.length ? l.line : [undefined];
    const frames = lines.map((ln, i): ProfileFrame => {
      const fn = ln ? functions.get(String(ln.functionId)) : undefined;
      const name = fn?.name || null;
      const inner = i < lines.length - 1;
      const frame: ProfileFrame = { address, module, function: name, file: fn?.file || null, line: ln && num(ln.line) > 0 ? num(ln.line) : null, kind: inner && javaType ? 'jit' : kindOf(file, big(l.address), name) };
      if (inner) frame.inlined = true;
      if (javaType) frame.javaType = inner ? 'inlined' : javaType;
      return frame;
    });
    locations.set(String(l.id), frames);
  }
  const stacks: ProfileStack[] = [];
  let samples = 0;
  const stackOf = sampleFrames(locations, budget);
  for (const sm of p.sample) {
    const count = Math.round(num(sm.value[vi]) / divide);
    const value = ti >= 0 ? num(sm.value[ti]) : count;
    if (count <= 0 && value <= 0) continue;
    const frames = stackOf(sm.locationId);
    let pid = 0;
    let tid = 0;
    let comm = '';
    let state: ThreadState | undefined;
    for (const lb of sm.label) {
      const key = str(lb.key);
      if (key === 'state' && (THREAD_STATES as string[]).includes(str(lb.str))) state = str(lb.str) as ThreadState;
      else if (key === 'pid') pid = num(lb.num);
      else if (key === 'tid' || key === 'thread_id') tid = num(lb.num);
      else if (key === 'comm' || key === 'thread_name') comm = str(lb.str);
    }
    stacks.push({ count, ...(ti >= 0 ? { value } : {}), pid, tid, comm, ...(state ? { state } : {}), frames });
    samples += count;
  }
  const lost = p.comment.map((c) => LOST_COMMENT.exec(str(c))).find(Boolean);
  const out: ProfileResult = {
    tracer: 'profile',
    frequency: periodType?.type === 'cpu' && periodType.unit === 'nanoseconds' && period > 0 ? Math.round(1e9 / period) : 0,
    samples,
    lost: lost ? Number(lost[1]) : 0,
    stacks,
  };
  if (ti >= 0) {
    out.unit = 'us';
    out.event = timeType === 'wall' ? 'wall' : timeType === 'lock_wait' ? 'lock' : timeType === 'vthread_wait' ? 'vthread' : 'offcpu';
  }
  if (Object.keys(buildIds).length) out.buildIds = buildIds;
  return out;
}

/**
 * A sample's frames from its location ids, within the budget. Samples with the same locations
 * (the same stack with other labels, e.g. another thread) share one array: frames are read, never
 * changed, after decoding.
 */
function sampleFrames(locations: Map<string, ProfileFrame[]>, budget: ReadBudget): (ids: Numeric[]) => ProfileFrame[] {
  const known = new Map<string, ProfileFrame[]>();
  return (ids) => {
    const key = ids.join(',');
    const shared = known.get(key);
    if (shared) {
      budget.stack(shared.length);
      return shared;
    }
    const frames: ProfileFrame[] = [];
    for (const id of ids) {
      const loc = locations.get(String(id));
      if (!loc) throw new PprofError(`a sample refers to location ${id}, which the profile does not define`);
      budget.depth(frames.length + loc.length);
      for (const f of loc) frames.push(f);
    }
    budget.stack(frames.length);
    known.set(key, frames);
    return frames;
  };
}

/**
 * A flame profile (imported folded stacks or speedscope) as a result document, so it can be
 * written as pprof too: frames keep name, kind and source line; addresses are unknown (0).
 */
export function resultFromFlame(p: FlameProfile): ProfileResult {
  const moduleOf = (f: FlameProfile['frames'][number]) => (f.kind === 'kernel' ? '[kernel]' : (f.module ?? (f.kind === 'jit' ? '[jit]' : f.kind === 'interpreted' ? '[interpreter]' : null)));
  const frames = p.frames.map((f): ProfileFrame => {
    const out: ProfileFrame = { address: '0x0', module: f.javaType ? (f.module ?? JAVA_MODULE) : moduleOf(f), function: f.name, file: f.file ?? null, line: f.line ?? null, kind: f.kind };
    if (f.javaType) out.javaType = f.javaType;
    if (f.javaType === 'inlined') out.inlined = true;
    return out;
  });
  return {
    tracer: 'profile',
    frequency: p.frequency ?? 0,
    samples: p.total,
    lost: p.lost ?? 0,
    stacks: p.stacks.filter((s) => s.weight > 0).map((s) => ({ count: s.weight, pid: 0, tid: 0, comm: '', frames: s.frames.map((i) => frames[i]).reverse() })),
  };
}
