// The CPU profiler: perf_event software cpu-clock at the chosen frequency on every online CPU
// (bpf/profile.bpf.c). User stacks are unwound one of two ways:
//  - dwarf (the default): each sample brings the user registers and a copy of the top of the user
//    stack through a ring buffer, unwound here by CFI (./dwarf.ts, libdw in the addon), so
//    stacks are whole through -O2 code, GCC leaf functions and Debian's libc;
//  - fp: the kernel walks frame pointers and counts per (pid, tid, user stack, kernel stack);
//    nothing is copied per sample (for very high frequencies, or to compare).
// Symbolized at the end (live snapshots name what a background pass has reached). For a JVM, the
// perf map is requested through the HotSpot attach socket at the end so methods compiled late are
// named; with the Java agent (../javaAgent/agent.ts) Java frames come from the agent instead, joined
// to each sample's kernel and native stack (either unwind mode) live and at the end. Map decoders:
// ./decode.ts; stacks to frames: ./stacks.ts.
//
// start() runs named steps: javaPath (agent or perf map for a JVM target), loadProfiler (the BPF
// object sized for the options), openSampleRing (dwarf mode: unwind samples as they arrive),
// attachSamplers (one cpu-clock event per CPU); then a ProfileRun reads the counts every second,
// answers snapshots and, at stop, detaches, names Java methods and symbolizes the final profile.
import fs from 'node:fs';
import type { BpfObject, RingBufferHandle } from '../../../native/index';
import { Symbolizer, type ProcessImage } from '../../sys/symbolize';
import type { ProfileFrame } from '../../protocol/frames';
import type { ProfileOptions, ProfileResult, ProfileStack } from '../../protocol/profile';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_STORAGE, UNWIND_CHOICES, type UnwindInfo, type UnwindMode } from '../../protocol/profile';
import { asObject, bool, int, oneOf, PID_MAX } from '../../protocol/validate';
import { fromBpfError, inputError, unsuitableError } from '../../protocol/errors';
import { bootStartRange, checkPid, pidAlive, processCpuMs, processInfo, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { checkProfileCpu } from '../../model/profileCpuCheck';
import { watchTarget } from '../targetWatch';
import type { ProcessInfo } from '../../protocol/protocol';
import { kernelBuildId } from '../../sys/elf/elf';
import { boolFlag, writePerfMap } from '../../sys/jvm/attach';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, records, setRodata } from '../bpfObject';
import { decodeCounts, parseCpuList, PROFILE_STAT, type CountEntry } from './decode';
import { assemble, readStacks, symbolizeStacks, type RawStack } from './stacks';
import { cfiRowCapacity, cfiStackReader, cfiSummary, CfiTables, cfiUnwindInfo, kernelWalksTables } from '../cfiTables';
import { CFI_HOST_DEFAULT_MAX_BYTES, CFI_HOST_MAX_MAX_BYTES, CFI_HOST_MIN_MAX_BYTES, HostCfiTables, tickHostTables } from '../cfiHost';
import { DwarfAggregator, PROFILE_DEFAULT_STACK_COPY, PROFILE_SAMPLE_HEADER_SIZE, PROFILE_MAX_STACK_COPY } from './dwarf';
import { unwindModules } from './unwindModules';
import { agentLibrary, agentUnavailableMessage, checkAgentTarget, foreignOwner, JAVA_MODES, startJavaAgent, type JavaAgentSession } from '../javaAgent/agent';

export * from './decode';

const TICK_MS = 1000;
const HOST_TICK_MS = 500;

export function onlineCpus(): number[] {
  try {
    return parseCpuList(fs.readFileSync('/sys/devices/system/cpu/online', 'utf8'));
  } catch {
    return Array.from({ length: 1 }, (_, i) => i);
  }
}

export function preserveFramePointerAdvice(pid: number, cmdline: string[]): string {
  const command = [cmdline[0] || 'java', '-XX:+PreserveFramePointer', ...cmdline.slice(1)].join(' ');
  return `pid ${pid} is a JVM running without -XX:+PreserveFramePointer: Java stacks will be truncated (the callers of compiled Java methods are lost). Restart it with the flag: "${command}", or set JAVA_TOOL_OPTIONS=-XX:+PreserveFramePointer in its environment.`;
}

/** Whether the JVM has -XX:+PreserveFramePointer: asked of the JVM itself, else read off its command line. */
async function jvmPreservesFramePointer(pid: number, cmdline: string[], env: TracerEnv, mayAttach: boolean): Promise<boolean> {
  if (mayAttach) {
    try {
      const v = await boolFlag(pid, 'PreserveFramePointer', { timeoutMs: 3000 });
      if (v !== undefined) return v;
    } catch (e) {
      env.log(`profile: printflag through the attach socket failed (${(e as Error).message}); reading the command line instead`);
    }
  }
  const envText = (() => {
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      return '';
    }
  })();
  return cmdline.includes('-XX:+PreserveFramePointer') || /(JAVA_TOOL_OPTIONS|JDK_JAVA_OPTIONS)=[^\0]*-XX:\+PreserveFramePointer/.test(envText);
}

/** Ring buffer bytes: half a second of full-size samples on every CPU, rounded up to a power of two (at least 1 MiB, at most 64 MiB). */
export function ringBytes(frequency: number, stackCopyBytes: number, cpus: number): number {
  const want = (frequency * cpus * (stackCopyBytes + PROFILE_SAMPLE_HEADER_SIZE + 16)) / 2;
  let n = 1 << 20;
  while (n < want && n < 64 << 20) n *= 2;
  return n;
}

export const profileTracer: Tracer<'profile'> = {
  name: 'profile',
  validate(raw): ProfileOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 0, PID_MAX, 0),
      frequency: int(o, 'frequency', 1, PROFILE_MAX_FREQUENCY, PROFILE_DEFAULT_FREQUENCY),
      includeIdle: bool(o, 'includeIdle', false),
      javaPerfMap: bool(o, 'javaPerfMap', true),
      stackStorageSize: int(o, 'stackStorageSize', 1, PROFILE_MAX_STACK_STORAGE, PROFILE_DEFAULT_STACK_STORAGE),
      unwind: oneOf(o, 'unwind', UNWIND_CHOICES, 'auto'),
      stackCopyBytes: int(o, 'stackCopyBytes', 1024, PROFILE_MAX_STACK_COPY, PROFILE_DEFAULT_STACK_COPY),
      java: oneOf(o, 'java', JAVA_MODES, 'auto'),
      ...(o.cfiMaxBytes !== undefined ? { cfiMaxBytes: int(o, 'cfiMaxBytes', CFI_HOST_MIN_MAX_BYTES, CFI_HOST_MAX_MAX_BYTES) } : {}),
    };
  },
  async start(options, env, events) {
    const warnings: string[] = [];
    // The target by pid and start time, read before anything else about it: what follows (owner,
    // JVM, agent) is checked against this process, and the BPF program samples and signals no other.
    const target: ProcessIdentity | undefined = options.pid ? { pid: options.pid, startTime: checkPid(options.pid).startTime } : undefined;
    const cmdline = options.pid ? processInfo(options.pid) : undefined;
    // auto is CFI: libdw uses each module's .eh_frame/.debug_frame and walks frame pointers only
    // through code that has no CFI (JIT code), which is "frame pointers where they are all there is".
    // A JVM profiled with the Java agent is unwound the same way: auto picks CFI for it too. Its
    // Java frames come from the agent, not from the unwind, so what the unwind has to get right
    // is the native part under the first JIT or interpreter frame (JNI libraries, libjvm's
    // runtime, libc, the kernel entry), and there CFI keeps callers that frame pointers lose
    // (Debian's libz and libc have no frame pointers). The cost is in the helper (~30 µs of
    // unwinding per sample) plus a 16 KiB copy per sample in the kernel, nothing in the JVM.
    // The join (../javaAgent/agent.ts) is by tid and time either way; fp stays available (--unwind fp).
    // One process that is not a JVM, or the whole host: auto walks unwind tables in the kernel
    // (cfi) where the kernel can, ~4 µs a sample with nothing copied, against ~30 µs of user-space
    // CFI per sample (a whole host at 99 Hz: bench cfi-host); a JVM (whose agent joins the
    // user-space unwind) keeps dwarf.
    const auto: UnwindMode = !cmdline?.jvm && kernelWalksTables() ? 'cfi' : 'dwarf';
    const choice = options.unwind ?? 'auto';
    const mode: UnwindMode = choice === 'auto' ? auto : choice;
    if (options.cfiMaxBytes !== undefined && (mode !== 'cfi' || options.pid)) throw inputError('cfiMaxBytes (--cfi-max-mb) applies to a whole-host profile with --unwind cfi');
    // cfi: the target's tables sized now, compiled and loaded once sampling runs (ProfileRun);
    // the whole host's as processes and files are first met in samples, within a memory cap
    const cfi = mode === 'cfi' && options.pid ? new CfiTables(env.log) : undefined;
    const host = mode === 'cfi' && !options.pid ? new HostCfiTables(env.log, options.cfiMaxBytes ?? CFI_HOST_DEFAULT_MAX_BYTES, { cpus: onlineCpus().length, showPaths: !env.requester || env.requester.uid === 0 }) : undefined;
    cfi?.planLater(options.pid);
    const { java, jvmPids } = await javaPath(options, cmdline, mode, env, warnings);
    const stackCopyBytes = options.stackCopyBytes ?? PROFILE_DEFAULT_STACK_COPY;
    const obj = await loadProfiler(options, target, mode, stackCopyBytes, java, env, cfi, host);
    const dwarf = mode === 'dwarf' ? new DwarfAggregator(env.addon, stackCopyBytes, env.log) : undefined;
    if (dwarf && options.pid) dwarf.pool.prime(options.pid);
    let ring: RingBufferHandle | undefined;
    try {
      if (dwarf) ring = openSampleRing(obj, dwarf, java, options.pid, env);
      attachSamplers(obj, options.frequency);
    } catch (e) {
      ring?.close();
      obj.close();
      dwarf?.close();
      await java?.abort();
      throw e;
    }
    return new ProfileRun(options, target, mode, obj, dwarf, ring, java, jvmPids, env, events, warnings, cfi, host);
  },
};

/**
 * A JVM target: decides where its Java frames come from. The Java agent (started here) when
 * asked for, or when the JVM lacks -XX:+PreserveFramePointer and the agent is built; otherwise
 * the perf map at the end. Another user's JVM gets no attach request at all. Says what it
 * decided through `warnings`; returns the agent session and the JVMs whose perf map to fetch.
 */
async function javaPath(options: ProfileOptions, cmdline: ProcessInfo | undefined, mode: UnwindMode, env: TracerEnv, warnings: string[]): Promise<{ java?: JavaAgentSession; jvmPids: Set<number> }> {
  const jvmPids = new Set<number>();
  if (options.pid && options.java === 'agent' && !cmdline?.jvm) {
    // Not seen as a JVM: maybe another user's, whose maps we cannot read. The target checks
    // (owner first) say why; a readable process without libjvm.so is no JVM at all.
    checkAgentTarget(options.pid, env.requester);
    throw unsuitableError(`pid ${options.pid} is not a HotSpot JVM (no libjvm.so mapped): --java agent loads a JVMTI agent into a JVM; profile it without --java`);
  }
  if (!cmdline?.jvm) return { jvmPids };
  const owner = foreignOwner(options.pid, env.requester);
  if (owner === undefined) jvmPids.add(options.pid);
  const fp = options.java === 'agent' ? false : await jvmPreservesFramePointer(options.pid, cmdline.cmdline, env, options.javaPerfMap && owner === undefined);
  // Where the agent would be used, refuse (checkAgentTarget names owner, requester and fix);
  // otherwise native and kernel frames only: no attach request into another user's JVM.
  if (owner !== undefined && (options.java === 'agent' || (options.java === 'auto' && !fp))) checkAgentTarget(options.pid, env.requester);
  if (owner !== undefined) {
    warnings.push(`pid ${options.pid} is a JVM of uid ${owner}, not yours (uid ${env.requester?.uid}): eBPF Studio sends no attach request into another user's JVM (no Java agent, no perf map), so its Java frames show as [unknown]. Profile it as root (sudo) or as uid ${owner}`);
  } else if (options.java === 'auto' && !fp && !agentLibrary(env.assetDir)) warnings.push(`${agentUnavailableMessage(env.assetDir)}. ${preserveFramePointerAdvice(options.pid, cmdline.cmdline)}`);
  else if (options.java === 'agent' || (options.java === 'auto' && !fp)) return { java: await startJavaAgent(options.pid, env, { unwind: mode === 'dwarf' ? 'dwarf' : 'fp' }), jvmPids };
  else if (!fp) warnings.push(preserveFramePointerAdvice(options.pid, cmdline.cmdline));
  return { jvmPids };
}

/**
 * Loads bpf/profile.bpf.o: stack map and (dwarf mode) sample ring sized for the options, the
 * target and modes as rodata. With the Java agent in fp mode its java_samples ring is attached
 * too (in dwarf mode the samples ring carries tid and time, forwarded once unwound). A failure
 * stops the agent before it is thrown.
 */
async function loadProfiler(options: ProfileOptions, target: ProcessIdentity | undefined, mode: UnwindMode, stackCopyBytes: number, java: JavaAgentSession | undefined, env: TracerEnv, cfi: CfiTables | undefined, host: HostCfiTables | undefined): Promise<BpfObject> {
  try {
    const { obj } = loadFirstWorking(env, 'profile', [['on_sample']], (o) => {
      o.setMaxEntries('stacks', options.stackStorageSize ?? PROFILE_DEFAULT_STACK_STORAGE);
      // without tables the walk's maps stay one entry each (the walked-stacks map is preallocated)
      if (cfi) cfi.size(o, cfiRowCapacity(cfi.sizingRows), options.stackStorageSize ?? PROFILE_DEFAULT_STACK_STORAGE);
      else if (host) host.size(o, options.stackStorageSize ?? PROFILE_DEFAULT_STACK_STORAGE);
      else o.setMaxEntries('cfi_stacks', 1);
      if (mode === 'dwarf') {
        o.setMaxEntries('samples', ringBytes(options.frequency, stackCopyBytes, onlineCpus().length));
        o.setMaxEntries('scratch', env.addon.numPossibleCpus());
      }
      setRodata(o, { target_pid: options.pid, ...bootStartRange(target), include_idle: options.includeIdle, unwind_dwarf: mode === 'dwarf', stack_copy_bytes: stackCopyBytes, signal_target: Boolean(java), signal_euid: java ? java.euid : 0xffffffff, unwind_cfi: mode === 'cfi' });
    });
    try {
      cfi?.load(obj);
      host?.attach(obj);
    } catch (e) {
      obj.close();
      throw e;
    }
    if (mode !== 'dwarf') java?.attachRing(obj);
    return obj;
  } catch (e) {
    await java?.abort();
    throw e;
  }
}

/** dwarf mode: each sample's copied user stack is unwound as it arrives; the target's go to the agent's join too. */
function openSampleRing(obj: BpfObject, dwarf: DwarfAggregator, java: JavaAgentSession | undefined, pid: number, env: TracerEnv): RingBufferHandle {
  try {
    return obj.openRingBuffer('samples', (batch, offsets) => {
      for (const rec of records(batch, offsets)) {
        try {
          const u = dwarf.add(rec);
          if (java && u.sample.pid === pid) java.addCfiSample(u.sample.tid, u.sample.nsTid, u.sample.ts, { user: u.user, kernStackId: u.sample.kernStackId, note: u.note, comm: u.sample.comm });
        } catch (e) {
          env.log(`profile: a sample could not be unwound: ${(e as Error).message}`);
        }
      }
    });
  } catch (e) {
    throw fromBpfError('opening the profiler ring buffer', e);
  }
}

/** One cpu-clock perf event per online CPU, each running on_sample. */
function attachSamplers(obj: BpfObject, frequency: number): void {
  try {
    for (const cpu of onlineCpus()) obj.attachPerfEvent('on_sample', { type: 'cpu-clock', frequency, cpu });
  } catch (e) {
    throw fromBpfError(`opening cpu-clock perf events at ${frequency} Hz`, e);
  }
}

/** The target's utime + stime (ms) and the samples counted by then. */
interface CpuMark {
  ms: number;
  taken: number;
}

type FrameCache = { kernel: Map<bigint, ProfileFrame[]>; user: Map<number, Map<string, ProfileFrame[]>> };
const frameCache = (): FrameCache => ({ kernel: new Map(), user: new Map() });

/**
 * A running profile: captures the mappings of sampled processes while they live (they can exit
 * or dlopen while we sample), reports counts every second, answers snapshots from a background
 * symbolization pass and, at stop, symbolizes the final profile afresh.
 */
class ProfileRun implements Session<'profile'> {
  readonly targets: number[];
  private readonly started = Date.now();
  private readonly symbolizer: Symbolizer;
  private readonly images = new Map<number, ProcessImage>();
  private readonly warnOpts: Parameters<Symbolizer['warnings']>[1];
  private readonly timer: ReturnType<typeof setInterval>;
  /** whole-host cfi: processes and files met in samples get their tables twice a second */
  private readonly hostTimer?: ReturnType<typeof setInterval>;
  private ticks = 0;
  /** system-wide: pids whose mappings were captured */
  private readonly seen = new Set<number>();
  private totals = { samples: 0, lost: 0 };
  private rawLast: RawStack[] = [];
  private final: ProfileResult | undefined;
  private closed = false;
  /** frames of snapshots: named by what a background pass has reached */
  private readonly live = frameCache();
  private liveNaming: Promise<void> | undefined;
  /** frames of the final profile */
  private readonly named = frameCache();
  private unwindModuleInfo: UnwindInfo['modules'];
  private readonly buildIds = new Map<string, string>();
  /** the target's own CPU time when sampling began and at the last look, each with the samples taken by then */
  private readonly cpuFirst: CpuMark | undefined;
  private cpuLast: CpuMark | undefined;
  /** cfi: tables loaded and how walks ended, read before the object closes */
  private cfiInfo: Partial<UnwindInfo> = {};

  /** stops watching the target (the profile ends when it exits) */
  private readonly unwatch: () => void;

  constructor(
    private readonly options: ProfileOptions,
    private readonly target: ProcessIdentity | undefined,
    private readonly mode: UnwindMode,
    private readonly obj: BpfObject,
    private readonly dwarf: DwarfAggregator | undefined,
    private readonly ring: RingBufferHandle | undefined,
    private readonly java: JavaAgentSession | undefined,
    private readonly jvmPids: Set<number>,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'profile'>,
    readonly warnings: string[],
    private readonly cfi?: CfiTables,
    private readonly host?: HostCfiTables,
  ) {
    this.targets = options.pid ? [options.pid] : [];
    this.warnOpts = mode !== 'fp' ? ({ stacks: 'cfi' } as const) : ({ stacks: 'fp', fpFix: 'or profile with --unwind cfi or dwarf, which unwind by CFI' } as const);
    this.symbolizer = new Symbolizer({ log: env.log });
    if (options.pid) {
      this.cpuFirst = this.cpuLast = this.cpuMark();
      this.capture(options.pid);
      const img = this.images.get(options.pid);
      if (img) warnings.push(...this.symbolizer.warnings(img, this.warnOpts));
    }
    this.timer = setInterval(() => this.tick(), TICK_MS);
    if (host) this.hostTimer = setInterval(() => tickHostTables(host, () => this.closed, (l) => this.env.log(l), 'profile'), HOST_TICK_MS);
    cfi?.loadLater(obj, () => this.closed).catch((e: Error) => env.log(`profile: loading unwind tables: ${e.message}`));
    this.unwatch = target
      ? watchTarget(target, () => {
          clearInterval(this.timer);
          this.events.ended('target-exited', `pid ${target.pid} exited`);
        })
      : () => undefined;
  }

  /** Whether `pid` still runs; the target by its start time too (its pid may be another process's by now). */
  private running(pid: number): boolean {
    return this.target && pid === this.target.pid ? sameProcess(this.target) : pidAlive(pid);
  }

  private capture(pid: number): void {
    if (pid === 0 || !this.running(pid)) return;
    try {
      this.images.set(pid, this.symbolizer.captureProcess(pid));
    } catch (e) {
      this.env.log(`profile: cannot read the mappings of pid ${pid}: ${(e as Error).message}`);
    }
  }

  /** Every second: counts to the view; the target's mappings every 5 s, new pids' every 2 s system-wide. */
  private tick(): void {
    const { obj } = this;
    this.ticks++;
    let samples = 0;
    let lost = 0;
    try {
      samples = readCounter(obj, 'stats', PROFILE_STAT.samples);
      lost = readCounter(obj, 'stats', PROFILE_STAT.lost);
    } catch {
      return;
    }
    this.events.update({ samples, lost, elapsedMs: Date.now() - this.started });
    if (this.target) {
      this.readCpu();
      if (this.ticks % 5 === 0) this.capture(this.target.pid);
      if (this.cfi && this.ticks % 5 === 0) this.refreshCfi(this.target.pid);
    } else if (this.ticks % 2 === 0) this.captureNew();
  }

  /** System-wide: the mappings of processes first seen in the counts. */
  private captureNew(): void {
    try {
      const d = this.obj.mapDump('counts');
      for (const e of decodeCounts(d.keys, d.values, d.count)) {
        if (this.seen.has(e.pid)) continue;
        this.seen.add(e.pid);
        this.capture(e.pid);
      }
    } catch (e) {
      this.env.log(`profile: reading counts: ${(e as Error).message}`);
    }
  }

  /** Tables for libraries mapped since the last look (dlopen), before their frames are walked again. */
  private refreshCfi(pid: number): void {
    if (!this.cfi?.ready) return;
    try {
      this.cfi?.plan(pid);
      this.cfi?.load(this.obj);
    } catch (e) {
      this.env.log(`profile: loading unwind tables for new mappings of pid ${pid}: ${(e as Error).message}`);
    }
  }

  /** The counted stacks so far (and the totals), from the unwinder or the counts map. */
  private collect(): RawStack[] {
    const { obj } = this;
    this.totals = { samples: readCounter(obj, 'stats', PROFILE_STAT.samples), lost: readCounter(obj, 'stats', PROFILE_STAT.lost) };
    if (this.dwarf) return this.dwarf.raw((id) => obj.readStack('stacks', id));
    const d = obj.mapDump('counts');
    const entries: CountEntry[] = decodeCounts(d.keys, d.values, d.count);
    if (!this.cfi && !this.host) return readStacks(entries, (id) => obj.readStack('stacks', id));
    const cfi = cfiStackReader(obj, (id) => obj.readStack('stacks', id));
    return cfi.notes(readStacks(entries, cfi.read));
  }

  private unwindInfo(): UnwindInfo {
    const { dwarf, java, mode } = this;
    // only a JVM has JIT code to name: a C program's header says nothing about perf maps
    const jit = java ? { javaAgent: true } : this.options.javaPerfMap && this.jvmPids.size > 0 ? { perfMap: true } : {};
    if (!dwarf) return { mode, ...jit, ...this.cfiInfo };
    return {
      mode,
      ...jit,
      // With the agent the unwind only has to reach the first JIT frame; what it does beyond
      // (frame-pointer guesses through JIT code, often off the copied stack) is cut by the join,
      // so "deeper than the copy" would blame the copy size for nothing.
      truncated: java ? undefined : dwarf.stats.truncated,
      unwindNsPerSample: dwarf.pool.nsPerStack(),
      ...(this.unwindModuleInfo ? { modules: this.unwindModuleInfo } : {}),
    };
  }

  private result(stacks: ProfileStack[]): ProfileResult {
    return {
      tracer: 'profile',
      unit: 'samples',
      frequency: this.options.frequency,
      samples: this.totals.samples,
      lost: this.totals.lost,
      stacks,
      unwind: this.unwindInfo(),
      ...(this.buildIds.size ? { buildIds: Object.fromEntries(this.buildIds) } : {}),
    };
  }

  private assemble(raws: RawStack[], frames: FrameCache): ProfileStack[] {
    return assemble(raws, frames.kernel, frames.user);
  }

  snapshot(): ProfileResult {
    if (this.final) return this.final;
    try {
      this.rawLast = this.collect();
    } catch {
      /* object closing: keep the last read */
    }
    // Frames are named by what a background pass has symbolized so far (one pass at a time,
    // started by snapshots only: a CLI run never pays for it). Its caches are not the final
    // ones: the final profile is symbolized afresh once the JVM's perf map is fetched.
    if (!this.liveNaming && !this.closed) {
      this.liveNaming = symbolizeStacks(this.rawLast, this.symbolizer, (pid) => this.images.get(pid), this.live.kernel, this.live.user, () => undefined)
        .catch(() => undefined)
        .finally(() => (this.liveNaming = undefined));
    }
    const live = this.result(this.assemble(this.rawLast, this.live));
    // Java frames from the agent, joined as far as its records have come in.
    return this.java ? this.java.live(live, this.rawLast, (raws) => this.assemble(raws, this.live)) : live;
  }

  async stop(): Promise<ProfileResult> {
    if (this.final) return this.final;
    clearInterval(this.timer);
    clearInterval(this.hostTimer);
    this.unwatch();
    await this.liveNaming;
    if (!this.closed) this.detach();
    const late = await this.nameJavaMethods();
    const check = this.checkCpu();
    if (check?.verdict === 'fewer') late.push(check.message);
    await symbolizeStacks(this.rawLast, this.symbolizer, (pid) => this.images.get(pid), this.named.kernel, this.named.user, this.env.log, this.buildIds);
    const kernel = kernelBuildId();
    if (kernel) this.buildIds.set('[kernel]', kernel);
    // Debug-info and frame-pointer findings are known only once modules were touched.
    const told = new Set(this.warnings);
    for (const pid of this.targets) {
      const img = this.images.get(pid);
      for (const w of img ? this.symbolizer.warnings(img, this.warnOpts) : []) if (!told.has(w)) late.push(w);
    }
    this.symbolizer.dispose();
    for (const w of late) this.env.log(`profile: ${w}`);
    if (late.length) this.events.update({ samples: this.totals.samples, lost: this.totals.lost, elapsedMs: Date.now() - this.started, warnings: late });
    this.final = this.result(this.assemble(this.rawLast, this.named));
    // Java agent: Java frames from the agent replace the target's truncated stacks
    if (this.java) this.final = await this.java.finish(this.final, this.rawLast, (raws) => this.assemble(raws, this.named));
    if (check) this.final = { ...this.final, cpuCheck: check, ...(check.verdict === 'missed' ? { problem: check.message } : {}) };
    return this.final;
  }

  /**
   * The target's CPU time now with the samples taken so far, read together: samples counted while
   * this process waits for a CPU (a loaded machine) must not meet a CPU time read before them.
   */
  private cpuMark(): CpuMark | undefined {
    if (!this.target || !sameProcess(this.target)) return undefined;
    let taken: number;
    try {
      // every sample the filter let through; the lost ones are among them
      taken = readCounter(this.obj, 'stats', PROFILE_STAT.samples);
    } catch {
      return undefined;
    }
    const ms = processCpuMs(this.target.pid);
    return ms === undefined ? undefined : { ms, taken };
  }

  /** Kept while the target lives (its exit leaves the last reading). */
  private readCpu(): void {
    this.cpuLast = this.cpuMark() ?? this.cpuLast;
  }

  /** The samples taken against the target's own CPU time over the session (read at detach). */
  private checkCpu() {
    if (!this.target) return undefined;
    const { cpuFirst: a, cpuLast: b } = this;
    const [samples, cpuMs] = a && b ? [b.taken - a.taken, b.ms - a.ms] : [this.totals.samples, undefined];
    const check = checkProfileCpu({ pid: this.target.pid, frequency: this.options.frequency, samples, cpuMs });
    this.env.log(`profile: ${check.message}`);
    return check;
  }

  /** Last read of the counts, then the BPF object closes; dwarf mode lists the target's modules before its unwinder goes. */
  private detach(): void {
    const { dwarf, options } = this;
    this.closed = true;
    // the CPU time as sampling ends (the JVM's perf map fetch after it costs CPU time unsampled)
    this.readCpu();
    try {
      this.ring?.close();
      this.rawLast = this.collect();
      const tables = this.cfi ?? this.host;
      if (tables) {
        this.env.log(cfiSummary(this.obj, tables));
        this.cfiInfo = cfiUnwindInfo(this.obj, tables);
      }
    } finally {
      this.obj.close();
    }
    if (dwarf && options.pid && this.running(options.pid)) {
      try {
        this.unwindModuleInfo = unwindModules(dwarf.modules(options.pid));
      } catch (e) {
        this.env.log(`profile: listing the modules of pid ${options.pid}: ${(e as Error).message}`);
      }
    }
    dwarf?.close();
  }

  /**
   * Captures every sampled process still alive and, with javaPerfMap, asks each of our JVMs
   * among them for its perf map, so methods compiled late are named. Returns what could not be done.
   */
  private async nameJavaMethods(): Promise<string[]> {
    const { options, env } = this;
    const pids = new Set(this.rawLast.map((r) => r.entry.pid));
    const late: string[] = [];
    for (const pid of pids) {
      if (!this.running(pid)) continue;
      this.capture(pid);
      if (options.javaPerfMap && !this.jvmPids.has(pid) && !options.pid && processInfo(pid)?.jvm && foreignOwner(pid, env.requester) === undefined) this.jvmPids.add(pid);
    }
    if (!options.javaPerfMap) return late;
    await Promise.all(
      [...this.jvmPids].filter((p) => pids.has(p) && this.running(p)).map(async (pid) => {
        try {
          await writePerfMap(pid, { timeoutMs: 8000 });
          const img = this.images.get(pid);
          if (img) this.symbolizer.refreshPerfMap(img);
        } catch (e) {
          late.push(`Java methods of pid ${pid} are not named: fetching its perf map failed: ${(e as Error).message}`);
        }
      }),
    );
    return late;
  }
}
