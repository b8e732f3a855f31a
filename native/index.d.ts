// The whole JS surface of the native addon (native/src/*.cc, built to ebpf_studio.node).
// A thin, generic libbpf binding: no tracer logic lives in C++. Every method throws a BpfError
// on failure; nothing returns an error code.

/** Thrown by every failing call. `log` holds what libbpf printed during the call (for load, the verifier log). */
export interface BpfError extends Error {
  /** positive errno, e.g. 1 (EPERM), 13 (EACCES), 2 (ENOENT), 22 (EINVAL) */
  errno: number;
  /** symbolic errno name, e.g. "EPERM" */
  code: string;
  /** libbpf's own messages captured while the call ran (may be empty) */
  log: string;
}

export interface ProgramInfo {
  name: string;
  /** ELF section, e.g. "usdt", "tp_btf/sched_switch", "raw_tp/sched_switch", "perf_event" */
  section: string;
  autoload: boolean;
}

export interface MapInfo {
  name: string;
  /** BPF_MAP_TYPE_* numeric value */
  type: number;
  /** e.g. "hash", "percpu_array", "ringbuf", "stack_trace" (libbpf_bpf_map_type_str) */
  typeName: string;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  /** true for per-CPU maps: lookups return numPossibleCpus() values, each padded to 8 bytes */
  perCpu: boolean;
}

export interface VariableInfo {
  name: string;
  /** byte offset inside its data section */
  offset: number;
  size: number;
}

export interface LoadResult {
  /** verifier and libbpf log; non-empty only when logLevel > 0 was asked for */
  log: string;
}

export interface UprobeOptions {
  /** absolute path of the ELF binary or shared library */
  binary: string;
  /** function name resolved by libbpf in the binary's symbol tables; give symbol or offset */
  symbol?: string;
  /** file offset of the probed instruction (used when symbol is absent) */
  offset?: number;
  /** -1 = every process that maps the binary */
  pid: number;
  retprobe: boolean;
}

export interface UsdtOptions {
  binary: string;
  provider: string;
  name: string;
  /** -1 = every process that maps the binary */
  pid: number;
  /** BPF cookie readable with bpf_usdt_cookie() */
  cookie?: number;
}

export interface PerfEventOptions {
  /** only software cpu-clock is needed today */
  type: 'cpu-clock';
  /** samples per second */
  frequency: number;
  cpu: number;
  /** -1 = all processes on that cpu */
  pid?: number;
}

export interface MapDump {
  /** `count` keys of keySize bytes, back to back */
  keys: Buffer;
  /** `count` values of valueSize bytes (per-CPU: numPossibleCpus() * round_up(valueSize, 8) each), back to back */
  values: Buffer;
  count: number;
}

export interface RingBufferHandle {
  /** stops the polling thread and frees the ring buffer; idempotent */
  close(): void;
}

/**
 * Receives records in batches. Record i is batch.subarray(offsets[i], offsets[i + 1]);
 * offsets.length === count + 1. The buffers belong to the callee.
 */
export type RingBufferCallback = (batch: Buffer, offsets: Uint32Array) => void;

/** An opened (and later loaded) BPF object file. Link ids are small integers local to the object. */
export class BpfObject {
  /** bpf_object__open_file; throws if the file is missing or not a BPF ELF object */
  constructor(path: string);
  readonly path: string;
  programs(): ProgramInfo[];
  maps(): MapInfo[];
  /** variables of a data section (".rodata" by default), from BTF */
  variables(section?: string): VariableInfo[];
  /** write a `const volatile` variable before load; value.length must equal the variable's size */
  setRodata(name: string, value: Buffer): void;
  setAutoload(program: string, autoload: boolean): void;
  setMaxEntries(map: string, maxEntries: number): void;
  /** bpf_object__load; logLevel 1 or 2 keeps the verifier log even on success */
  load(options?: { logLevel?: number }): LoadResult;

  attachTracepoint(program: string, category: string, name: string): number;
  attachRawTracepoint(program: string, name: string): number;
  /** bpf_program__attach: attach by section name (tp_btf/..., fentry/..., raw_tp/..., tp/...) */
  attach(program: string): number;
  attachUprobe(program: string, options: UprobeOptions): number;
  attachUsdt(program: string, options: UsdtOptions): number;
  attachPerfEvent(program: string, options: PerfEventOptions): number;
  /** destroy one link; unknown ids throw */
  detach(link: number): void;
  /** runs an iterator program (SEC("iter/...")) once and returns what it wrote with bpf_seq_write */
  runIterator(program: string): Buffer;

  mapLookup(map: string, key: Buffer): Buffer | null;
  mapUpdate(map: string, key: Buffer, value: Buffer, flags?: number): void;
  /** false when the key was absent */
  mapDelete(map: string, key: Buffer): boolean;
  /** every entry; with del, each entry read is deleted (batch where the kernel supports it) */
  mapDump(map: string, options?: { delete?: boolean }): MapDump;
  /** instruction pointers of a stack-trace map entry, leading non-zero ones; empty if the id is unknown */
  readStack(map: string, stackId: number): BigUint64Array;

  /**
   * polls the ring buffer map on its own native thread; batches reach JS through a ThreadSafeFunction.
   * reuse: every batch lands in the same (grown as needed) Buffer and Uint32Array, valid only while
   * the callback runs; for high-volume rings whose records the callback consumes at once (no
   * garbage Buffer per batch for the GC to catch up with).
   * wakeupsOnly: the thread sleeps until the kernel wakes it (no 100 ms poll timeout), for rings
   * that carry rare events and whose programs submit without BPF_RB_NO_WAKEUP: an idle ring then
   * costs no wakeup at all.
   */
  openRingBuffer(map: string, callback: RingBufferCallback, options?: { reuse?: boolean; wakeupsOnly?: boolean }): RingBufferHandle;

  /** closes ring buffers, destroys every link, closes the object; idempotent */
  close(): void;
}

export interface UnwindResult {
  /** leaf first: the instruction pointer, then return addresses (not adjusted by -1) */
  frames: BigUint64Array;
  /** true when the unwind ran out of copied stack before the outermost frame */
  truncated: boolean;
  /** libdw's reason when the unwind stopped early (absent at the outermost frame) */
  error?: string;
}

export interface UnwindModule {
  name: string;
  start: bigint;
  end: bigint;
  /** where the module's call frame information comes from; 'none' = frame pointers only */
  cfi: 'eh_frame' | 'debug_frame' | 'none';
}

/**
 * CFI unwinding (elfutils libdw) of user stacks copied by a BPF program, for one process. Reads
 * /proc/PID/maps at construction (throws if the process is gone) and on refresh(); each module's
 * ELF and CFI are parsed once and reused. Code without CFI (JIT) is walked by frame pointer.
 */
export class Unwinder {
  /** a live process, or a recorded one: its maps text (paths must be readable here) */
  constructor(pid: number | { maps: string });
  /** regs: 17 little-endian u64 in x86_64 DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip); stack: bytes copied from rsp */
  unwind(tid: number, regs: Buffer, stack: Buffer, maxFrames?: number): UnwindResult;
  /** as unwind, but writes at most out.length frames into out and returns their number; nothing allocated per call */
  unwindInto(tid: number, regs: Buffer, stack: Buffer, out: BigUint64Array): number;
  /** whether the last unwind/unwindInto ran out of copied stack */
  readonly truncated: boolean;
  /** re-reads the mappings (after dlopen/exec); false if the process is gone */
  refresh(): boolean;
  modules(): UnwindModule[];
  close(): void;
}

export function libbpfVersion(): string;

/**
 * One file operation done by a short-lived child as uid/gid (no groups), chrooted into
 * /proc/rootPid/root when rootPid is given and the caller is root; relative to the target's cwd
 * with base 'cwd'. The last path component is never followed. open/connect return the opened fd
 * (owned by the caller now); the others return 0. Throws a BpfError with errno/code on failure.
 */
export function userFile(spec: {
  op: 'open' | 'unlink' | 'rmdir' | 'mkdir' | 'rename' | 'connect';
  uid: number;
  gid: number;
  rootPid?: number;
  base?: 'root' | 'cwd';
  path: string;
  /** rename's new name */
  path2?: string;
  /** open(2) flags (O_NOFOLLOW and O_CLOEXEC are always added) */
  flags?: number;
  mode?: number;
  /** connect: the socket's peer must be this pid (SO_PEERCRED) */
  peerPid?: number;
}): number;
/** A shared flock(2) on fd, taken without waiting; held until every copy of that file description is closed (or the process dies). */
export function lockShared(fd: number): void;
export function numPossibleCpus(): number;

/** A map another process created, read by id through BPF syscalls (nothing is changed). */
export interface MapById {
  id: number;
  name: string;
  /** enum bpf_map_type */
  type: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  /** 0 when the map has no BTF */
  btfId: number;
  btfKeyTypeId: number;
  btfValueTypeId: number;
  perCpu: boolean;
  /** false for ring buffers, perf event arrays, program arrays and stack traces: no entries read */
  readable: boolean;
  keys: Buffer;
  /** `count` values of valueBytes each (per-CPU: numPossibleCpus() * round_up(valueSize, 8)) */
  values: Buffer;
  valueBytes: number;
  count: number;
}

export function mapReadById(id: number, maxEntries: number): MapById;
export function progInfoById(id: number): { id: number; name: string; type: number; tag: string; runCount: number };
/** the raw BTF blob (as in /sys/kernel/btf/vmlinux) the kernel holds under `id` */
export function btfRawById(id: number): Buffer | null;
