// Java frame types for the agent path: which Java frames of a sample ran in the
// interpreter, in C1- or C2-compiled code, or were inlined into their caller's compiled code.
// Pure (no I/O): input is the agent's code-cache log (native/jvmagent/agent.c, the L/U/D lines)
// and the JVM's `Compiler.codelist`; output is one type per AsyncGetCallTrace frame.
//
// AsyncGetCallTrace (JDK 17, 25) reports a method and a BCI per frame and nothing about the code
// that ran it. What we do know:
//   - every nmethod that existed during the profile: its code range, its method, its lifetime
//     (CompiledMethodLoad/Unload, the existing ones replayed at start), and its inline tree: for
//     every PC with debug info, the chain of (method, BCI) scopes there (JVMTI_CMLR_INLINE_INFO);
//   - where the interpreter's code sits (DynamicCodeGenerated "Interpreter");
//   - the PC the leaf was interrupted at (the signal's ucontext).
//
// Observed: the leaf's physical frame. Its PC lies in an nmethod (then the AGCT frames from the
// leaf up to that nmethod's method, with a matching inline chain, are that one compiled frame:
// the inner ones inlined) or in the interpreter (then the leaf was interpreted).
// Inferred, for the callers above it (no PC for them; AGCT does not expose one): a run of frames
// f[i..k] is one compiled frame when f[k]'s method had an nmethod live at the sample time whose
// inline records hold exactly that chain (methods, and the call-site BCIs, which are exact for
// callers); the longest such run wins. A frame no run covers is interpreted when its method had
// no live nmethod (bytecode without compiled code can only run in the interpreter), and unknown
// otherwise. The inference is wrong when an activation started in the interpreter before its
// method got compiled and is still running there (a long loop not yet moved by OSR, or code that
// was deoptimized: its nmethod is made not entrant but stays "live" until it is freed), and when
// HotSpot posts a CompiledMethodLoad after the code already ran (it defers most of them to its
// ServiceThread). Those cases show as compiled/interpreted on a few samples at a compile boundary.
//
// C1 or C2: JVMTI gives no compile level. Two sound sources exist: HotSpot's own diagnostic
// command `Compiler.codelist` (each live nmethod's compile id, level, state and code range), or
// reading nmethod::_comp_level out of the JVM's memory through the gHotSpotVMStructs offset tables
// (what async-profiler's own stack walker does). We use Compiler.codelist: it is a documented,
// supported command we already speak through the attach socket (extension/sys/jvm/attach.ts), it needs
// no knowledge of HotSpot's struct layouts (which change between releases), and it runs in the
// helper at the start (for the live view) and at the end of the profile, not in the target's
// signal path. Its limit: an nmethod compiled and freed between the two is listed by neither, so
// its frames are 'compiled' (tier unknown). Live, code compiled since the start shows 'compiled'
// until the end's codelist names its tier.
//
// Live profiles classify each sample when it is joined, with the code cache read so far (the
// agent writes a sample's code events before the sample; a load HotSpot posts late may still be
// missing then, and that sample's leaf is inferred like a caller).
// Levels 1-3 are C1 (tiered: without, with limited, with full profiling), 4 is C2 (or the JVMCI
// compiler where one is configured), 0 a native wrapper or method-handle intrinsic.
import type { AgentRecord, CodeEvents, JavaFrameRef, JavaMethod } from './decode';
import type { JavaFrameType } from '../../protocol/profile';

export type { JavaFrameType };

export interface CodelistEntry {
  compileId: number;
  level: number;
  /** HotSpot's nmethod state number (0 = in use; JDK 17: 2 = not entrant; JDK 21+: 1 = not entrant) */
  state: number;
  /** "pkg.Class.method(signature)" */
  name: string;
  codeBegin: bigint;
  codeEnd: bigint;
}

/** Parses `jcmd PID Compiler.codelist`: "<id> <level> <state> <name(sig)> [<header>, <code begin> - <code end>]". */
export function parseCodelist(text: string): CodelistEntry[] {
  const out: CodelistEntry[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+(-?\d+)\s+(\d+)\s+(\S.*?)\s+\[0x([0-9a-f]+),\s*0x([0-9a-f]+)\s*-\s*0x([0-9a-f]+)\]\s*$/i.exec(line);
    if (!m) continue;
    out.push({ compileId: Number(m[1]), level: Number(m[2]), state: Number(m[3]), name: m[4], codeBegin: BigInt(`0x${m[6]}`), codeEnd: BigInt(`0x${m[7]}`) });
  }
  return out;
}

export function levelType(level: number | undefined): JavaFrameType {
  if (level === undefined || level <= 0) return 'compiled';
  return level >= 4 ? 'c2' : 'c1';
}

export interface NMethod {
  /** index in CodeCache.nmethods */
  id: number;
  method: number;
  addr: bigint;
  end: bigint;
  loadNs: bigint;
  unloadNs?: bigint;
  /** chains with every BCI ("m:b,m:b"), and with the innermost BCI left out ("m:*,m:b") */
  exact: Set<string>;
  anyInnerBci: Set<string>;
  level?: number;
}

const chainKey = (frames: { method: number; bci: number }[], innerBci: boolean) => frames.map((f, i) => `${f.method}:${i === 0 && !innerBci ? '*' : f.bci}`).join(',');

/**
 * The code cache over the profile, fed as the agent's file is read: nmethods with their
 * lifetimes (a load reported twice, by the replay and by a compile racing it, is kept once), the
 * interpreter's ranges, and compile levels from codelists matched by code address and method
 * name. A level is looked up when a type is asked for, so a codelist taken at the end of the
 * profile still gives the tier of frames classified while it ran.
 */
export class CodeCache {
  readonly nmethods: NMethod[] = [];
  readonly byMethod = new Map<number, NMethod[]>();
  readonly interpreter: { addr: bigint; end: bigint }[] = [];
  /** the longest inline chain seen: no run of frames longer than this can be one nmethod */
  maxChain = 1;
  private readonly byAddr = new Map<bigint, NMethod[]>();
  private codelist: CodelistEntry[] = [];

  constructor(private readonly methods: Map<number, JavaMethod>) {}

  /** Takes the events parsed so far and empties the arrays (the file is read in pieces). */
  take(code: CodeEvents): void {
    for (const l of code.loads.sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : 0))) {
      const same = this.byAddr.get(l.addr)?.find((n) => n.unloadNs === undefined && n.method === l.method);
      if (same) continue;
      const n: NMethod = { id: this.nmethods.length, method: l.method, addr: l.addr, end: l.addr + BigInt(Math.max(1, l.size)), loadNs: l.tsNs, exact: new Set(), anyInnerBci: new Set() };
      for (const c of l.chains) {
        if (c.length < 2) continue;
        n.exact.add(chainKey(c, true));
        n.anyInnerBci.add(chainKey(c, false));
        this.maxChain = Math.max(this.maxChain, c.length);
      }
      this.nmethods.push(n);
      this.byAddr.set(l.addr, [...(this.byAddr.get(l.addr) ?? []), n]);
      this.byMethod.set(n.method, [...(this.byMethod.get(n.method) ?? []), n]);
    }
    for (const u of code.unloads) {
      // the freed one: same address, loaded before, not yet freed
      const n = (this.byAddr.get(u.addr) ?? []).filter((x) => x.unloadNs === undefined && x.loadNs <= u.tsNs).at(-1);
      if (n) n.unloadNs = u.tsNs;
    }
    for (const d of code.dynamic) if (d.name === 'Interpreter') this.interpreter.push({ addr: d.addr, end: d.addr + BigInt(d.size) });
    code.loads.length = 0;
    code.unloads.length = 0;
    code.dynamic.length = 0;
  }

  addCodelist(entries: CodelistEntry[]): void {
    this.codelist.push(...entries);
    for (const n of this.nmethods) n.level = undefined; // looked up again
  }

  /** The nmethod's compile level from a codelist that lists its code under its method's name. */
  levelOf(n: NMethod): number | undefined {
    if (n.level !== undefined) return n.level;
    const m = this.methods.get(n.method);
    if (!m) return undefined;
    // the method name guards against an address reused after a free we did not hear of
    const e = this.codelist.filter((x) => n.addr >= x.codeBegin && n.addr < x.codeEnd && x.name.startsWith(`${m.className}.${m.method}(`)).at(-1);
    n.level = e?.level;
    return n.level;
  }
}

/** A cache from complete events (tests, and one-shot use). */
export function buildCodeCache(code: CodeEvents, methods: Map<number, JavaMethod>, codelist: CodelistEntry[] = []): CodeCache {
  const cc = new CodeCache(methods);
  cc.take({ loads: [...code.loads], unloads: [...code.unloads], dynamic: [...code.dynamic] });
  cc.addCodelist(codelist);
  return cc;
}

const liveAt = (n: NMethod, ts: bigint) => n.loadNs <= ts && (n.unloadNs === undefined || ts < n.unloadNs);

/**
 * The nmethod whose code holds `pc` at `ts`. A range whose load event came after the sample
 * still counts when nothing else covers the PC: the code was running, so it was installed (the
 * event was late, see the header).
 */
function nmethodAt(cc: CodeCache, pc: bigint, ts: bigint): NMethod | undefined {
  const covering = cc.nmethods.filter((n) => pc >= n.addr && pc < n.end && (n.unloadNs === undefined || ts < n.unloadNs));
  return covering.filter((n) => n.loadNs <= ts).at(-1) ?? covering.find((n) => n.loadNs > ts);
}

/** Whether frames f[i..k] (leaf first) form one physical frame of `n`. */
function runMatches(n: NMethod, f: JavaFrameRef[], i: number, k: number): boolean {
  if (f[k].method !== n.method) return false;
  if (k === i) return true;
  const run = f.slice(i, k + 1).map((r) => ({ method: r.method, bci: r.bci }));
  // A caller's BCI is its call site, recorded exactly; the leaf's BCI comes from whichever PC
  // record AGCT chose near the interrupted PC, so only its method is compared.
  return i === 0 ? n.anyInnerBci.has(chainKey(run, false)) : n.exact.has(chainKey(run, true));
}

/** A frame's class: interpreted, inlined, the nmethod it ran in (its tier is resolved later), or unknown. */
export type FrameClass = 'interpreted' | 'inlined' | NMethod | undefined;

/**
 * One class per frame of `rec` (leaf first); undefined where the type cannot be told. Native
 * methods get undefined (they are native frames, not Java code).
 */
export function frameClasses(rec: AgentRecord, methods: Map<number, JavaMethod>, cc: CodeCache): FrameClass[] {
  const f = rec.frames;
  const out: FrameClass[] = new Array(f.length).fill(undefined);
  const isNative = (r: JavaFrameRef) => methods.get(r.method)?.native === true || r.bci === -3;
  const mark = (i: number, k: number, n: NMethod) => {
    for (let j = i; j < k; j++) out[j] = 'inlined';
    out[k] = n;
  };
  let i = 0;
  if (rec.pc && f.length && !isNative(f[0])) {
    const n = nmethodAt(cc, rec.pc, rec.tsNs);
    if (n) {
      let k = -1;
      for (let j = 0; j < f.length && j < cc.maxChain; j++) if (runMatches(n, f, 0, j)) k = j;
      if (k >= 0) {
        mark(0, k, n);
        i = k + 1;
      } else i = 1; // the PC is in compiled code AGCT's frames do not fit: leave the leaf unknown
    } else if (cc.interpreter.some((r) => rec.pc! >= r.addr && rec.pc! < r.end)) {
      out[0] = 'interpreted';
      i = 1;
    }
    // else: the PC is in a stub or in the VM; the leaf's type is inferred like a caller's
  }
  for (; i < f.length; i++) {
    if (isNative(f[i]) || !methods.has(f[i].method)) continue;
    let best: { k: number; n: NMethod } | undefined;
    for (let k = i; k < f.length && k - i < cc.maxChain; k++) {
      for (const n of cc.byMethod.get(f[k].method) ?? []) {
        if (liveAt(n, rec.tsNs) && runMatches(n, f, i, k)) best = { k, n };
      }
    }
    if (best) {
      mark(i, best.k, best.n);
      i = best.k;
    } else if (!(cc.byMethod.get(f[i].method) ?? []).some((n) => liveAt(n, rec.tsNs))) {
      out[i] = 'interpreted';
    }
  }
  return out;
}

/** Frame classes as types, with the tiers known now. */
export function typesOf(classes: FrameClass[], cc: CodeCache): (JavaFrameType | undefined)[] {
  return classes.map((c) => (c === undefined ? undefined : typeof c === 'string' ? c : levelType(cc.levelOf(c))));
}

/** Identity of a classification, for grouping samples (the nmethod, not its tier, which may come later). */
export function classesKey(classes: FrameClass[]): string {
  return classes.map((c) => (c === undefined ? '-' : c === 'interpreted' ? 'I' : c === 'inlined' ? 'L' : `n${c.id}`)).join(',');
}

/** One type per frame of `rec` (leaf first), with the tiers known now. */
export function classifyFrames(rec: AgentRecord, methods: Map<number, JavaMethod>, cc: CodeCache): (JavaFrameType | undefined)[] {
  return typesOf(frameClasses(rec, methods, cc), cc);
}

/**
 * A record the agent walked only after a retry from a corrected context (AgentRecord.recovered)
 * starts at the caller of the code the thread was in: the method being entered or left (its
 * prologue or epilogue, where AsyncGetCallTrace cannot walk) is missing. When the interrupted PC
 * lies in an nmethod, that nmethod's method is put back as the leaf (BCI and line unknown);
 * a PC in a stub or the interpreter names no Java method, so the record stays as it is.
 * Applied once per record (it clears `recovered`); returns whether a frame was added.
 */
export function restoreRecoveredLeaf(rec: AgentRecord, cc: CodeCache): boolean {
  if (!rec.recovered || !rec.pc || rec.code <= 0) return false;
  rec.recovered = undefined;
  const n = nmethodAt(cc, rec.pc, rec.tsNs);
  if (!n) return false;
  rec.frames.unshift({ method: n.method, bci: -1, line: -1 });
  rec.code = rec.frames.length;
  return true;
}
