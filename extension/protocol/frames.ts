// The one frame family every stack uses, from the tracers to the views. FrameBase says what any
// frame says (how the code ran, where it lives, what it is called); the shapes below are that
// record at its stages, each derived from it rather than written again:
//  - Frame: one address as the symbolizer resolves it (sys/symbolize), the fullest form;
//  - ProfileFrame: a frame of a CPU profile document (`ebpf-studio profile --json`);
//  - MemleakFrame: a frame of a memleak document (`ebpf-studio memleak --json`);
//  - FlameFrame: a distinct frame of a flame graph (model/flamegraph), whatever the input format.
// A kernel frame has kind 'kernel' and module "[kernel]"; a native frame kind 'native' and an ELF
// module; a Java frame kind 'jit' or 'interpreted' (isJavaKind), with javaType when the Java
// agent knows how it ran. Addresses travel as hex strings because JSON has no 64-bit integers.

export type FrameKind = 'kernel' | 'native' | 'jit' | 'interpreted';

/** A Java frame: JIT-compiled or interpreted Java code (perf map or Java agent). */
export function isJavaKind(kind: FrameKind): kind is 'jit' | 'interpreted' {
  return kind === 'jit' || kind === 'interpreted';
}

/**
 * How a Java frame ran (the agent path): in the interpreter, in C1- or C2-compiled code,
 * compiled at a tier we could not learn, or inlined into its caller's compiled code. See
 * extension/tracers/javaAgent/frameTypes.ts for what is observed and what is inferred.
 */
export type JavaFrameType = 'interpreted' | 'c1' | 'c2' | 'compiled' | 'inlined';
export const JAVA_FRAME_TYPES: JavaFrameType[] = ['interpreted', 'c1', 'c2', 'compiled', 'inlined'];

/** What every frame says; absent = unknown. */
export interface FrameBase {
  kind: FrameKind;
  /** absolute path of the ELF, "[kernel]", "[jit]", "[perf-map]", "[vdso]", "[unknown]" */
  module?: string;
  /** demangled; unknown: UIs show module+offset */
  function?: string;
  /** source of the (outermost, real) function at the address */
  file?: string;
  /** 1-based */
  line?: number;
  /** a Java frame whose type is known (frames from the Java agent) */
  javaType?: JavaFrameType;
}

export interface InlinedFrame {
  function: string;
  file?: string;
  line?: number;
  column?: number;
}

/** One address, resolved by the symbolizer. */
export interface Frame extends FrameBase {
  /** "0x7f12..." */
  address: string;
  module: string;
  /** hex offset inside module (ELF: file offset); always set for native frames */
  offset?: string;
  column?: number;
  /** functions inlined at this address, innermost first */
  inlined?: InlinedFrame[];
  /** GNU build-id (hex) of module, when it has one */
  buildId?: string;
}

/** The FrameBase fields a document always writes, null when unknown. */
type NullWhenUnknown<T> = { [K in keyof T]-?: Exclude<T[K], undefined> | null };

/**
 * A frame of a CPU profile document: module, function, file and line are always present (null
 * when unknown: no mapping covers the address, no symbol, no line table); an address with
 * inlined functions is one frame per function, innermost first, each but the outermost flagged
 * `inlined`. No column; build-ids are per module in the result (ProfileResult.buildIds).
 */
export interface ProfileFrame extends Pick<Frame, 'address' | 'kind' | 'offset' | 'javaType'>, NullWhenUnknown<Pick<FrameBase, 'module' | 'function' | 'file' | 'line'>> {
  /** this frame was inlined into the next one: both sit at the same address */
  inlined?: boolean;
}

/**
 * A frame of a memleak document: the symbolizer's frame without kind (all user frames are
 * native, kernel mode's are "[kernel]") and without build-id; offset only when the function is
 * unknown (shown as module+offset).
 */
export type MemleakFrame = Omit<Frame, 'kind' | 'buildId' | 'javaType'>;

/**
 * A distinct frame of a flame graph, as every importer (our profiles, pprof, folded, speedscope,
 * cpuprofile) produces it: `name` is the function (or what the format has instead); file:line is
 * the frame's most sampled line. The same method run interpreted and compiled is two frames.
 */
export interface FlameFrame extends Pick<FrameBase, 'kind' | 'module' | 'file' | 'line' | 'javaType'> {
  name: string;
}

/**
 * A perf-map name of compiled Java code as the agent names Java frames: `Class.method`.
 * HotSpot's Compiler.perfmap writes a method's external signature, return type first and parameters
 * after (`com.sun.tools.javac.util.List com.sun.tools.javac.comp.Attr.attribArgs(int, ...)`, newer
 * JDKs may append a bracketed note such as `[c2]`); perf-map-agent writes JVM descriptors
 * (`Lcom/x/Foo;::bar` or `Lcom/x/Foo;.bar`). Both become `com.sun.tools.javac.comp.Attr.attribArgs` /
 * `com.x.Foo.bar`, so a frame named from the perf map and the same method named by the agent fold
 * into one flame-graph frame. Names that are not a Java method (stubs, "Interpreter", native
 * symbols, "StubRoutines (1)") come back unchanged. Written here because no library parses these.
 */
export function normalizeJavaMethodName(name: string): string {
  let s = name.trim();
  // perf-map-agent's descriptor form: "Lcom/x/Foo;::bar" / "Lcom/x/Foo;.bar"
  const desc = /^L([\w$/]+);(?:::|\.)([\w$<>]+)/.exec(s);
  if (desc) return `${desc[1].replace(/\//g, '.')}.${desc[2]}`;
  s = s.replace(/\s*\[[^\]]*\]\s*$/, ''); // trailing "[c2]"-style notes
  const open = s.indexOf('(');
  if (open <= 0 || !s.endsWith(')')) return name;
  const head = s.slice(0, open).trim();
  // the qualified name is the last word before "(", the return type (if any) the words before it
  const qualified = head.slice(head.lastIndexOf(' ') + 1);
  if (!/^[\w$]+(?:\.[\w$]+)*\.(?:[\w$]+|<init>|<clinit>)$/.test(qualified)) return name;
  return qualified;
}

/** How a perf-map entry ran: HotSpot names its interpreter stubs "Interpreter", the rest is JIT code. */
export function perfMapKind(name: string): FrameKind {
  return /^Interpreter\b/.test(name) ? 'interpreted' : 'jit';
}
