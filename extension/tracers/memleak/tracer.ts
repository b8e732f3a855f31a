// The memleak tracer: outstanding allocations per allocation stack, for a running process
// (attach), a command started under tracing (launch), or the kernel (kmem tracepoints).
// Decoders mirror bpf/memleak.h (see memleakDecode.ts). Reports read the whole allocs map, so
// the numbers (and the minimum-age filter) are exact rather than estimated from totals.
//
// Symbolizing a process that has exited: stacks are symbolized at every report while the
// target lives (cached by stack id), and in launch mode the target is held at libc's exit()
// (a uprobe sends it SIGSTOP, announced through a ring buffer) until its maps are captured and
// every outstanding stack is symbolized; then it continues with SIGCONT, its atexit handlers and
// destructors still traced, and the final report is read from the maps once it is gone.
import fs from 'node:fs';
import path from 'node:path';
import type { BpfObject, RingBufferHandle } from '../../../native/index';
import { Symbolizer, type Frame, type ProcessImage } from '../../sys/symbolize';
import { MEMLEAK_DEFAULT_MAX_OUTSTANDING, type MemleakOptions, type MemleakResult } from '../../protocol/memleak';
import { asObject, bool, int, num, oneOf, str, strArray, PID_MAX, type Raw } from '../../protocol/validate';
import { fromBpfError, inputError, StudioError, unsuitableError } from '../../protocol/errors';
import { bootStartRange, checkPid, identify, mapsOrExplain, readStat, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { ensureTracefs } from '../../sys/tracefs';
import type { Mapping } from '../../sys/proc/maps';
import { reachMapped } from '../../sys/proc/mappedFile';
import { withElf } from '../../sys/elf/elf';
import { checkBinary, lacksFramePointers } from '../../sys/elf/binaryChecks';
import { requireElfFile } from '../../sys/elf/fileCheck';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, records, setRodata } from '../bpfObject';
import { TARGET_WATCH_MS } from '../targetWatch';
import { ProcessActivity } from './activity';
import { MEMLEAK_DEFAULT_STACK_COPY, MEMLEAK_MAX_STACK_COPY, MemleakDwarfStacks } from './dwarf';
import { launchStopped, type StoppedChild } from '../launchStopped';
import { aggregate, CNT, decodeAllocDump, decodeExitEvent } from './decode';
import { exitMessage, LeakReports, liveUpdate, StackFrames, toStack } from './report';
import { allocatorLibBlocker, glibcBlocker, preloadBlocker, preloadLibPath, startPreload } from './preload';
import { injectRefusal, startInject } from './inject';
import { MEMLEAK_MODES } from '../../protocol/memleak';
import { resolveCommand } from '../launchStopped';
import { cfiRowCapacity, cfiSummary, CfiTables, isCfiStackId, kernelWalksTables, readCfiStack } from '../cfiTables';

interface Probe {
  symbol: string;
  program: string;
  /** also attach the shared return program */
  ret: boolean;
  required?: boolean;
}

const ALLOCATOR_PROBES: Probe[] = [
  { symbol: 'malloc', program: 'malloc_enter', ret: true, required: true },
  { symbol: 'calloc', program: 'calloc_enter', ret: true, required: true },
  { symbol: 'realloc', program: 'realloc_enter', ret: true, required: true },
  { symbol: 'free', program: 'free_enter', ret: false, required: true },
  { symbol: 'reallocarray', program: 'reallocarray_enter', ret: true },
  { symbol: 'posix_memalign', program: 'posix_memalign_enter', ret: true },
  { symbol: 'aligned_alloc', program: 'aligned_alloc_enter', ret: true },
  { symbol: 'memalign', program: 'aligned_alloc_enter', ret: true },
  { symbol: 'valloc', program: 'malloc_enter', ret: true },
  { symbol: 'pvalloc', program: 'pvalloc_enter', ret: true },
];
const MMAP_PROBES: Probe[] = [
  { symbol: 'mmap', program: 'mmap_enter', ret: true },
  { symbol: 'munmap', program: 'munmap_enter', ret: false },
];
// operator new/new[] (plain, nothrow, aligned): their callers are the allocating lines. Without
// these, the stack at malloc's return starts inside libstdc++ (no frame pointers), losing the
// caller of `new`. Deletes reach free(), which the libc probes see.
const CXX_PROBES: Probe[] = ['_Znwm', '_Znam', '_ZnwmRKSt9nothrow_t', '_ZnamRKSt9nothrow_t', '_ZnwmSt11align_val_t', '_ZnamSt11align_val_t'].map((symbol) => ({ symbol, program: 'malloc_enter', ret: true }));

const USER_PROGRAMS = ['malloc_enter', 'calloc_enter', 'realloc_enter', 'reallocarray_enter', 'posix_memalign_enter', 'aligned_alloc_enter', 'pvalloc_enter', 'mmap_enter', 'alloc_exit', 'free_enter', 'munmap_enter', 'exit_enter'];
const KERNEL_TRACEPOINTS: [string, string][] = [
  ['kmalloc_tp', 'kmalloc'],
  ['kmem_cache_alloc_tp', 'kmem_cache_alloc'],
  ['mm_page_alloc_tp', 'mm_page_alloc'],
  ['kfree_tp', 'kfree'],
  ['kmem_cache_free_tp', 'kmem_cache_free'],
  ['mm_page_free_tp', 'mm_page_free'],
];

/** Distinct stacks the kernel walk keeps (cfi_stacks), as many as the frame-pointer stack map. */
const MEMLEAK_CFI_STACKS = 16384;

const LIBC = /\/(libc\.so\.6|libc-[\d.]+\.so|libc\.musl-[^/]+\.so\.1|ld-musl-[^/]+\.so\.1)$/;
const LIBSTDCXX = /\/libstdc\+\+\.so(\.\d+)*$/;
const SYSTEM_LIBSTDCXX = ['/usr/lib/x86_64-linux-gnu/libstdc++.so.6', '/usr/lib/aarch64-linux-gnu/libstdc++.so.6', '/usr/lib64/libstdc++.so.6', '/lib64/libstdc++.so.6'];

function launchOptions(o: Raw): MemleakOptions['launch'] {
  const l = asObject(o.launch, 'launch');
  const command = strArray(l, 'command', 4096);
  if (command.length === 0 || command[0] === '') throw inputError('launch.command must name a program to run');
  let env: Record<string, string> | undefined;
  if (l.env !== undefined && l.env !== null) {
    const e = asObject(l.env, 'launch.env');
    env = {};
    for (const [k, v] of Object.entries(e)) {
      if (typeof v !== 'string' || k.includes('=') || k.includes('\0') || v.includes('\0')) throw inputError(`launch.env.${k} must be a string (no "=" in the name, no NUL)`);
      env[k] = v;
    }
  }
  const output = l.output ?? 'capture';
  if (output !== 'inherit' && output !== 'stderr' && output !== 'capture') throw inputError('launch.output must be inherit, stderr or capture');
  return {
    command,
    cwd: l.cwd === undefined ? undefined : str(l, 'cwd'),
    env,
    uid: l.uid === undefined ? undefined : int(l, 'uid', 0, 0xfffffffe),
    gid: l.gid === undefined ? undefined : int(l, 'gid', 0, 0xfffffffe),
    output,
  };
}

/** A path libbpf can open for the file the target maps (through /proc/PID/root in containers). */
function targetPath(pid: number, file: string): string {
  try {
    if (fs.realpathSync(`/proc/${pid}/root`) === '/') return file;
  } catch {
    return file;
  }
  return `/proc/${pid}/root${file}`;
}

function findMapped(maps: Mapping[], re: RegExp): string | undefined {
  return maps.find((m) => re.test(m.path) && !m.deleted)?.path;
}

/** --unwind cfi is a walk in BPF of a running process's tables: refused where it cannot be that. */
function cfiUnwindChecked<U extends string>(unwind: U, mode: string, pid: number | undefined, kernel: boolean): U {
  if (unwind !== 'cfi') return unwind;
  if (kernel) throw inputError('--unwind cfi walks user stacks: kernel allocations (--kernel) have kernel stacks');
  if (pid === undefined) throw inputError('--unwind cfi needs --pid: the unwind tables are those of a running process (a launched command is traced by preloading, which unwinds by CFI in the process)');
  if (mode === 'preload' || mode === 'inject') throw inputError(`--unwind cfi walks stacks in the kernel, from uprobes: it cannot be used with --mode ${mode}`);
  return unwind;
}

/**
 * --unwind auto in uprobe mode: a stack copy per recorded allocation costs more than the
 * frame-pointer walk in the target and tens of µs of unwinding in the tracer (bench "memleak CFI
 * leak stacks"), which an exact, or finely sampled, trace of a malloc-heavy program cannot keep up
 * with (copies the tracer falls behind on leave their allocations without a stack). So auto takes
 * CFI stacks only where they are needed: an executable without frame pointers, whose callers the
 * walk would lose; a running process's by its unwind tables walked in BPF (nothing copied, ~1 µs
 * a stack), a launched one (no tables before it execs) by stack copies. One built with frame
 * pointers keeps the cheap walk: its allocating functions call malloc, so they are no leaves and
 * have their frames.
 */
function userStacks(options: MemleakOptions, exe: string, attach: boolean): 'dwarf' | 'fp' | 'cfi' {
  if (options.unwind === 'dwarf' || options.unwind === 'fp' || options.unwind === 'cfi') return options.unwind;
  let noFp: boolean;
  try {
    noFp = lacksFramePointers(checkBinary(exe));
  } catch {
    noFp = true;
  }
  if (!noFp) return 'fp';
  return attach && kernelWalksTables() ? 'cfi' : 'dwarf';
}

export const memleakTracer: Tracer<'memleak'> = {
  name: 'memleak',
  validate(raw): MemleakOptions {
    const o = asObject(raw, 'options');
    const kernel = bool(o, 'kernel', false);
    const pid = o.pid === undefined || o.pid === null ? undefined : int(o, 'pid', 1, PID_MAX);
    const launch = o.launch === undefined || o.launch === null ? undefined : launchOptions(o);
    if (pid !== undefined && launch) throw inputError('give either pid (attach to a running process) or launch (start a command), not both');
    if (!kernel && pid === undefined && !launch) throw inputError('memleak needs a target: pid (a running process) or launch (a command to start), or kernel: true');
    const minSize = int(o, 'minSize', 0, Number.MAX_SAFE_INTEGER, 0);
    const maxSize = int(o, 'maxSize', 0, Number.MAX_SAFE_INTEGER, 0);
    if (maxSize && maxSize < minSize) throw inputError(`maxSize (${maxSize}) is smaller than minSize (${minSize})`);
    const allocatorLib = o.allocatorLib === undefined ? undefined : str(o, 'allocatorLib');
    const symbolPrefix = o.symbolPrefix === undefined ? undefined : str(o, 'symbolPrefix', 64);
    if (symbolPrefix !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(symbolPrefix)) throw inputError(`symbolPrefix "${symbolPrefix}" is not a C identifier prefix (e.g. je_)`);
    if (allocatorLib !== undefined && !path.isAbsolute(allocatorLib)) throw inputError(`allocatorLib must be an absolute path, got "${allocatorLib}"`);
    const mode = oneOf(o, 'mode', MEMLEAK_MODES, 'auto');
    if (mode === 'preload' && !launch) throw inputError('mode preload needs a command to launch: a running process (pid) or the kernel cannot be preloaded; use mode inject, uprobe or auto');
    if (mode === 'inject' && pid === undefined) throw inputError('mode inject attaches to a running process (pid); a launched command is preloaded (mode preload or auto)');
    return {
      mode,
      pid,
      launch,
      kernel,
      minAgeMs: num(o, 'minAgeMs', 0, 7 * 24 * 3600 * 1000, 0),
      sampleRate: int(o, 'sampleRate', 1, 1 << 30, 1),
      sampleBytes: int(o, 'sampleBytes', 0, 2 ** 40, 0),
      minSize,
      maxSize,
      top: int(o, 'top', 0, 100000, 10),
      intervalS: num(o, 'intervalS', 0.1, 3600, 5),
      maxOutstanding: int(o, 'maxOutstanding', 1, 100_000_000, MEMLEAK_DEFAULT_MAX_OUTSTANDING),
      allocatorLib,
      symbolPrefix,
      unwind: cfiUnwindChecked(oneOf(o, 'unwind', ['auto', 'dwarf', 'fp', 'cfi'] as const, 'auto'), mode, pid, kernel),
      stackCopyBytes: int(o, 'stackCopyBytes', 1024, MEMLEAK_MAX_STACK_COPY, MEMLEAK_DEFAULT_STACK_COPY),
    };
  },

  async start(options, env, events) {
    if (options.pid !== undefined) checkPid(options.pid);
    if (options.allocatorLib) requireElfFile(options.allocatorLib, 'allocatorLib');
    const warnings: string[] = [];
    // the table walk runs in BPF: it needs the uprobes, whatever auto would pick
    if (options.unwind === 'cfi') options = { ...options, mode: 'uprobe' };
    const why = preloadRefusal(options, env.assetDir);
    if (why === undefined) return startPreload(options, env, events, warnings);
    if (why) warnings.push(`${why}: tracing with uprobes instead`);
    const noInject = injectRefusal(options, env);
    if (noInject === undefined) return startInject(options, env, events, warnings);
    if (noInject && options.mode === 'inject') throw new StudioError('unsuitable', `cannot inject the leak tracer: ${noInject}. Use --mode uprobe (or auto) to trace it with uprobes`);
    if (noInject) warnings.push(`${noInject}, so the leak tracer cannot be injected: tracing with uprobes instead`);
    const session = new UprobeLeakSession(options, env, events, warnings);
    await session.launch();
    session.attach();
    session.collect();
    return session;
  },
};

/**
 * A leak session by uprobes (kernel tracepoints with `kernel`): the allocator's probes on one
 * process, or on a command launched stopped and held at its exit so its stacks are named before
 * it is gone; the outstanding allocations read and symbolized every interval.
 */
class UprobeLeakSession implements Session<'memleak'> {
  private readonly t0 = process.hrtime.bigint();
  private readonly reports: LeakReports;
  private sym!: Symbolizer;
  private readonly frames = new StackFrames();
  private readonly timers: NodeJS.Timeout[] = [];
  private launched?: StoppedChild;
  private pid = 0;
  private target?: ProcessIdentity;
  private obj!: BpfObject;
  private dwarf?: MemleakDwarfStacks;
  /** --unwind cfi: the target's unwind tables, walked by the BPF programs */
  private cfi?: CfiTables;
  private copies?: RingBufferHandle;
  private rb?: RingBufferHandle;
  private probedLibc = '';
  private image?: ProcessImage;
  private mapsText = '';
  /** a running process that used CPU while no allocation was seen is said, not reported as leak-free */
  private activity?: ProcessActivity;
  // the hold at exit (launch mode)
  private holding: Promise<unknown> = Promise.resolve();
  private holdBusy = false;
  private holdsHandled = 0;
  private lastHoldAt = 0;

  constructor(
    private readonly options: MemleakOptions,
    private readonly env: TracerEnv,
    events: SessionEvents<'memleak'>,
    readonly warnings: string[],
  ) {
    this.reports = new LeakReports(events, () => this.detach());
  }

  get targets(): number[] {
    return this.pid ? [this.pid] : [];
  }

  /** Starts the command stopped (launch mode), and identifies the target. */
  async launch(): Promise<void> {
    const options = this.options;
    if (options.launch) this.launched = await launchStopped(this.env.assetDir, options.launch, (t) => (this.reports.output += t));
    this.pid = this.launched?.pid ?? options.pid ?? 0;
    // The target by pid and start time (a launched program keeps its launcher's across exec): no
    // later process that gets the pid is stopped at exit or counted.
    this.target = this.pid ? identify(this.pid) : undefined;
    if (this.pid && !this.target) {
      this.abandon();
      throw new StudioError('input', `process ${this.pid} exited`);
    }
  }

  private abandon(): void {
    this.launched?.child.kill('SIGKILL');
  }

  /** Loads and attaches the probes; opens the stack copies' ring buffer when unwinding by CFI. */
  attach(): void {
    const { options, env, pid, launched } = this;
    // A launched program is still the stopped launcher here: judge the binary it will exec.
    const stacks = options.kernel ? 'fp' : userStacks(options, launched?.exe ?? `/proc/${pid}/exe`, !launched);
    const dwarfStacks = stacks === 'dwarf';
    try {
      this.cfi = stacks === 'cfi' ? this.planCfi() : undefined;
      this.obj = this.load(dwarfStacks);
    } catch (e) {
      this.abandon();
      throw e;
    }
    const tAttach = Date.now();
    try {
      if (options.kernel) {
        ensureTracefs();
        for (const [prog, tp] of KERNEL_TRACEPOINTS) this.obj.attachTracepoint(prog, 'kmem', tp);
      } else {
        this.probedLibc = attachUser(this.obj, pid, options, launched, this.warnings, env.log);
      }
    } catch (e) {
      this.obj.close();
      this.abandon();
      throw e instanceof StudioError ? e : fromBpfError('attaching memleak probes', e);
    }
    env.log(`memleak: loaded and attached in ${Date.now() - tAttach} ms`);
    if (dwarfStacks) this.openCopies();
  }

  /**
   * --unwind cfi: the target's tables compiled before the probes attach (they size the maps, and
   * the allocations right after attaching get whole stacks too).
   */
  private planCfi(): CfiTables {
    if (!kernelWalksTables()) throw unsuitableError('--unwind cfi needs kernel 5.17 or later (bpf_loop): use --unwind dwarf');
    const cfi = new CfiTables(this.env.log);
    cfi.plan(this.pid);
    return cfi;
  }

  private load(dwarfStacks: boolean): BpfObject {
    const { options, env, pid, target, cfi } = this;
    const programs = options.kernel ? KERNEL_TRACEPOINTS.map(([p]) => p) : USER_PROGRAMS;
    const obj = loadFirstWorking(env, 'memleak', [programs], (o) => {
      o.setMaxEntries('allocs', options.maxOutstanding ?? MEMLEAK_DEFAULT_MAX_OUTSTANDING);
      // without tables the walk's maps stay one entry each
      if (cfi) cfi.size(o, cfiRowCapacity(cfi.plannedRows), MEMLEAK_CFI_STACKS);
      else o.setMaxEntries('cfi_stacks', 1);
      if (cfi) setRodata(o, { cfi_unwind: true });
      if (dwarfStacks) {
        o.setMaxEntries('copy_scratch', env.addon.numPossibleCpus());
        o.setMaxEntries('stack_copies', 16 << 20);
        setRodata(o, { dwarf_stacks: true, stack_copy_bytes: options.stackCopyBytes ?? MEMLEAK_DEFAULT_STACK_COPY });
      }
      setRodata(o, {
        target_pid: pid,
        ...bootStartRange(target),
        min_size: BigInt(options.minSize),
        max_size: options.maxSize ? BigInt(options.maxSize) : (1n << 64n) - 1n,
        sample_rate: BigInt(options.sampleRate),
        sample_bytes: BigInt(options.sampleBytes ?? 0),
        hold_at_exit: Boolean(this.launched),
      });
    }).obj;
    try {
      cfi?.load(obj);
    } catch (e) {
      obj.close();
      throw e;
    }
    return obj;
  }

  private openCopies(): void {
    const dwarf = (this.dwarf = new MemleakDwarfStacks(this.env.addon, this.env.log));
    // Attach mode: the process may exit right after its last allocation. (A launched one is
    // stopped before its loader ran, with no libraries mapped yet; its maps are read at the first copy.)
    if (this.pid && !this.launched) dwarf.pool.prime(this.pid);
    this.copies = this.obj.openRingBuffer(
      'stack_copies',
      (batch, offsets) => {
        for (const rec of records(batch, offsets)) {
          try {
            dwarf.add(rec);
          } catch (e) {
            this.env.log(`memleak: a stack copy could not be unwound: ${(e as Error).message}`);
          }
        }
        // reuse: ~80 MB/s of copies at 10k allocations/s; add() keeps nothing of a record.
      },
      { reuse: true },
    );
  }

  /** The interval reports, the hold at exit and the watch of the target; then the program runs. */
  collect(): void {
    const { options, launched, pid, target } = this;
    this.sym = new Symbolizer({ log: this.env.log });
    this.activity = !options.kernel && !launched ? new ProcessActivity(pid) : undefined;
    this.timers.push(setInterval(() => void this.tick(), options.intervalS * 1000));
    this.rb = this.obj.openRingBuffer('exits', (batch, offsets) => {
      if (offsets.length >= 2) this.handleHold(decodeExitEvent(batch.subarray(offsets[0], offsets[1])).tgid);
    });
    if (launched) {
      this.timers.push(setInterval(() => this.watchHold(), 100));
      void launched.exited.then((exit) => this.finish(exitMessage(options.launch!.command[0], exit)));
    } else if (target && !options.kernel) {
      this.timers.push(
        setInterval(() => {
          if (!sameProcess(target)) void this.finish(`process ${pid} exited`);
        }, TARGET_WATCH_MS),
      );
    }
    this.refreshImage();
    if (launched) process.kill(pid, 'SIGCONT');
  }

  private detach(): void {
    const t = Date.now();
    for (const timer of this.timers) clearInterval(timer);
    this.rb?.close();
    this.copies?.close();
    if (this.cfi) this.env.log(cfiSummary(this.obj, this.cfi));
    this.obj.close();
    this.dwarf?.close();
    this.sym.dispose();
    this.env.log(`memleak: detached in ${Date.now() - t} ms`);
  }

  // ---- symbolization --------------------------------------------------------------------
  private refreshImage(): void {
    if (this.options.kernel || !this.pid) return;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${this.pid}/maps`, 'utf8');
    } catch {
      return; // gone: keep the last image
    }
    if (text === this.mapsText) return;
    this.mapsText = text;
    this.refreshCfi();
    try {
      this.image = this.sym.captureProcess(this.pid);
      const fix = this.dwarf || this.cfi ? { stacks: 'cfi' as const } : { stacks: 'fp' as const, fpFix: 'or trace with --unwind cfi (a running process) or dwarf, which unwind by CFI' };
      for (const w of this.sym.warnings(this.image, fix)) if (!this.warnings.includes(w)) this.warnings.push(w);
    } catch (e) {
      this.env.log(`memleak: capturing the maps of ${this.pid} failed: ${(e as Error).message}`);
    }
  }

  private async symbolize(ids: number[]): Promise<void> {
    const todo = this.frames.todo(ids);
    if (!todo.length) return;
    const stacks = todo.map((id) => [...this.readStack(id)]);
    const addrs = stacks.flat();
    const t = Date.now();
    let resolved: Frame[] | undefined;
    try {
      // Every frame is a return address: user stacks are taken at the uretprobe, and kernel
      // stacks at a tracepoint start at its caller.
      const returnAddresses = addrs.map(() => true);
      if (this.options.kernel) resolved = await this.sym.symbolizeKernel(addrs, { returnAddresses });
      else if (this.image) resolved = await this.sym.symbolizeUser(this.image, addrs, { returnAddresses });
    } catch (e) {
      this.env.log(`memleak: symbolization failed: ${(e as Error).message}`);
    }
    this.env.log(`memleak: symbolized ${todo.length} stacks (${addrs.length} frames) in ${Date.now() - t} ms`);
    this.frames.store(todo, stacks, resolved);
  }

  private readStack(id: number): BigUint64Array {
    if (this.dwarf?.isInterned(id)) return this.dwarf.stack(id);
    if (this.cfi && isCfiStackId(id)) return readCfiStack(this.obj, id).pcs;
    return this.obj.readStack('stack_traces', id);
  }

  /** Tables for libraries the target mapped since (dlopen): compiled once, their rows added. */
  private refreshCfi(): void {
    if (!this.cfi || !this.obj) return;
    try {
      this.cfi.plan(this.pid);
      this.cfi.load(this.obj);
    } catch (e) {
      this.env.log(`memleak: loading unwind tables for new mappings of pid ${this.pid}: ${(e as Error).message}`);
    }
  }

  // ---- reading ----------------------------------------------------------------------------
  private counter(i: number): number {
    return readCounter(this.obj, 'counters', i);
  }

  private dropped(): number {
    return this.counter(CNT.allocsFull) + this.counter(CNT.stackLost) + this.counter(CNT.totalsFull) + this.counter(CNT.pendingFull);
  }

  /** Reads the allocs map and symbolizes the stacks to report (all of them when `all`). */
  private async measure(nowNs: bigint, all: boolean) {
    const { options, dwarf } = this;
    const allocs = decodeAllocDump(this.obj.mapDump('allocs'));
    const aggs = aggregate(dwarf ? dwarf.remap(allocs) : allocs, nowNs, options.minAgeMs, options.sampleBytes ?? 0);
    const shown = options.top ? aggs.slice(0, options.top) : aggs;
    await this.symbolize((all ? aggs : shown).map((a) => a.stackId));
    return { aggs, stacks: shown.map((a) => toStack(a, nowNs, this.frames.of(a.stackId))) };
  }

  private async resultAt(nowNs: bigint): Promise<MemleakResult> {
    const { options, pid, activity } = this;
    const { stacks } = await this.measure(nowNs, false);
    const r: MemleakResult = { tracer: 'memleak', pid, stacks, dropped: this.dropped(), lost: this.counter(CNT.exitLost), mode: options.kernel ? 'kernel' : 'uprobe' };
    if (options.sampleBytes) r.sampleBytes = options.sampleBytes;
    if (activity) {
      r.allocationsSeen = this.counter(CNT.allocs) + this.counter(CNT.allocsFull);
      const problem = activity.silence(r.allocationsSeen, this.probedLibc);
      if (problem) r.problem = problem;
    }
    return r;
  }

  private tick(): Promise<void> {
    return this.reports
      .serial(async () => {
        if (this.reports.closed) return;
        this.refreshImage();
        const now = process.hrtime.bigint();
        const { aggs, stacks } = await this.measure(now, false);
        this.reports.update(liveUpdate(Number((now - this.t0) / 1_000_000n), aggs, stacks, this.dropped(), this.options.sampleBytes));
      })
      .catch((e) => this.env.log(`memleak: report failed: ${(e as Error).message}`));
  }

  // ---- the hold at exit (launch mode) ---------------------------------------------------
  private handleHold(tgid: number): void {
    this.holdBusy = true;
    this.holding = this.reports
      .serial(async () => {
        try {
          if (this.reports.closed) return;
          // The SIGSTOP is queued before the event; wait until it has taken effect (bounded).
          const until = Date.now() + 500;
          while (readStat(tgid)?.state !== 't' && readStat(tgid)?.state !== 'T' && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
          // Stack copies travel apart from the exit event: let those already sent be unwound.
          while (this.dwarf && this.dwarf.added + this.counter(CNT.copyLost) < this.counter(CNT.allocs) && Date.now() < until + 500) await new Promise((r) => setTimeout(r, 5));
          this.refreshImage();
          await this.measure(process.hrtime.bigint(), true);
        } finally {
          this.holdsHandled++;
          this.lastHoldAt = Date.now();
          this.holdBusy = false;
          cont(tgid);
        }
      })
      .catch((e) => this.env.log(`memleak: symbolizing at exit failed: ${(e as Error).message}`));
  }

  /**
   * A held program must never stay stopped: if an event went missing, or a SIGCONT raced
   * ahead of its SIGSTOP, this notices the stopped state and lets the program go on.
   */
  private watchHold(): void {
    if (this.reports.closed || this.holdBusy || readStat(this.pid)?.state !== 'T') return;
    if (this.counter(CNT.exitHolds) > this.holdsHandled) this.handleHold(this.pid);
    else if (Date.now() - this.lastHoldAt < 3000) cont(this.pid);
  }

  private async finish(message: string): Promise<void> {
    if (this.reports.closed || this.reports.result) return;
    const endNs = process.hrtime.bigint();
    await this.holding;
    await this.reports.finish(message, () => this.resultAt(endNs), () => Number((endNs - this.t0) / 1_000_000n));
  }

  private empty(): MemleakResult {
    return { tracer: 'memleak', pid: this.pid, stacks: [], dropped: 0, lost: 0 };
  }

  snapshot(): MemleakResult {
    return this.reports.result ?? this.empty();
  }

  async stop(): Promise<MemleakResult> {
    if (!this.reports.result && !this.reports.closed) this.refreshImage();
    const { launched, pid } = this;
    return this.reports.stop(
      () => this.resultAt(process.hrtime.bigint()),
      () => this.empty(),
      () => {
        // Stop ends a launched program: it was started for this session.
        if (launched && launched.child.exitCode === null && launched.child.signalCode === null) {
          cont(pid);
          launched.child.kill('SIGTERM');
        }
      },
    );
  }
}

function cont(pid: number): void {
  try {
    process.kill(pid, 'SIGCONT');
  } catch {
    /* already gone */
  }
}

/**
 * undefined: trace this launch by preloading. '': uprobes, as asked (or an attach). Otherwise
 * why a launch that would have been preloaded falls back to uprobes.
 */
export function preloadRefusal(options: MemleakOptions, assetDir: string): string | undefined {
  if (!options.launch || options.kernel || options.mode === 'uprobe') return '';
  const lib = preloadLibPath(assetDir);
  if (!lib) return `the leak interposer (${assetDir}/libebpf-studio-preload.so) is not built`;
  const glibc = glibcBlocker(lib);
  if (glibc) return glibc;
  const l = options.launch;
  const exe = resolveCommand(l.command[0], { ...process.env, ...(l.env ?? {}) }.PATH, l.cwd ?? process.cwd());
  const blocked = preloadBlocker(exe);
  if (blocked) return `${blocked}, so it cannot be traced by preloading`;
  if (options.allocatorLib) {
    const lib = allocatorLibBlocker(options.allocatorLib, options.symbolPrefix);
    if (lib) return `${lib}, so --allocator-lib needs uprobes`;
  }
  return undefined;
}

function isStaticExe(exe: string): boolean {
  try {
    return withElf(exe, (elf) => !elf.segments.some((seg) => seg.type === 3 /* PT_INTERP */));
  } catch {
    return false;
  }
}

/** Whether an executable has its own malloc in its symbol table (a static glibc or musl program). */
function definesMalloc(exe: string): boolean {
  try {
    return withElf(exe, (elf) => elf.symbols('best').some((s) => s.name === 'malloc' && s.value !== 0n));
  } catch {
    return false;
  }
}

/**
 * Whether a program links libstdc++ directly (its .dynstr names it). Scripts and unreadable
 * files say yes: probing a library the program never maps costs only detach time.
 */
function linksLibstdcxx(exe: string): boolean {
  try {
    return withElf(exe, (elf) => {
      const d = elf.section('.dynstr');
      return d ? elf.sectionData(d).includes('libstdc++.so') : false;
    });
  } catch {
    return true;
  }
}

/** Attaches the allocator probes; returns what the allocator probes are on, for reports. */
function attachUser(obj: BpfObject, pid: number, options: MemleakOptions, launched: StoppedChild | undefined, warnings: string[], log: (m: string) => void): string {
  const launch = Boolean(launched);
  const maps = mapsOrExplain(pid);
  // A static program carries its allocator: probe the executable itself (a launched one has not
  // exec'd yet, so its maps still show the launcher's libc). /proc/PID/exe is the file it runs,
  // also in a container.
  const exe = launched?.exe ?? `/proc/${pid}/exe`;
  const ownMalloc = (launched ? isStaticExe(exe) : !findMapped(maps, LIBC)) && definesMalloc(exe);
  if (launched && !ownMalloc && isStaticExe(exe)) {
    throw unsuitableError(`${exe} is statically linked and has no malloc symbol to probe (stripped?): build it without -s, or dynamically linked`);
  }
  const libc = ownMalloc ? exe : findMapped(maps, LIBC);
  if (!libc) {
    throw unsuitableError(`process ${pid} maps no libc (${fs.readlinkSync(`/proc/${pid}/exe`)} may be statically linked or use its own allocator): give its allocator with --allocator-lib PATH [--symbol-prefix P]`);
  }
  // In launch mode the target has not exec'd yet: libstdc++ is not mapped, but a uprobe on its
  // inode applies when the program maps it later.
  // Each probe costs ~0.1 s at detach (the kernel synchronizes per uprobe), so C programs skip them.
  const cxx = findMapped(maps, LIBSTDCXX) ?? (launched && linksLibstdcxx(launched.exe) ? SYSTEM_LIBSTDCXX.find((f) => fs.existsSync(f)) : undefined);
  const attach = (binary: string, p: Probe, prefix = '') => {
    const symbol = prefix + p.symbol;
    try {
      if (p.ret) obj.attachUprobe('alloc_exit', { binary, symbol, pid, retprobe: true });
      obj.attachUprobe(p.program, { binary, symbol, pid, retprobe: false });
      return true;
    } catch (e) {
      if (p.required) throw fromBpfError(`attaching to ${symbol} in ${binary}`, e);
      log(`memleak: ${symbol} in ${binary} not probed: ${(e as Error).message}`);
      return false;
    }
  };
  // A running process's own files (a container's libc is not the host's file of that name); a
  // launched one is still our launcher, in our root.
  const reach = (file: string) => {
    const m = launched ? undefined : maps.find((x) => x.path === file);
    return m ? reachMapped(pid, m).path : targetPath(pid, file);
  };
  const libcPath = ownMalloc ? exe : reach(libc);
  log(`memleak: probing ${libc}${libcPath === libc ? '' : ` through ${libcPath}`}`);
  for (const p of [...ALLOCATOR_PROBES, ...MMAP_PROBES]) attach(libcPath, p);
  if (cxx) for (const p of CXX_PROBES) attach(reach(cxx), p);
  if (options.allocatorLib) {
    let n = 0;
    for (const p of ALLOCATOR_PROBES) if (attach(options.allocatorLib, { ...p, required: false }, options.symbolPrefix ?? '')) n++;
    if (n === 0) throw inputError(`no allocator function (${options.symbolPrefix ?? ''}malloc, ...) could be probed in ${options.allocatorLib}: check the library and --symbol-prefix`);
  }
  if (launch) {
    try {
      obj.attachUprobe('exit_enter', { binary: libcPath, symbol: 'exit', pid, retprobe: false });
    } catch (e) {
      warnings.push(`exit() in ${libc} could not be probed (${(e as Error).message}): stacks allocated just before the program exits may stay unsymbolized`);
    }
  }
  return libcPath === libc ? libc : `${libc} as pid ${pid} maps it (${libcPath})`;
}
