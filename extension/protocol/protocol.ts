// The JSON-RPC protocol between the extension host (client) and the privileged helper (server),
// imported by both sides. vscode-jsonrpc carries it over the helper's stdin/stdout. The CLI runs
// the same tracers in-process and prints the same result shapes.
import { NotificationType, RequestType, RequestType0 } from 'vscode-jsonrpc';
import type { SelftestOptions, SelftestResult, SelftestUpdate } from './selftest';
import type { HistOptions, HistResult, HistUpdate } from './histogram';
import type { HistogramTracer, KitFlags, KitPer } from './catalog';
import type { JavaGcOptions, JavaGcResult, JavaGcUpdate } from './javaGc';
import type { MemleakOptions, MemleakResult, MemleakUpdate } from './memleak';
import type { ProfileOptions, ProfileResult, ProfileUpdate } from './profile';
import type { OffcpuOptions } from './offcpu';
import type { BpfRunOptions, BpfRunResult, BpfRunUpdate } from './bpfRun';
import type { JvmOptions, JvmResult, JvmUpdate } from './jvm';
import type { JavaHeapOptions, JavaHeapResult, JavaHeapUpdate } from './javaHeap';
import type { JavaLocksOptions } from './javaLocks';
import type { LatencyOptions, LatencyResult, LatencyUpdate } from './latency';

// ---- tracers -------------------------------------------------------------------------------
// One entry per tracer: its start options, the live updates it streams, and its final result
// (the same document the CLI prints with --json). Each tracer's shapes live in protocol/<name>.ts;
// a log2-histogram tracer's come from its catalog entry (KitTypes) unless it has a line here.
interface OwnTypes {
  selftest: { options: SelftestOptions; update: SelftestUpdate; result: SelftestResult };
  'java-gc': { options: JavaGcOptions; update: JavaGcUpdate; result: JavaGcResult };
  memleak: { options: MemleakOptions; update: MemleakUpdate; result: MemleakResult };
  profile: { options: ProfileOptions; update: ProfileUpdate; result: ProfileResult };
  offcpu: { options: OffcpuOptions; update: ProfileUpdate; result: ProfileResult };
  'bpf-run': { options: BpfRunOptions; update: BpfRunUpdate; result: BpfRunResult };
  jvm: { options: JvmOptions; update: JvmUpdate; result: JvmResult };
  'java-heap': { options: JavaHeapOptions; update: JavaHeapUpdate; result: JavaHeapResult };
  'java-locks': { options: JavaLocksOptions; update: ProfileUpdate; result: ProfileResult };
  latency: { options: LatencyOptions; update: LatencyUpdate; result: LatencyResult };
}
/** The kit's shapes with the tracer's "per" modes and boolean options (its catalog entry's). */
type KitTypes = { [N in HistogramTracer]: { options: HistOptions<KitPer<N>> & KitFlags<N>; update: HistUpdate; result: HistResult<N> } };
export type TracerTypes = OwnTypes & Omit<KitTypes, keyof OwnTypes>;
export type TracerName = keyof TracerTypes;
/**
 * The tracers a user runs to observe a system (a CLI command and an editor session each): the
 * keys of every per-tracer table (loss advice, tests, benchmarks, views), typed so that a new
 * tracer missing from one fails the type check. Not selftest (a self-check) nor bpf-run (the
 * user's own BPF objects, whose maps say what they count), nor the tracers reached through another
 * command: java-heap (memleak and profile --event alloc on a JVM; no BPF; its sessions are saved,
 * SessionTracer in extension/model/sessionFile.ts names it besides these) and offcpu (profile
 * --event offcpu|wall; its sessions are saved as profiles), java-locks (profile --event lock on a
 * JVM; no BPF).
 */
export type TracingName = Exclude<TracerName, 'selftest' | 'bpf-run' | 'java-heap' | 'offcpu' | 'java-locks'>;
export type OptionsOf<N extends TracerName> = TracerTypes[N]['options'];
export type UpdateOf<N extends TracerName> = TracerTypes[N]['update'];
export type ResultOf<N extends TracerName> = TracerTypes[N]['result'];

// ---- machine facts --------------------------------------------------------------------------
export type AttachKind = 'tracepoint' | 'raw_tp' | 'tp_btf' | 'uprobe' | 'usdt' | 'perf_event' | 'kprobe' | 'fentry';

export interface AttachProbe {
  ok: boolean;
  /** why it does not work here (errno text and what it means) */
  error?: string;
  /** the meaning alone, in plain words, where it is known (the raw libbpf text stays in error) */
  why?: string;
}

export interface JdkInfo {
  /** JDK home, e.g. /usr/lib/jvm/java-17-openjdk-amd64 */
  home: string;
  libjvm: string;
  usdt: boolean;
  /** number of hotspot USDT probes in libjvm.so */
  probeCount: number;
}

export interface Capabilities {
  kernelRelease: string;
  arch: string;
  btf: boolean;
  root: boolean;
  /** effective capabilities by name, e.g. ["CAP_BPF", "CAP_PERFMON"] */
  capabilities: string[];
  libbpf: string;
  attach: Record<AttachKind, AttachProbe>;
  jdks: JdkInfo[];
  tracefs: boolean;
  /** things the user should fix, each a sentence naming the cause and the fix */
  advice: string[];
  /** the root-owned install a non-root editor reaches root through, where the helper looked for it */
  install?: { dir: string; version?: string; missing: string[] };
  /** set when this process runs inside a container: what it withholds (see docs/editor.md, Dev Container) */
  container?: { runtime: string; ownPidNamespace: boolean; privileged: boolean };
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  user: string;
  uid: number;
  comm: string;
  cmdline: string[];
  exe?: string;
  kernelThread: boolean;
  /** the container it runs in, as its runtime names it ("podman: my-app, image debian:bookworm") */
  container?: string;
  jvm?: {
    libjvm: string;
    usdt: boolean;
    /** main class, jar or module from the command line */
    main: string;
    javaHome: string;
    /** -XX:+PreserveFramePointer present */
    preserveFramePointer: boolean;
    /** the JDK's version from its release file ("17.0.9"), when readable */
    version?: string;
    /** its feature release (8, 17, 21, 25): decides JDK-dependent choices (virtual threads: 21+) */
    feature?: number;
  };
}

export interface ListProcessesParams {
  jvmOnly?: boolean;
}

// ---- sessions -------------------------------------------------------------------------------
export interface SessionStartParams<N extends TracerName = TracerName> {
  tracer: N;
  options: OptionsOf<N>;
}

/** The container a session's target runs in, as its runtime names it (sys/proc/container.ts reads it). */
export interface TargetContainer {
  runtime: string;
  /** the full 64-hex-digit id */
  id: string;
  name?: string;
  image?: string;
  pod?: string;
  namespace?: string;
}

/** A running container, as the editor's container scope offers it (the helper reads the runtimes' files as root). */
export interface ContainerListing {
  container: TargetContainer;
  /** "podman: my-app, image debian:bookworm" */
  label: string;
  /** its processes now */
  processes: number;
}

export interface SessionStartResult {
  sessionId: string;
  tracer: TracerName;
  /** pids the session attached to (empty for system-wide) */
  targets: number[];
  /** where the one target pid (or the --container filter) runs; null: on the host; absent: a system-wide session */
  container?: TargetContainer | null;
  /** said once at start, e.g. "libc has no frame pointers: stacks above it are truncated" */
  warnings: string[];
  startedAtMs: number;
}

export interface SessionRef {
  sessionId: string;
}

export interface SessionResult<N extends TracerName = TracerName> {
  sessionId: string;
  tracer: N;
  result: ResultOf<N>;
}

export interface SessionDataParams<N extends TracerName = TracerName> {
  sessionId: string;
  tracer: N;
  update: UpdateOf<N>;
}

export type EndReason = 'stopped' | 'target-exited' | 'error';

export interface SessionEndedParams<N extends TracerName = TracerName> {
  sessionId: string;
  tracer: N;
  reason: EndReason;
  message?: string;
  result: ResultOf<N>;
}

export const capabilities = new RequestType0<Capabilities, void>('capabilities');
export const listProcesses = new RequestType<ListProcessesParams, ProcessInfo[], void>('listProcesses');
/** the running containers a kit tracer's container scope can select (the same listing `--container` names on an unknown name) */
export const listContainers = new RequestType0<ContainerListing[], void>('listContainers');
export const sessionStart = new RequestType<SessionStartParams, SessionStartResult, void>('session/start');
export const sessionStop = new RequestType<SessionRef, SessionResult, void>('session/stop');
export const sessionSnapshot = new RequestType<SessionRef, SessionResult, void>('session/snapshot');
export const sessionData = new NotificationType<SessionDataParams>('session/data');
export const sessionEnded = new NotificationType<SessionEndedParams>('session/ended');
/** helper → client: a line for the output channel (never on stdout, which carries the protocol) */
export const helperLog = new NotificationType<{ message: string }>('helper/log');

/** Anything vscode-jsonrpc accepts as a request type with these params and result. */
export type RequestTypeLike<P, R> = RequestType<P, R, void> | RequestType0<R, void>;
