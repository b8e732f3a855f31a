// Off-CPU and wall-clock profiles (bpf/offcpu.bpf.c): exact time each thread spent off CPU, by
// kernel + user stack and by why it was off (sleeping, I/O, futex/lock, preempted), summed in
// the kernel per (thread, stacks, state) and read once at the end; wall mode adds the threads'
// on-CPU samples (cpu-clock, each weighing 1/frequency s) to the same totals. The result is a
// ProfileResult with unit 'us', so the flame graph, --folded and --pprof read it as a CPU profile.
//
// User stacks are walked by frame pointers in the kernel at switch-out, as bcc's offcputime
// does, not unwound by CFI from a stack copy like the CPU profiler's default: a copy (16 KiB)
// plus ~30 µs of user-space unwinding per context switch would cost far more than the 3 % this
// tracer may cost at ~50k switches/s, and the time is summed in the kernel so that nothing
// crosses to user space per switch. The price: a function that calls a libc routine built
// without frame pointers is skipped (its caller shows; the libc frame shows as the leaf).
//
// Java frames of a blocked JVM thread (--java agent, or auto for a JVM without
// -XX:+PreserveFramePointer): the JVMTI agent (../javaAgent/agent.ts) is loaded as for the CPU
// profile, but no sleeping thread is ever signalled. An interval that blocked inside a system
// call is held in the kernel until the thread is back at sys_exit, on its way to user space with
// the stack it blocked with; only then is it signalled (SIGPROF, delivered after the call
// finished) and the interval sent through a ring buffer. The agent's handler walks the Java
// stack there (AsyncGetCallTrace from the last Java frame), and the interval joins that record by
// thread and time like a CPU sample, weighing its µs. Intervals that did not block in a system
// call (preempted, page faults) keep their kernel and native stacks only.
import type { BpfObject } from '../../../native/index';
import { Symbolizer, type ProcessImage } from '../../sys/symbolize';
import type { ProfileFrame, ProfileResult, ProfileStack, ThreadState, UnwindInfo } from '../../protocol/profile';
import { PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_STORAGE } from '../../protocol/profile';
import { OFFCPU_DEFAULT_MIN_BLOCK_US, OFFCPU_MAX_MIN_BLOCK_US, WALL_DEFAULT_FREQUENCY, type OffcpuOptions } from '../../protocol/offcpu';
import { asObject, bool, int, oneOf, PID_MAX } from '../../protocol/validate';
import { fromBpfError, inputError } from '../../protocol/errors';
import { bootStartRange, checkPid, pidAlive, processInfo, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { watchTarget } from '../targetWatch';
import { writePerfMap } from '../../sys/jvm/attach';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, setRodata } from '../bpfObject';
import { onlineCpus } from '../profile/tracer';
import { assemble, readStacks, symbolizeStacks, type RawStack } from '../profile/stacks';
import { agentLibrary, agentUnavailableMessage, checkAgentTarget, foreignOwner, startJavaAgent, type JavaAgentSession, type SampleFilter } from '../javaAgent/agent';
import type { RingBufferHandle } from '../../../native/index';
import fs from 'node:fs';
import { addHeld, addOpenIntervals, decodeHeld, decodeJavaRecord, decodeStarts, decodeTotals, OFFCPU_JAVA_SIZE, OFFCPU_STAT, parseProcStack, stateOfLetter, type OffcpuEntry } from './decode';
import { unsuitableError } from '../../protocol/errors';
import { kernelRelease, releaseAtLeast } from '../../sys/kernelRelease';
import type { CountEntry } from '../profile/decode';
import { addLockFrames, addVirtualThreads, startLockSession } from '../javaLocks/tracer';
import { cfiRowCapacity, cfiStackReader, cfiSummary, CfiTables, cfiUnwindInfo, kernelWalksTables } from '../cfiTables';
import { CFI_HOST_DEFAULT_MAX_BYTES, CFI_HOST_MAX_MAX_BYTES, CFI_HOST_MIN_MAX_BYTES, HostCfiTables, tickHostTables } from '../cfiHost';

export * from './decode';

const TICK_MS = 1000;
/** The programs to load: the scheduler hooks (tp_btf), the threads' storage reader (an iterator, run at each read, never attached), the Java join's sys_exit, wall clock's sampler. */
const PROGRAMS = (wall: boolean, java: boolean) => ['switch_btf', 'thread_exit', 'dump_threads', ...(java ? ['sys_exit_btf'] : []), ...(wall ? ['on_cpu_sample'] : [])];
const NOT_ATTACHED = new Set(['dump_threads', 'on_cpu_sample']);

function readStat(obj: BpfObject, index: number): number {
  return readCounter(obj, 'stats', index);
}

/** Result stacks from the totals: each stack's value is its time in µs, and it carries its state. */
/** Kernel frames of the tracing itself at the leaf (the BPF trampoline, bpf_trace_run*): not where the thread waited. */
export function dropTracingFrames(frames: ProfileFrame[]): ProfileFrame[] {
  for (let i = Math.min(frames.length, 4) - 1; i >= 0; i--) {
    if (frames[i].kind === 'kernel' && /^(bpf_trace_run\d|__bpf_trace_|__traceiter_)/.test(frames[i].function ?? '')) return frames.slice(i + 1);
  }
  return frames;
}

export function offcpuStacks(raw: RawStack[], states: ThreadState[], totalsNs: number[], kernelFrames: Map<bigint, ProfileFrame[]>, userFrames: Map<number, Map<string, ProfileFrame[]>>): ProfileStack[] {
  const out = raw.map((r, i): ProfileStack => {
    const [s] = assemble([r], kernelFrames, userFrames);
    return { ...s, frames: dropTracingFrames(s.frames), value: Math.round(totalsNs[i] / 1000), state: states[i] };
  });
  return out.sort((a, b) => (b.value ?? 0) - (a.value ?? 0));
}

/**
 * In a JVM every sleep, park and monitor wait is a futex wait; the Java frames the agent joined
 * say which: a stack whose innermost Java frame is Thread.sleep was sleeping, not waiting for a lock.
 */
export function refineJavaStates(stacks: ProfileStack[]): ProfileStack[] {
  return stacks.map((s) => {
    if (s.state !== 'lock') return s;
    const java = s.frames.find((f) => f.javaType !== undefined || f.module === '[java]' || f.kind === 'interpreted');
    return java && /^java\.lang\.Thread\.sleep/.test(java.function ?? '') ? { ...s, state: 'sleep' } : s;
  });
}

/** µs per state over the stacks. */
export function stateTotals(stacks: ProfileStack[]): Partial<Record<ThreadState, number>> {
  const t: Partial<Record<ThreadState, number>> = {};
  for (const s of stacks) if (s.state) t[s.state] = (t[s.state] ?? 0) + (s.value ?? s.count);
  return t;
}

const readText = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

function threadIds(pid: number): number[] {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
}

/** A thread's process and name, from /proc/TID/status (undefined once it exited). */
function threadOwner(tid: number): { pid: number; comm: string } | undefined {
  const st = readText(`/proc/${tid}/status`);
  const tgid = st && /^Tgid:\s+(\d+)/m.exec(st);
  const name = st && /^Name:\s+(.*)$/m.exec(st);
  return tgid ? { pid: Number(tgid[1]), comm: name ? name[1] : '' } : undefined;
}

/** Java lock waits up to which the live snapshots of a JVM's off-CPU profile carry lock frames (the join at stop has no limit). */
const LIVE_LOCK_WAITS_MAX = 20_000;

/**
 * Threads of pid that were off CPU for the whole session (never switched out while traced, so
 * the kernel has no interval for them), as stacks weighing the whole window: their kernel stack
 * and state as /proc tells it now; their user stack was never walked.
 */
function blockedThroughout(pid: number, tids: number[], seen: Set<number>, windowUs: number): ProfileStack[] {
  const out: ProfileStack[] = [];
  for (const tid of tids) {
    if (seen.has(tid)) continue;
    const stat = readText(`/proc/${pid}/task/${tid}/stat`);
    if (!stat) continue; // exited
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    let state = stateOfLetter(stat.slice(close + 2, close + 3));
    if (!state) continue; // running now: it was on a CPU without being switched out (a busy loop)
    const nr = Number((readText(`/proc/${pid}/task/${tid}/syscall`) ?? '').split(' ')[0]);
    if (state === 'sleep' && (nr === 202 || nr === 449)) state = 'lock';
    const kernel = parseProcStack(readText(`/proc/${pid}/task/${tid}/stack`) ?? '');
    const frames: ProfileFrame[] = kernel.map((fn) => ({ address: '0x0', module: '[kernel]', function: fn, file: null, line: null, kind: 'kernel' }));
    frames.push({ address: '0x0', module: null, function: '[off CPU since before tracing began: user stack not seen]', file: null, line: null, kind: 'native' });
    out.push({ count: 1, value: windowUs, pid, tid, comm, state, frames });
  }
  return out;
}

/** Whole-host tables are read and compiled as often as the CPU profiler's (../profile/tracer.ts). */
const HOST_TICK_MS = 500;

/** Whether user stacks are walked by unwind tables: auto where the kernel runs the walk (one process or the whole host). */
function walksTables(options: OffcpuOptions): boolean {
  const unwind = options.unwind ?? 'auto';
  return unwind === 'cfi' || (unwind === 'auto' && kernelWalksTables());
}

/**
 * The whole host's tables (no --pid), met as processes block: each process's mappings when its
 * first switch-out finds none, each file compiled once a walk meets it (frame pointers through it
 * until then), within a memory cap (the CPU profiler's default unless given).
 */
function hostTablesFor(options: OffcpuOptions, env: TracerEnv): HostCfiTables | undefined {
  if (options.cfiMaxBytes !== undefined && (options.pid || !walksTables(options))) throw inputError('cfiMaxBytes (--cfi-max-mb) applies to a whole-host profile with --unwind cfi');
  // the log names files by path for root only (another user's programs stay unnamed), as for CPU
  return !options.pid && walksTables(options) ? new HostCfiTables(env.log, options.cfiMaxBytes ?? CFI_HOST_DEFAULT_MAX_BYTES, { showPaths: !env.requester || env.requester.uid === 0 }) : undefined;
}

/** --unwind cfi: the target's tables, compiled before the object is loaded (they size its map). */
function cfiTablesFor(options: OffcpuOptions, log: (m: string) => void, javaAgent: boolean): CfiTables | undefined {
  if (!options.pid || !walksTables(options)) return undefined;
  const t = new CfiTables(log);
  // the agent's Java stacks join the native stacks seen at each wait: those are whole from the start
  if (javaAgent) t.plan(options.pid);
  else t.planLater(options.pid);
  return t;
}

function refreshCfi(cfi: CfiTables, obj: BpfObject, pid: number, log: (m: string) => void): void {
  try {
    cfi.plan(pid);
    cfi.load(obj);
  } catch (e) {
    log(`offcpu: loading unwind tables for new mappings of pid ${pid}: ${(e as Error).message}`);
  }
}

/** Stack ids → addresses from the kernel's stack map or, for table-walked stacks, cfi_stacks (with why each stopped). */
function stackReader(obj: BpfObject, cfi: boolean) {
  if (!cfi) return { read: (id: number) => obj.readStack('stacks', id), notes: (raw: RawStack[]) => raw };
  return cfiStackReader(obj, (id) => obj.readStack('stacks', id));
}

export const offcpuTracer: Tracer<'offcpu'> = {
  name: 'offcpu',
  validate(raw): OffcpuOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 0, PID_MAX, 0),
      event: oneOf(o, 'event', ['offcpu', 'wall'] as const, 'offcpu'),
      minBlockUs: int(o, 'minBlockUs', 0, OFFCPU_MAX_MIN_BLOCK_US, OFFCPU_DEFAULT_MIN_BLOCK_US),
      frequency: int(o, 'frequency', 1, PROFILE_MAX_FREQUENCY, WALL_DEFAULT_FREQUENCY),
      stackStorageSize: int(o, 'stackStorageSize', 1, PROFILE_MAX_STACK_STORAGE, PROFILE_DEFAULT_STACK_STORAGE),
      javaPerfMap: bool(o, 'javaPerfMap', true),
      java: oneOf(o, 'java', ['agent', 'perfmap', 'auto'] as const, 'auto'),
      unwind: oneOf(o, 'unwind', ['auto', 'fp', 'cfi'] as const, 'auto'),
      ...(o.cfiMaxBytes !== undefined ? { cfiMaxBytes: int(o, 'cfiMaxBytes', CFI_HOST_MIN_MAX_BYTES, CFI_HOST_MAX_MAX_BYTES) } : {}),
    };
  },
  async start(options, env, events) {
    const session = new OffcpuSession(options, env, events);
    await session.attach();
    session.collect();
    return session;
  },
};

/**
 * A wall-clock profile of a JVM with its Java frames, keeping only the samples `keep` keeps (the
 * latency tracer's slow Java calls): on-CPU samples and blocked intervals each go to the agent's
 * join with their time, and nothing without a time is kept.
 */
export async function startFilteredJavaWall(options: OffcpuOptions, env: TracerEnv, keep: SampleFilter): Promise<Session<'offcpu'>> {
  const session = new OffcpuSession({ ...options, event: 'wall', java: 'agent' }, env, { update: () => undefined, ended: () => undefined }, keep);
  await session.attach();
  session.collect();
  return session;
}

type LockSession = Awaited<ReturnType<typeof startLockSession>>;

/** One off-CPU or wall-clock profile: the loaded object, the optional Java agent and lock session, and the last totals read. */
class OffcpuSession implements Session<'offcpu'> {
  readonly targets: number[];
  readonly warnings: string[] = [];
  private readonly wall: boolean;
  private readonly javaMode: NonNullable<OffcpuOptions['java']>;
  private target?: ProcessIdentity;
  private info?: ReturnType<typeof processInfo>;
  private java?: JavaAgentSession;
  private programs: string[] = [];
  private cfi?: CfiTables;
  private host?: HostCfiTables;
  private hostTimer?: NodeJS.Timeout;
  private obj!: BpfObject;
  // Java join: intervals held until sys_exit come through this ring, with the thread's signal
  private readonly javaIds = new Map<string, CountEntry>();
  private readonly commOf = new Map<number, string>();
  private ring?: RingBufferHandle;
  private readonly links: number[] = [];
  private attachedAt = 0n;
  private tidsAtStart: number[] = [];
  private jvm?: boolean;
  private locks?: LockSession;
  private started = 0;
  private symbolizer!: Symbolizer;
  private readonly images = new Map<number, ProcessImage>();
  private closed = false;
  private totals = { samples: 0, lost: 0 };
  private entries: OffcpuEntry[] = [];
  private javaRaw: RawStack[] = [];
  private readonly seen = new Set<number>();
  private ticks = 0;
  private timer?: NodeJS.Timeout;
  private unwatch: () => void = () => undefined;
  private cfiInfo: Partial<UnwindInfo> = {};
  private final?: ProfileResult;
  private raw: RawStack[] = [];
  private stoppedAt = 0n;
  private readonly liveKernel = new Map<bigint, ProfileFrame[]>();
  private readonly liveUser = new Map<number, Map<string, ProfileFrame[]>>();

  constructor(
    private readonly options: OffcpuOptions,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'offcpu'>,
    private readonly keep?: SampleFilter,
  ) {
    this.targets = options.pid ? [options.pid] : [];
    this.wall = options.event === 'wall';
    this.javaMode = options.java ?? 'auto';
  }

  /** Checks the target and kernel, starts the Java agent where it is wanted, loads the object and attaches its programs. */
  async attach(): Promise<void> {
    const { options, env } = this;
    this.checkTarget();
    await this.startAgent();
    await this.load();
    this.openJavaRing();
    await this.attachPrograms();
    this.attachedAt = process.hrtime.bigint();
    this.cfi?.loadLater(this.obj!, () => this.closed).catch((e: Error) => env.log(`offcpu: loading unwind tables: ${e.message}`));
    this.tidsAtStart = options.pid ? threadIds(options.pid) : [];
    env.log(`offcpu: attached via tp_btf${this.wall ? ` with on-CPU samples at ${options.frequency} Hz` : ''}${this.java ? ', Java stacks from the agent at each return to user space' : ''}`);
    const { info } = this;
    this.jvm = info?.jvm && foreignOwner(options.pid, env.requester) === undefined;
    // With the agent, its lock session runs alongside (../javaLocks): Java lock waits name their
    // lock (and a park's holder; a monitor's would take a safepoint per contended enter, seen in
    // the waits measured here), and on JDK 21+ virtual threads' waits are added and idle carriers marked
    this.locks = this.java ? ((await startLockSession(options.pid, env, { locks: true, vthreads: true, monitorOwners: false }).catch((e: Error) => void env.log(`offcpu: Java lock waits keep no lock frame: ${e.message}`))) ?? undefined) : undefined;
    if (info?.jvm && !info.jvm.preserveFramePointer && !this.java)
      this.warnings.push(`pid ${options.pid} is a JVM without -XX:+PreserveFramePointer: off-CPU stacks are walked by frame pointers, so Java callers above the first compiled frame are lost. Restart it with -XX:+PreserveFramePointer for whole Java stacks`);
  }

  /** The target by pid and start time, read first: the BPF programs signal and sample no other process. */
  private checkTarget(): void {
    const { options, env } = this;
    this.target = options.pid ? { pid: options.pid, startTime: checkPid(options.pid).startTime } : undefined;
    const info = (this.info = options.pid ? processInfo(options.pid) : undefined);
    if (options.pid && !info) throw inputError(`no process with pid ${options.pid} is running (check with: ps -p ${options.pid})`);
    const release = kernelRelease();
    if (!releaseAtLeast(release, 5, 15))
      throw unsuitableError(`off-CPU and wall-clock profiles need Linux 5.15 or later (this kernel is ${release}): each thread's state is kept in BPF task storage and its user registers are read with bpf_task_pt_regs. CPU profiles (ebpf-studio profile --event cpu) work on this kernel`);
    if (options.pid && this.javaMode === 'agent' && !info?.jvm) {
      checkAgentTarget(options.pid, env.requester);
      throw unsuitableError(`pid ${options.pid} is not a HotSpot JVM (no libjvm.so mapped): --java agent loads a JVMTI agent into a JVM; trace it without --java`);
    }
  }

  /** The JVMTI agent, for a JVM whose Java frames are wanted (--java agent, or auto without -XX:+PreserveFramePointer). */
  private async startAgent(): Promise<void> {
    const { options, env, info, javaMode } = this;
    if (info?.jvm && (javaMode === 'agent' || (javaMode === 'auto' && !info.jvm.preserveFramePointer))) {
      const owner = foreignOwner(options.pid, env.requester);
      if (owner !== undefined || !agentLibrary(env.assetDir)) {
        if (javaMode === 'agent') checkAgentTarget(options.pid, env.requester);
        if (javaMode === 'agent') throw unsuitableError(agentUnavailableMessage(env.assetDir));
        this.warnings.push(owner !== undefined ? `pid ${options.pid} is a JVM of uid ${owner}, not yours: no Java agent is loaded into it, so its Java frames stay unnamed` : `${agentUnavailableMessage(env.assetDir)}: blocked threads keep their kernel and native stacks only`);
      } else this.java = await startJavaAgent(options.pid, env, { unwind: 'fp', keepStacks: true, ...(this.keep ? { keep: this.keep } : {}) });
    }
  }

  private async load(): Promise<void> {
    const { options, env, java, wall } = this;
    const programs = (this.programs = PROGRAMS(wall, Boolean(java)));
    const cfi = (this.cfi = cfiTablesFor(options, env.log, Boolean(java)));
    const host = (this.host = hostTablesFor(options, env));
    let loaded: ReturnType<typeof loadFirstWorking>;
    try {
      loaded = loadFirstWorking(env, 'offcpu', [programs], (o) => {
        o.setMaxEntries('stacks', options.stackStorageSize);
        // without tables the walk's maps stay one entry each (the stacks map is preallocated)
        if (cfi) cfi.size(o, cfiRowCapacity(cfi.sizingRows), options.stackStorageSize);
        else if (host) host.size(o, options.stackStorageSize);
        else o.setMaxEntries('cfi_stacks', 1);
        setRodata(o, { target_tgid: options.pid, ...bootStartRange(this.target), min_block_ns: BigInt(options.minBlockUs) * 1000n, sample_ns: wall ? BigInt(Math.round(1e9 / options.frequency)) : 0n, java_join: Boolean(java), java_on_cpu: Boolean(java && this.keep), signal_euid: java ? java.euid : 0xffffffff, cfi_unwind: Boolean(cfi || host) });
      });
      try {
        cfi?.load(loaded.obj);
        host?.attach(loaded.obj);
      } catch (e) {
        loaded.obj.close();
        throw e;
      }
    } catch (e) {
      await java?.abort();
      throw e;
    }
    this.obj = loaded.obj;
  }

  private openJavaRing(): void {
    const { java, options } = this;
    if (java) {
      const session = java;
      this.ring = this.obj.openRingBuffer('java_samples', (batch, offsets) => {
        for (let i = 0; i + 1 < offsets.length; i++) {
          const rec = batch.subarray(offsets[i], offsets[i + 1]);
          if (rec.length < OFFCPU_JAVA_SIZE) continue;
          const r = decodeJavaRecord(rec);
          const ids = `${r.tid}/${r.userStackId}/${r.kernStackId}`;
          if (!this.javaIds.has(ids)) {
            let comm = this.commOf.get(r.tid);
            if (comm === undefined) this.commOf.set(r.tid, (comm = threadOwner(r.tid)?.comm ?? ''));
            this.javaIds.set(ids, { pid: options.pid, tid: r.tid, userStackId: r.userStackId, kernStackId: r.kernStackId, comm, count: 0 });
          }
          session.addOffcpuSample(r.tid, r.nsTid, r.ktimeNs, { userStackId: r.userStackId, kernStackId: r.kernStackId }, Math.round(r.totalNs / 1000), r.state, r.count);
        }
      });
    }
  }

  private async attachPrograms(): Promise<void> {
    const { obj, options, links, java } = this;
    try {
      for (const p of this.programs.filter((p) => !NOT_ATTACHED.has(p))) links.push(obj.attach(p));
    } catch (e) {
      this.ring?.close();
      obj.close();
      await java?.abort();
      throw fromBpfError('attaching the scheduler tracepoints (tp_btf)', e);
    }
    if (this.wall) {
      try {
        for (const cpu of onlineCpus()) links.push(obj.attachPerfEvent('on_cpu_sample', { type: 'cpu-clock', frequency: options.frequency, cpu }));
      } catch (e) {
        this.ring?.close();
        obj.close();
        await java?.abort();
        throw fromBpfError(`opening cpu-clock perf events at ${options.frequency} Hz`, e);
      }
    }
  }

  /** Counts once a tick from now on, the target's mappings kept, and the end of the target watched. */
  collect(): void {
    const { options, env, target } = this;
    this.started = Date.now();
    this.symbolizer = new Symbolizer({ log: env.log });
    if (options.pid) this.capture(options.pid);
    this.timer = setInterval(() => this.tick(), TICK_MS);
    if (this.host) {
      const tables = this.host;
      this.hostTimer = setInterval(() => tickHostTables(tables, () => this.closed, (l) => this.env.log(l), 'offcpu'), HOST_TICK_MS);
    }
    this.unwatch = target
      ? watchTarget(target, () => {
          clearInterval(this.timer);
          this.events.ended('target-exited', `pid ${target.pid} exited`);
        })
      : () => undefined;
  }

  /** The target by its start time too: its pid may be another process's by now. */
  private running(pid: number): boolean {
    const { target } = this;
    return target && pid === target.pid ? sameProcess(target) : pidAlive(pid);
  }

  private capture(pid: number): void {
    if (pid === 0 || !this.running(pid)) return;
    try {
      this.images.set(pid, this.symbolizer.captureProcess(pid));
    } catch (e) {
      this.env.log(`offcpu: cannot read the mappings of pid ${pid}: ${(e as Error).message}`);
    }
  }

  private counts(): { samples: number; lost: number } {
    const { obj } = this;
    return { samples: readStat(obj, OFFCPU_STAT.blocks) + readStat(obj, OFFCPU_STAT.samples), lost: readStat(obj, OFFCPU_STAT.lost) + readStat(obj, OFFCPU_STAT.lostStart) + readStat(obj, OFFCPU_STAT.lostTotals) };
  }

  private tick(): void {
    const { target, obj, env, cfi } = this;
    if (this.closed) return;
    this.ticks++;
    try {
      const c = this.counts();
      this.events.update({ ...c, elapsedMs: Date.now() - this.started });
    } catch {
      return;
    }
    if (target) {
      if (this.ticks % 5 === 0) this.capture(target.pid);
      // libraries loaded since (dlopen): their tables, before their frames are walked again
      if (cfi?.ready && this.ticks % 5 === 0) refreshCfi(cfi, obj, target.pid, env.log);
    } else if (this.ticks % 2 === 0) {
      // Processes can exit while we trace: their mappings are captured while alive.
      try {
        const d = obj.mapDump('totals');
        for (const e of decodeTotals(d.keys, d.values, d.count)) {
          if (this.seen.has(e.pid)) continue;
          this.seen.add(e.pid);
          this.capture(e.pid);
        }
      } catch (e) {
        env.log(`offcpu: reading totals: ${(e as Error).message}`);
      }
    }
  }

  /** The totals and the threads' held times as raw stacks (and the Java join's, into javaRaw); `final` adds the intervals still open. */
  private readTotals(final = false): RawStack[] {
    const { obj, options } = this;
    // The threads' held running totals are read before the totals map: one moved between the
    // two reads is counted twice in a live view (at most OFFCPU_AGG_MAX_NS), never lost; the
    // final read comes after the programs are detached, so nothing moves.
    this.totals = this.counts();
    const threads = obj.runIterator('dump_threads');
    const d = obj.mapDump('totals');
    this.entries = addHeld(decodeTotals(d.keys, d.values, d.count), decodeHeld(threads));
    if (final) {
      // Intervals still open: off CPU from the last switch-out until now (the same clock as
      // bpf_ktime_get_ns: CLOCK_MONOTONIC), so a thread asleep at the end is not left out.
      const now = process.hrtime.bigint();
      const open = [];
      for (const o of decodeStarts(threads)) {
        const ns = Number(now - o.ts);
        if (ns < options.minBlockUs * 1000 || ns < 0) continue;
        const owner = threadOwner(o.tid);
        if (!owner || (options.pid && owner.pid !== options.pid)) continue;
        open.push({ ...o, ...owner, ns });
      }
      // Java join: intervals held for a sys_exit that did not come before the end
      if (this.java) {
        const p = obj.mapDump('pending');
        for (let i = 0; i < p.count; i++) {
          const r = decodeJavaRecord(p.values.subarray(i * OFFCPU_JAVA_SIZE, (i + 1) * OFFCPU_JAVA_SIZE));
          const owner = threadOwner(r.tid);
          open.push({ tid: r.tid, pid: options.pid, comm: owner?.comm ?? '', ns: r.totalNs, userStackId: r.userStackId, kernStackId: r.kernStackId, state: r.state, ts: 0n });
        }
      }
      this.entries = addOpenIntervals(this.entries, open);
    }
    const read = stackReader(obj, Boolean(this.cfi || this.host));
    const stacks = read.notes(readStacks(this.entries, read.read));
    this.javaRaw = read.notes(readStacks([...this.javaIds.values()], read.read));
    return stacks;
  }

  private result(stacks: ProfileStack[]): ProfileResult {
    const { options, totals, java } = this;
    return {
      tracer: 'profile',
      unit: 'us',
      event: options.event,
      states: stateTotals(stacks),
      frequency: this.wall ? options.frequency : 0,
      samples: totals.samples,
      lost: totals.lost,
      stacks,
      // the header says where Java frames came from, and nothing about JIT for a native program
      unwind: { mode: this.cfi || this.host ? 'cfi' : 'fp', ...this.cfiInfo, ...(java ? { javaAgent: true } : this.jvm && options.javaPerfMap ? { perfMap: true } : {}) },
    };
  }

  snapshot(): ProfileResult {
    const { java, locks, options, liveKernel, liveUser } = this;
    if (this.final) return this.final;
    try {
      this.raw = this.readTotals();
    } catch {
      /* closing: keep the last read */
    }
    const live = this.result(offcpuStacks(this.raw, this.entries.map((e) => e.state), this.entries.map((e) => e.totalNs), liveKernel, liveUser));
    if (!java) return live;
    const joined = java.live(live, [...this.raw, ...this.javaRaw], (raws) => assemble(raws, liveKernel, liveUser).map((st) => ({ ...st, frames: dropTracingFrames(st.frames) })));
    const refined = refineJavaStates(joined.stacks);
    if (!locks) return { ...joined, stacks: refined, states: stateTotals(refined) };
    // The lock frames live too: the agent's file is read from where the last read ended, and
    // the join is the same as at stop, over the waits seen so far. The join compares each
    // lock-state stack with every wait, so past LIVE_LOCK_WAITS_MAX waits (a lock handed over
    // thousands of times a second) the live view goes without them; the final result has them.
    try {
      locks.read();
    } catch (e) {
      this.env.log(`offcpu: reading the Java lock waits: ${(e as Error).message}`);
    }
    if (locks.model.waits.length > LIVE_LOCK_WAITS_MAX) return { ...joined, stacks: refined, states: stateTotals(refined) };
    const withLocks = addVirtualThreads(addLockFrames(refined, locks.model, options.pid), locks.model, options.pid);
    return { ...joined, stacks: withLocks, states: stateTotals(withLocks) };
  }

  async stop(): Promise<ProfileResult> {
    if (this.final) return this.final;
    clearInterval(this.timer);
    this.unwatch();
    if (!this.closed) this.detachAndRead();
    const { options, env, images, symbolizer, raw, javaRaw, entries } = this;
    const pids = new Set(raw.map((r) => r.entry.pid));
    for (const pid of pids) this.capture(pid);
    if (this.jvm && options.javaPerfMap && this.running(options.pid)) {
      try {
        await writePerfMap(options.pid, { timeoutMs: 8000 });
        const img = images.get(options.pid);
        if (img) symbolizer.refreshPerfMap(img);
      } catch (e) {
        env.log(`offcpu: Java methods of pid ${options.pid} are not named: fetching its perf map failed: ${(e as Error).message}`);
      }
    }
    const kernelFrames = new Map<bigint, ProfileFrame[]>();
    const userFrames = new Map<number, Map<string, ProfileFrame[]>>();
    await symbolizeStacks([...raw, ...javaRaw], symbolizer, (pid) => images.get(pid), kernelFrames, userFrames, env.log);
    symbolizer.dispose();
    const stacks = offcpuStacks(raw, entries.map((e) => e.state), entries.map((e) => e.totalNs), kernelFrames, userFrames);
    if (options.pid) {
      const windowUs = Number((this.stoppedAt - this.attachedAt) / 1000n);
      stacks.push(...blockedThroughout(options.pid, this.tidsAtStart, new Set(entries.map((e) => e.tid)), windowUs));
    }
    return this.finish(stacks, kernelFrames, userFrames);
  }

  /** Detaches, reads the totals a last time (open intervals included) and closes the object. */
  private detachAndRead(): void {
    const { obj, env } = this;
    const tables = this.cfi ?? this.host;
    this.closed = true;
    clearInterval(this.hostTimer);
    try {
      for (const l of this.links.splice(0)) obj.detach(l);
      this.raw = this.readTotals(true);
      const st = (k: keyof typeof OFFCPU_STAT) => readStat(obj, OFFCPU_STAT[k]);
      if (tables) {
        env.log(cfiSummary(obj, tables));
        this.cfiInfo = cfiUnwindInfo(obj, tables);
      }
      env.log(`offcpu: ${st('switches')} switch-outs: stacks walked ${st('walks')} (${st('uncached')} of them preempted outside a system call's return, deeper than the signature reads, or kernel threads: never cached), reused ${st('reused')} (where the thread blocked last time); ${st('checks')} reuses checked by a walk, ${st('mismatch')} found other stacks`);
      this.ring?.close();
    } finally {
      obj.close();
    }
    this.stoppedAt = process.hrtime.bigint();
  }

  /** The final result: Java frames joined by the agent, then the lock frames. */
  private async finish(stacks: ProfileStack[], kernelFrames: Map<bigint, ProfileFrame[]>, userFrames: Map<number, Map<string, ProfileFrame[]>>): Promise<ProfileResult> {
    const { java, locks, options } = this;
    this.final = this.result(stacks);
    if (java) {
      const joined = await java.finish(this.final, [...this.raw, ...this.javaRaw], (raws) => assemble(raws, kernelFrames, userFrames).map((st) => ({ ...st, frames: dropTracingFrames(st.frames) })));
      const refined = refineJavaStates(joined.stacks);
      this.final = { ...joined, stacks: refined, states: stateTotals(refined) };
    }
    if (locks) {
      await locks.stop();
      const stacks = addVirtualThreads(addLockFrames(this.final.stacks, locks.model, options.pid), locks.model, options.pid);
      this.final = { ...this.final, stacks, states: stateTotals(stacks) };
    }
    return this.final;
  }
}
