// Pure half of the Java agent path (no I/O): parses what native/jvmagent/agent.c writes, decodes
// the BPF join records of bpf/profile.h (struct profile_java_sample; this file mirrors it), and
// joins both into profile stacks: kernel → native frames from BPF, Java frames from the agent.
import { isJavaKind, type FrameKind, type JavaFrameType, type ProfileFrame } from '../../protocol/frames';
import type { ProfileStack, ThreadState } from '../../protocol/profile';

/** struct profile_java_sample: 24 bytes. */
export const JAVA_SAMPLE_SIZE = 24;

export interface BpfJavaSample {
  /** host tid (the pid namespace the helper sees) */
  tid: number;
  /**
   * the tid in the thread's own pid namespace, which is what the agent's gettid() records in a
   * container; equal to tid outside one; 0 or absent = unknown (join on tid)
   */
  nsTid?: number;
  userStackId: number;
  kernStackId: number;
  ktimeNs: bigint;
}

export function decodeJavaSample(b: Buffer): BpfJavaSample {
  if (b.length < JAVA_SAMPLE_SIZE) throw new Error(`java sample record of ${b.length} bytes, expected ${JAVA_SAMPLE_SIZE}`);
  return { tid: b.readUInt32LE(0), nsTid: b.readUInt32LE(12), userStackId: b.readInt32LE(4), kernStackId: b.readInt32LE(8), ktimeNs: b.readBigUInt64LE(16) };
}

export interface JavaMethod {
  className: string;
  method: string;
  /** source file name as the class file names it ("Foo.java"), or null */
  sourceFile: string | null;
  native: boolean;
}

export interface JavaFrameRef {
  method: number;
  /** bytecode index; -3 = native method (AGCT's encoding), -1 unknown */
  bci: number;
  /** source line, -1 unknown */
  line: number;
}

export interface AgentRecord {
  tid: number;
  tsNs: bigint;
  /** > 0 frame count; <= 0 an AsyncGetCallTrace code (or NOT_JAVA_THREAD) */
  code: number;
  /** leaf first */
  frames: JavaFrameRef[];
  /** the interrupted instruction (ucontext), when the agent could read it */
  pc?: bigint;
  /**
   * set when AsyncGetCallTrace failed on the signal's context and a retry from a corrected
   * context walked it (native/jvmagent/agent.c walk_recovery): 1 return address at the stack
   * pointer, 2 above a pushed frame pointer, 3 up the frame-pointer chain, 4 the nearest return
   * address found above the stack pointer. The frames then start at a caller of the code the PC was in.
   */
  recovered?: number;
}

/** One `L` line: an nmethod (compiled code) the JVM installed, replayed at start or loaded during the profile. */
export interface CodeLoad {
  tsNs: bigint;
  method: number;
  addr: bigint;
  size: number;
  /** the nmethod's distinct inline chains (two frames or more), innermost first: method index and BCI */
  chains: { method: number; bci: number }[][];
}

/** The agent's view of the code cache during the profile (L, U and D lines). */
export interface CodeEvents {
  loads: CodeLoad[];
  /** nmethods freed (CompiledMethodUnload) */
  unloads: { tsNs: bigint; method: number; addr: bigint }[];
  /** other generated code (DynamicCodeGenerated): the interpreter, stubs, adapters */
  dynamic: { tsNs: bigint; addr: bigint; size: number; name: string }[];
}

/** The agent's own code: the signalled thread is not attached to the JVM (GC, VM, launcher threads). */
export const NOT_JAVA_THREAD = -100;

/**
 * AsyncGetCallTrace's failure codes (HotSpot prims/forte.cpp, JDK 8–21), as frame labels. They are
 * kept as frames so a sample the agent could not walk is visible in the flame graph, never
 * silently dropped.
 */
export const AGCT_CODES: Record<number, string> = {
  0: 'no Java frames',
  [-1]: 'class not loaded yet',
  [-2]: 'GC active',
  [-3]: 'not in Java code (unknown state)',
  [-4]: 'not in Java code, stack not walkable',
  [-5]: 'in Java code, unknown frame',
  [-6]: 'in Java code, stack not walkable',
  [-7]: 'unknown thread state',
  [-8]: 'thread exiting',
  [-9]: 'deoptimizing',
  [-10]: 'at a safepoint',
};

export function agctLabel(code: number): string {
  return `[Java stack not walked: ${AGCT_CODES[code] ?? `AsyncGetCallTrace code ${code}`}]`;
}

export interface AgentLog {
  methods: Map<number, JavaMethod>;
  records: AgentRecord[];
  /** agent pid inside its namespace, from the A line */
  agentPid?: number;
  /** E line seen: the agent flushed everything and closed the file */
  ended: boolean;
  /** samples the agent's ring had no room for */
  dropped: number;
  signals: number;
  /** wall time the JVM's threads spent in the agent's signal handler (E record; 0 from older agents) */
  handlerNs: number;
  /** the latest T line: no record stamped before it is still to come (undefined before the first) */
  watermarkNs?: bigint;
  code: CodeEvents;
}

export function emptyAgentLog(): AgentLog {
  return { methods: new Map(), records: [], ended: false, dropped: 0, signals: 0, handlerNs: 0, code: { loads: [], unloads: [], dynamic: [] } };
}

const hex = (t: string | undefined) => BigInt(`0x${t && /^[0-9a-f]+$/i.test(t) ? t : '0'}`);

/** Parses complete lines of the agent's file into `log`; returns the unparsed tail (a partial line). */
export function parseAgentText(text: string, log: AgentLog): string {
  let start = 0;
  for (;;) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) break;
    const f = text.slice(start, nl).split('\t');
    start = nl + 1;
    switch (f[0]) {
      case 'A':
        log.agentPid = Number(f[1]);
        break;
      case 'M':
        log.methods.set(Number(f[1]), { className: f[2] ?? '?', method: f[3] ?? '?', sourceFile: f[4] && f[4] !== '-' ? f[4] : null, native: f[5] === '1' });
        break;
      case 'S': {
        const code = Number(f[3]);
        const frames: JavaFrameRef[] = [];
        let pc: bigint | undefined;
        let recovered: number | undefined;
        for (let i = 4; i < f.length; i++) {
          if (f[i].startsWith('@')) {
            pc = hex(f[i].slice(1));
            continue;
          }
          if (f[i].startsWith('~')) {
            recovered = Number(f[i].slice(1)) || undefined;
            continue;
          }
          const [m, bci, line] = f[i].split(':').map(Number);
          frames.push({ method: m, bci, line });
        }
        const rec: AgentRecord = { tid: Number(f[1]), tsNs: BigInt(f[2]), code, frames };
        if (pc) rec.pc = pc;
        if (recovered) rec.recovered = recovered;
        log.records.push(rec);
        break;
      }
      case 'T': {
        const t = BigInt(f[1] ?? '0');
        if (log.watermarkNs === undefined || t > log.watermarkNs) log.watermarkNs = t;
        break;
      }
      case 'L':
        log.code.loads.push({
          tsNs: BigInt(f[1]),
          method: Number(f[2]),
          addr: hex(f[3]),
          size: Number(f[4]) || 0,
          chains: f.slice(5).map((c) =>
            c.split(',').map((mb) => {
              const [m, bci] = mb.split(':').map(Number);
              return { method: m, bci };
            }),
          ),
        });
        break;
      case 'U':
        log.code.unloads.push({ tsNs: BigInt(f[1]), method: Number(f[2]), addr: hex(f[3]) });
        break;
      case 'D':
        log.code.dynamic.push({ tsNs: BigInt(f[1]), addr: hex(f[2]), size: Number(f[3]) || 0, name: f[4] ?? '?' });
        break;
      case 'E':
        log.ended = true;
        log.dropped = Number(f[1]) || 0;
        log.signals = Number(f[2]) || 0;
        log.handlerNs = Number(f[3]) || 0;
        break;
      default:
        break; // unknown record: a newer agent; skip
    }
  }
  return text.slice(start);
}

/** "com.x.Foo$Bar" + "Foo.java" → "com/x/Foo.java" (where the source sits under a source root). */
export function javaSourcePath(className: string, sourceFile: string | null): string | null {
  if (!sourceFile) return null;
  const dot = className.lastIndexOf('.');
  return dot < 0 ? sourceFile : `${className.slice(0, dot).replace(/\./g, '/')}/${sourceFile}`;
}

export function javaFrame(ref: JavaFrameRef, methods: Map<number, JavaMethod>, kind: FrameKind, javaType?: JavaFrameType): ProfileFrame {
  const m = methods.get(ref.method);
  if (!m) return { address: '0x0', module: '[java]', function: '[unknown Java method]', file: null, line: null, kind };
  const f: ProfileFrame = {
    address: '0x0',
    module: '[java]',
    function: `${m.className}.${m.method}`,
    file: javaSourcePath(m.className, m.sourceFile),
    line: m.native || ref.line < 0 ? null : ref.line,
    kind: m.native ? 'native' : javaType ? (javaType === 'interpreted' ? 'interpreted' : 'jit') : kind,
  };
  if (javaType && !m.native) {
    f.javaType = javaType;
    // an inlined frame shares its caller's physical frame: the same meaning `inlined` has for
    // native code, so pprof keeps it as an extra line of its caller's location
    if (javaType === 'inlined') f.inlined = true;
  }
  return f;
}

/**
 * The pairing rule over complete data (the reference IncrementalPairer must match; the profiler
 * itself pairs incrementally). Pairs each BPF sample with the agent record its signal produced:
 * same tid (the sample's namespace tid when known: the agent's gettid() inside a container), the first record at
 * or after the sample's time and before that thread's next sample (the handler runs when the
 * thread returns to user mode, microseconds later; a record that never came leaves the sample
 * unpaired). Returns, per BPF sample index, the record or undefined.
 */
export function pairSamples(samples: BpfJavaSample[], records: AgentRecord[], maxDelayNs = 1_000_000_000n): (AgentRecord | undefined)[] {
  const out: (AgentRecord | undefined)[] = new Array(samples.length).fill(undefined);
  const byTid = new Map<number, { s: number[]; r: AgentRecord[] }>();
  samples.forEach((s, i) => {
    const tid = s.nsTid || s.tid;
    let g = byTid.get(tid);
    if (!g) byTid.set(tid, (g = { s: [], r: [] }));
    g.s.push(i);
  });
  for (const r of records) byTid.get(r.tid)?.r.push(r);
  for (const { s, r } of byTid.values()) {
    s.sort((a, b) => (samples[a].ktimeNs < samples[b].ktimeNs ? -1 : samples[a].ktimeNs > samples[b].ktimeNs ? 1 : 0));
    r.sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : 0));
    let j = 0;
    for (let k = 0; k < s.length; k++) {
      const t = samples[s[k]].ktimeNs;
      const next = k + 1 < s.length ? samples[s[k + 1]].ktimeNs : undefined;
      while (j < r.length && r[j].tsNs < t) j++;
      if (j < r.length && r[j].tsNs - t <= maxDelayNs && (next === undefined || r[j].tsNs < next)) out[s[k]] = r[j++];
    }
  }
  return out;
}

/** A BPF sample as the pairing sees it: its thread and time (bpf_ktime_get_ns, CLOCK_MONOTONIC). */
export interface TimedSample {
  tid: number;
  /** the tid in the thread's own pid namespace (what the agent's gettid() records in a container); 0 or absent = tid */
  nsTid?: number;
  ktimeNs: bigint;
}

/** Later than any timestamp: the watermark once every sample and record is in. */
export const ALL_IN = 1n << 63n;

/**
 * pairSamples for data that arrives while sampling: BPF samples and agent records are added as
 * they come, and advance() decides only the samples whose pairing can no longer change, so each
 * sample is decided once and the decisions equal pairSamples over everything (test/unit checks
 * this on random arrival orders). A sample stays pending while its record may still come.
 *
 * What is known is given by two watermarks: every sample stamped before `samplesBefore` and every
 * record stamped before `recordsBefore` has been added. With both at ALL_IN (finish) every
 * sample is decided.
 */
export class IncrementalPairer<S extends TimedSample> {
  private readonly byTid = new Map<number, { s: S[]; r: AgentRecord[]; sSorted: boolean; rSorted: boolean }>();
  private pendingCount = 0;

  constructor(private readonly maxDelayNs = 1_000_000_000n) {}

  private group(tid: number) {
    let g = this.byTid.get(tid);
    if (!g) this.byTid.set(tid, (g = { s: [], r: [], sSorted: true, rSorted: true }));
    return g;
  }

  addSample(s: S): void {
    const g = this.group(s.nsTid || s.tid);
    if (g.s.length && g.s[g.s.length - 1].ktimeNs > s.ktimeNs) g.sSorted = false;
    g.s.push(s);
    this.pendingCount++;
  }

  addRecord(r: AgentRecord): void {
    const g = this.group(r.tid);
    if (g.r.length && g.r[g.r.length - 1].tsNs > r.tsNs) g.rSorted = false;
    g.r.push(r);
  }

  /** samples added but not decided yet */
  get pending(): number {
    return this.pendingCount;
  }

  /** Decides what the watermarks allow; returns the newly decided samples with their record (or undefined). */
  advance(samplesBefore: bigint, recordsBefore: bigint): { sample: S; record: AgentRecord | undefined }[] {
    const out: { sample: S; record: AgentRecord | undefined }[] = [];
    const byTime = <T>(key: (x: T) => bigint) => (a: T, b: T) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
    for (const [tid, g] of this.byTid) {
      if (!g.sSorted) g.s.sort(byTime((x: S) => x.ktimeNs));
      if (!g.rSorted) g.r.sort(byTime((x: AgentRecord) => x.tsNs));
      g.sSorted = g.rSorted = true;
      let k = 0; // samples decided in this group
      let j = 0; // records passed (skipped or consumed)
      while (k < g.s.length) {
        const t = g.s[k].ktimeNs;
        if (t >= samplesBefore) break; // an earlier sample of this thread may still come
        while (j < g.r.length && g.r[j].tsNs < t) j++;
        const r = j < g.r.length ? g.r[j] : undefined;
        const next = k + 1 < g.s.length ? g.s[k + 1].ktimeNs : undefined;
        let decided: 'pair' | 'none' | undefined;
        if (r && r.tsNs < recordsBefore) {
          // r is surely the first record at or after t
          if (r.tsNs - t > this.maxDelayNs) decided = 'none';
          else if (next !== undefined && r.tsNs >= next) decided = 'none';
          else if (r.tsNs < samplesBefore) decided = 'pair'; // no unseen sample of this thread before r
        } else if (recordsBefore > t + this.maxDelayNs) decided = 'none';
        else if (next !== undefined && recordsBefore >= next) decided = 'none'; // no record before the next sample
        if (!decided) break;
        out.push({ sample: g.s[k], record: decided === 'pair' ? g.r[j++] : undefined });
        k++;
      }
      // A thread with nothing pending: records stamped before samplesBefore can pair with no
      // sample still to come (those are stamped later), so they go.
      if (k === g.s.length) while (j < g.r.length && g.r[j].tsNs < samplesBefore) j++;
      if (k) g.s.splice(0, k);
      if (j) g.r.splice(0, j);
      this.pendingCount -= k;
      if (!g.s.length && !g.r.length) this.byTid.delete(tid);
    }
    return out;
  }
}

const isJavaCode = (f: ProfileFrame) => isJavaKind(f.kind);

/**
 * One joined stack, leaf first. `bpfFrames` is the BPF stack (kernel frames, then user frames
 * leaf first). The user frames are kept up to the first one in Java code or in no mapped file
 * (JIT code without frame pointers: beyond it the frame-pointer walk is guesswork), and the
 * agent's Java frames take over from there. Without a usable record, the BPF stack stays whole
 * and a label frame at its root says why the Java part is missing.
 */
export function joinStack(bpfFrames: ProfileFrame[], record: AgentRecord | undefined, methods: Map<number, JavaMethod>, types?: (JavaFrameType | undefined)[]): ProfileFrame[] {
  const label = (text: string): ProfileFrame => ({ address: '0x0', module: '[java]', function: text, file: null, line: null, kind: 'native' });
  if (!record) return [...bpfFrames, label('[Java stack not walked: no agent record for this sample]')];
  if (record.code === NOT_JAVA_THREAD || record.code === 0) return bpfFrames; // a thread with no Java frames: its native stack is the whole story
  if (record.code < 0) return [...bpfFrames, label(agctLabel(record.code))];
  const kept: ProfileFrame[] = [];
  let leafKind: FrameKind = 'jit';
  for (const f of bpfFrames) {
    if (f.kind === 'kernel') {
      kept.push(f);
      continue;
    }
    if (isJavaCode(f)) {
      leafKind = f.kind;
      break;
    }
    if (!f.module) break;
    kept.push(f);
  }
  // AGCT gives no frame type (only BCI and method id): `types` comes from the code cache
  // (./javaFrameTypes.ts). Where it is unknown, the leaf keeps the kind the BPF stack gives its
  // address, and callers count as Java code ('jit') without a type.
  const java = record.frames.map((ref, i) => javaFrame(ref, methods, i === 0 ? leafKind : 'jit', types?.[i]));
  return [...kept, ...java];
}

/**
 * Folds joined stacks (one sample each, or `count`) into counted stacks (same pid/tid/comm,
 * state and frames); `value` (a weight, e.g. off-CPU µs) adds up too, and defaults to the count.
 */
export function foldStacks(items: { pid: number; tid: number; comm: string; frames: ProfileFrame[]; count?: number; value?: number; state?: ThreadState }[]): ProfileStack[] {
  const map = new Map<string, ProfileStack>();
  for (const it of items) {
    const key = `${it.pid}\0${it.tid}\0${it.comm}\0${it.state ?? ''}\0${it.frames.map((f) => `${f.address}|${f.function}|${f.file}|${f.line}|${f.kind}|${f.javaType ?? ''}`).join('\0')}`;
    const s = map.get(key);
    const count = it.count ?? 1;
    if (s) {
      s.count += count;
      if (s.value !== undefined) s.value += it.value ?? count;
    } else map.set(key, { count, ...(it.value !== undefined ? { value: it.value } : {}), pid: it.pid, tid: it.tid, comm: it.comm, ...(it.state ? { state: it.state } : {}), frames: it.frames });
  }
  return [...map.values()].sort((a, b) => (b.value ?? b.count) - (a.value ?? a.count));
}
