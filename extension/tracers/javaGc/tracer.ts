// The Java GC tracer: HotSpot's gc__begin/gc__end pause bracket and the memory-pool probes
// (which name the memory manager), from the JVM's own libjvm.so (or every USDT-capable
// libjvm.so, pid -1, in "all" mode). The kernel emits one event per collection as the JVM counts
// it (one memory manager's run; see bpf/java-gc.bpf.c for what fires under each collector) and
// one per safepoint; both arrive through ring buffers. Record decoders: ./decode.ts.
import fs from 'node:fs';
import type { BpfObject } from '../../../native/index';
import type { JavaGcEvent, JavaGcOptions, JavaGcPauseCounts, JavaGcResult, JavaSafepoint } from '../../protocol/javaGc';
import { buildResult } from '../../model/javaGcStats';
import { GcLive } from '../../model/javaGcLive';
import { fromBpfError, inputError } from '../../protocol/errors';
import { asObject, bool, int, PID_MAX, strArray } from '../../protocol/validate';
import { checkPid, identify, pidAlive, readStat, sameProcess } from '../../sys/proc/processes';
import { countsProblem } from '../../model/javaGcCheck';
import { ElfFile } from '../../sys/elf/elf';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, records, setRodata } from '../bpfObject';
import { hostLibjvms, launcherNames, MAX_EXTRA_LAUNCHERS, JvmCounterBook, JvmScanner, libjvmTargetOf, runningTarget, type LibjvmTarget, type RunningJvm } from './jvms';
import { GcHistReader } from './hists';
import { CTR_EXECS_FULL, CTR_HIST_FULL, CTR_INFLIGHT_FULL, CTR_POOLS_FULL, CTR_RINGBUF_FULL, CTR_SAFEPOINT_LOST, decodeJavaGcEvent, decodeSafepoint, JAVA_GC_MAX_POOLS } from './decode';

// ---- targets ----------------------------------------------------------------------------------
const PROBES = [
  ['handle_gc_begin', 'gc__begin'],
  ['handle_gc_end', 'gc__end'],
  ['handle_pool_begin', 'mem__pool__gc__begin'],
  ['handle_pool_end', 'mem__pool__gc__end'],
  // No vmops__end: every uprobe costs ~0.1 s to detach on a busy machine, and a GC pause always
  // runs inside the VM operation named last on its thread.
  ['handle_gc_vmop_begin', 'vmops__begin'],
] as const;
/** HotSpot keeps these under its private provider; some builds may lack them. */
const SAFEPOINT_PROBES = [
  ['handle_gc_sp_begin', 'safepoint__begin'],
  ['handle_gc_sp_end', 'safepoint__end'],
] as const;

/** Whether a libjvm.so has hs_private:safepoint__begin/end. */
export function hasSafepointProbes(lib: string): boolean {
  try {
    const elf = new ElfFile(lib);
    try {
      const names = new Set(elf.usdtProbes().map((p) => `${p.provider}:${p.name}`));
      return names.has('hs_private:safepoint__begin') && names.has('hs_private:safepoint__end');
    } finally {
      elf.close();
    }
  } catch {
    return false;
  }
}

/** The path of the libjvm.so a JVM runs (its own file, reached through /proc/PID), or the reason it cannot be traced. */
export function libjvmOf(pid: number): string {
  return libjvmTargetOf(pid).path;
}

/**
 * Every USDT-capable libjvm.so: installed JDKs and those running JVMs map (containers' own
 * files included), one per real file, plus what is skipped and why.
 */
export function findLibjvms(scanner = new JvmScanner()): { libs: LibjvmTarget[]; jvms: RunningJvm[]; skipped: string[] } {
  const host = hostLibjvms();
  const libs = new Map<string, LibjvmTarget>(host.libs.map((l) => [l.identity, l]));
  const skipped = host.skipped.map((s) => `${s} has no USDT probes: JVMs running it are not traced`);
  const jvms = scanner.scan();
  for (const j of jvms) {
    const t = runningTarget(j);
    if ('problem' in t) skipped.push(`pid ${j.pid} is not traced: ${t.problem}`);
    else if (!libs.has(t.identity)) libs.set(t.identity, t);
  }
  return { libs: [...libs.values()], jvms, skipped };
}

/** The libjvm.so files --all attaches to (names stable per file), and those without probes. */
export function allLibjvms(): { libs: string[]; skipped: string[] } {
  const f = findLibjvms();
  return { libs: f.libs.map((l) => l.label.replace(/ as pid \d+ maps it/, '')), skipped: f.skipped };
}

/**
 * The installed JDKs' libjvm.so files with probes (no process is read). A running --all session
 * follows the files of JVMs that start later itself; a JDK installed later is probed from its
 * first JVM's first GC only when the session is started again with it (the agent does).
 */
export function installedLibjvms(): string[] {
  return hostLibjvms().libs.map((l) => l.label);
}

/** Attaches the GC probes to libjvm.so files, each real file once, and books the JVMs they cover. */
class LibjvmAttacher {
  /** identity → CLOCK_BOOTTIME clock ticks when its probes were in place */
  private attached = new Map<string, number>();
  constructor(
    private readonly obj: BpfObject,
    private readonly pid: number,
    private readonly links: number[],
    private readonly safepoints: boolean,
    private readonly log: (m: string) => void,
  ) {}

  attach(lib: LibjvmTarget): void {
    const sp = this.safepoints && hasSafepointProbes(lib.path);
    for (const [prog, probe] of PROBES) this.links.push(this.obj.attachUsdt(prog, { binary: lib.path, provider: 'hotspot', name: probe, pid: this.pid }));
    if (sp) for (const [prog, probe] of SAFEPOINT_PROBES) this.links.push(this.obj.attachUsdt(prog, { binary: lib.path, provider: 'hs_private', name: probe, pid: this.pid }));
    this.attached.set(lib.identity, bootTicks());
    this.log(`java-gc: attached to ${lib.label} (pid ${this.pid})${sp ? ', safepoints too' : ''}`);
  }

  /**
   * A JVM found running (all mode): its libjvm.so is attached unless that file already is, and
   * its counters are booked from 0 when it started after its file's probes were in place.
   */
  follow(j: RunningJvm, book: JvmCounterBook, initial: boolean, warnings: string[]): void {
    const t = runningTarget(j);
    if ('problem' in t) {
      if (!sameProcess(j)) return; // gone before it was looked at: nothing to say
      const w = `pid ${j.pid} is not traced: ${t.problem}`;
      if (!warnings.includes(w)) warnings.push(w);
      return;
    }
    if (!this.attached.has(t.identity)) {
      try {
        this.attach(t);
      } catch (e) {
        warnings.push(`pid ${j.pid} is not traced: attaching to ${t.label} failed: ${(e as Error).message}`);
        return;
      }
    }
    const at = this.attached.get(t.identity)!;
    book.track(j, t.label, !initial && j.startTime > at);
    this.log(`java-gc: ${book.describe(j.pid)}`);
  }
}

/**
 * Attaches a libjvm.so found at start. A file reached through a running JVM (/proc/PID/map_files)
 * goes with that JVM: when it exited before its probes were in place, the session runs on without
 * it (said when the file is still there) instead of failing for every other JVM.
 */
function attachFound(attacher: LibjvmAttacher, lib: LibjvmTarget, all: boolean, warnings: string[]): void {
  try {
    attacher.attach(lib);
  } catch (e) {
    if (!all || !lib.path.startsWith('/proc/')) throw e;
    if (fs.existsSync(lib.path)) warnings.push(`${lib.label} is not traced: attaching failed: ${(e as Error).message}`);
  }
}

/** Attaches the exec hook of --all; without it (logged) new JVMs are looked for in all of /proc. */
function watchExecs(obj: BpfObject, links: number[], log: (m: string) => void): ExecWatch | undefined {
  try {
    links.push(obj.attach('handle_exec'));
    return new ExecWatch(obj);
  } catch (e) {
    log(`java-gc: no exec events (${(e as Error).message}): new JVMs are looked for in every process`);
    return undefined;
  }
}

/** CLOCK_BOOTTIME in clock ticks, the unit of /proc/PID/stat's start time. */
function bootTicks(): number {
  try {
    return Math.ceil(Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
  } catch {
    return 0;
  }
}

// ---- the session ------------------------------------------------------------------------------
const TICK_MS = 500;
/** Metrics only: nothing is drawn live, so the session ticks (looks for new JVMs) once a second. */
const METRICS_TICK_MS = 1000;
/**
 * Metrics only: the kernel's histograms are read (and an update sent) every this many ticks, and
 * whenever refresh() asks (a scrape): a scraper then gets current counts, and between scrapes
 * the service does no work per JVM (the map holds thousands of entries: JVMs that come and go
 * within this time do not fill it).
 */
const METRICS_READ_TICKS = 15;
/** The ring buffer thread polls every 100 ms: let it hand over what is left after detaching. */
const DRAIN_MS = 250;
/** Without live counts, exited JVMs are looked for every this many ticks. */
const FORGET_TICKS = 20;
/** --all looks for new JVMs every this many ticks: among the launchers that exec'd since. */
const FOLLOW_TICKS = 2;
/**
 * Every this many looks, --all also looks among the processes that exec'd a program of another
 * name since (bpf/java-gc.bpf.c other_execs): a JVM embedded in a launcher of its own (a renamed
 * or copied java, a native program that creates a JVM) is found within this many seconds.
 */
const OTHER_EXECS_LOOKS = 30;
/**
 * Every this many looks, --all reads the processes of /proc it has not seen (a JVM no exec made:
 * one restored from a checkpoint); at every look while exec events cannot be had.
 */
const FULL_SCAN_LOOKS = 300;
/**
 * Metrics only, woken by launchers' execs: the slow look (other programs' execs, exited JVMs,
 * the histograms) comes every this long, as often as on the 1 s timer.
 */
const SLOW_LOOK_MS = OTHER_EXECS_LOOKS * 1000;
/** A launcher maps libjvm.so some milliseconds after its exec: the first look waits this long. */
const FIRST_LOOK_MS = 250;
/** `launchers` as bpf/java-gc.bpf.c reads them: JAVA_GC_LAUNCHERS names of 16 NUL-padded bytes each. */
function launcherRodata(names: Buffer[]): Buffer {
  const b = Buffer.alloc(32 * 16);
  names.slice(0, 32).forEach((n, i) => n.copy(b, i * 16));
  return b;
}

/**
 * The pids that exec'd since they were last taken, from the kernel (bpf/java-gc.bpf.c
 * handle_exec), so --all need not read every process each second to find new JVMs: those that
 * exec'd a launcher at every look, the others every OTHER_EXECS_LOOKS looks. Undefined when some
 * may be missing (a map was full): then the caller reads all of /proc.
 */
class ExecWatch {
  private full = 0;
  constructor(private readonly obj: BpfObject) {}

  take(others: boolean): { launched: number[]; others?: number[] } | undefined {
    const taken = { launched: this.drain('execs'), ...(others ? { others: this.drain('other_execs') } : {}) };
    const full = readCounter(this.obj, 'counters', CTR_EXECS_FULL);
    if (full === this.full) return taken;
    this.full = full;
    return undefined;
  }

  private drain(map: string): number[] {
    const d = this.obj.mapDump(map, { delete: true });
    const pids: number[] = [];
    for (let i = 0; i < d.count; i++) pids.push(d.keys.readUInt32LE(i * 4));
    return pids;
  }
}

/** New JVMs: among the processes that exec'd, or from /proc (every FULL_SCAN_LOOKS looks, and without exec events). */
function followNewJvms(scanner: JvmScanner, execs: ExecWatch | undefined, look: number): RunningJvm[] {
  let execd: ReturnType<ExecWatch['take']>;
  try {
    execd = execs?.take(look % OTHER_EXECS_LOOKS === 0);
  } catch {
    execd = undefined;
  }
  if (!execd) return scanner.scan(execs ? 1 : 10);
  const found = scanner.scanExecs(execd.launched, execd.others);
  // Processes not seen yet only: those that exec'd were just looked at.
  return look % FULL_SCAN_LOOKS === 0 && look > 0 ? [...found, ...scanner.scan(Number.MAX_SAFE_INTEGER)] : found;
}

/**
 * The object's constants: with --all, which execs are looked at within a second (the launchers),
 * and whether they ring `launched` (metrics only: see JavaGcSession.waitForLaunches).
 */
function configure(o: BpfObject, options: JavaGcOptions): void {
  setRodata(o, { min_duration_ns: BigInt(options.minUs) * 1000n, lazy_wakeup: true, records: !options.metricsOnly, histograms: Boolean(options.metricsOnly), launch_wakeups: Boolean(options.all && options.metricsOnly) });
  if (options.all) o.setRodata('launchers', launcherRodata(launcherNames(options.launchers)));
}

/** Counts read from the kernel, booked as the events they replace are (the JVMs' own counters are checked against them). */
function countedInKernel(counts: JavaGcPauseCounts[], pids: Set<number>, book: JvmCounterBook): JavaGcPauseCounts[] {
  for (const c of counts) {
    pids.add(c.pid);
    if (c.what === 'pause' && c.kind) book.countMany(c.pid, c.kind, c.counts.reduce((a, b) => a + b, 0));
  }
  return counts;
}

/** `launchers`: program names as exec gives them (a file's base name), MAX_EXTRA_LAUNCHERS at most. */
function launchersOption(o: Record<string, unknown>): string[] {
  const names = strArray(o, 'launchers', MAX_EXTRA_LAUNCHERS);
  const bad = names.find((n) => n === '' || n.includes('/') || n.length > 255);
  if (bad !== undefined) throw inputError(`launchers: "${bad.slice(0, 80)}" is not a program name: give the base name of the launcher's file (what exec gives the process as its name), e.g. "orderservice"`);
  return names;
}

function monoNs(): number {
  return Number(process.hrtime.bigint());
}

export const javaGcTracer: Tracer<'java-gc'> = {
  name: 'java-gc',
  validate(raw): JavaGcOptions {
    const o = asObject(raw, 'options');
    const all = bool(o, 'all', false);
    return {
      all,
      pid: all ? int(o, 'pid', 0, PID_MAX, 0) : int(o, 'pid', 1, PID_MAX),
      minUs: int(o, 'minUs', 0, 3_600_000_000, 0),
      // Only when asked (the agent): the options document stays as it was for everyone else.
      ...(o.retain !== undefined ? { retain: bool(o, 'retain', true) } : {}),
      ...(bool(o, 'boundedResult', false) ? { boundedResult: true } : {}),
      ...(o.liveCounts !== undefined ? { liveCounts: bool(o, 'liveCounts', true) } : {}),
      ...(bool(o, 'metricsOnly', false) ? { metricsOnly: true } : {}),
      ...(o.launchers !== undefined ? { launchers: launchersOption(o) } : {}),
    };
  },
  async start(options, env, events) {
    const session = new JavaGcSession(options, env, events);
    session.attach();
    session.collect();
    return session;
  },
};

/** One java-gc session: the probes on the libjvm.so files, the JVMs' counters and what arrived since the last update. */
class JavaGcSession implements Session<'java-gc'> {
  readonly targets: number[];
  readonly warnings: string[] = [];
  private startTime?: number;
  private scanner!: JvmScanner;
  private obj!: BpfObject;
  private readonly links: number[] = [];
  private book!: JvmCounterBook;
  private attacher!: LibjvmAttacher;
  private execs?: ExecWatch;
  private safepointsAvailable = false;
  private safepointsReason?: string;
  private tickMs = TICK_MS;
  private followTicks = 1;
  private forgetTicks = 1;
  private startNs = 0;
  // Every event for the CLI's document; a client that drew the live updates (the editor) asks
  // for a bounded result instead: running figures and the most recent events, so the helper's
  // memory and the size of what Stop sends back do not grow with the session.
  private readonly all: JavaGcEvent[] = [];
  private readonly allSafepoints: JavaSafepoint[] = [];
  private readonly bounded?: GcLive;
  private readonly pids: Set<number>;
  private fresh: JavaGcEvent[] = [];
  /** JVMs found (all mode) since the last update */
  private found: number[] = [];
  private freshSafepoints: JavaSafepoint[] = [];
  private lost = 0;
  private safepointsLost = 0;
  private closed = false;
  // Collections that start while the probes are being detached are seen in part (a pool
  // bracket with no gc__begin reads as a concurrent cycle): the session ends where detaching starts.
  private detachNs = Infinity;
  private readonly rbs: ReturnType<BpfObject['openRingBuffer']>[] = [];
  private hists?: GcHistReader;
  // Read last just before the probes go: after that the JVMs count what we no longer see.
  private countsFinal = false;
  private readonly liveCounts: boolean;
  private shutting?: Promise<void>;
  private timer?: NodeJS.Timeout;
  /** metrics only: the look for new JVMs a launcher's exec asked for */
  private lookTimer?: NodeJS.Timeout;
  private slowLooks = 0;
  private ending = false;
  private ticks = 0;

  constructor(
    private readonly options: JavaGcOptions,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'java-gc'>,
  ) {
    this.targets = options.all ? [] : [options.pid];
    this.bounded = options.boundedResult ? new GcLive() : undefined;
    this.pids = new Set<number>(options.all ? [] : [options.pid]);
    this.liveCounts = options.liveCounts !== false;
  }

  /** Finds the libjvm.so files, loads the BPF object, attaches the probes and books the JVMs they cover. */
  attach(): void {
    const { options, env } = this;
    const found = this.findTargets();
    const libs = found.libs;
    this.load(libs);
    this.book = new JvmCounterBook(options.liveCounts === false);
    if (!options.all) this.book.prepare(options.pid);
    this.attacher = new LibjvmAttacher(this.obj, options.all ? -1 : options.pid, this.links, this.safepointsAvailable, env.log);
    try {
      for (const lib of libs) attachFound(this.attacher, lib, options.all, this.warnings);
    } catch (e) {
      this.obj.close();
      this.book.close();
      if (!options.all && !pidAlive(options.pid)) throw inputError(`process ${options.pid} exited before the probes were attached`);
      throw fromBpfError(`attaching hotspot USDT probes in ${libs.map((l) => l.label).join(', ')}`, e);
    }
    if (!this.safepointsAvailable) env.log(`java-gc: ${this.safepointsReason}`);
    // Each JVM's own counters, read from when its probes are in place.
    if (!options.all) {
      const id = identify(options.pid);
      if (id) this.book.track(id, libs[0].label, false);
      env.log(`java-gc: ${this.book.describe(options.pid)}`);
    }
    for (const j of found.jvms) {
      this.attacher.follow(j, this.book, true, this.warnings);
      this.found.push(j.pid);
    }
    this.execs = options.all ? watchExecs(this.obj, this.links, env.log) : undefined;
    // A JVM exec'd while the probes went in came after the scan of /proc above and before the exec
    // watch: one more look at the processes not seen yet closes that gap (it was missed for minutes).
    if (this.execs) this.followAll(this.scanner.scan(Number.MAX_SAFE_INTEGER));
  }

  private followAll(jvms: RunningJvm[]): void {
    for (const j of jvms) {
      this.attacher.follow(j, this.book, false, this.warnings);
      this.found.push(j.pid);
    }
  }

  /** The libjvm.so files to attach to now (the target's, or every one found with --all) and the JVMs running them. */
  private findTargets(): ReturnType<typeof findLibjvms> {
    const { options } = this;
    this.startTime = options.all ? undefined : checkPid(options.pid).startTime;
    this.scanner = new JvmScanner(launcherNames(options.launchers));
    const found = options.all ? findLibjvms(this.scanner) : { libs: [libjvmTargetOf(options.pid)], jvms: [], skipped: [] };
    this.warnings.push(...found.skipped);
    if (options.all && found.libs.length === 0) this.warnings.push('no JDK with hotspot USDT probes was found yet (looked in /usr/lib/jvm, /opt, /usr/local and in running JVMs): JVMs that start later are traced as they appear');
    return found;
  }

  /** Loads the BPF object, with the safepoint programs when the files have their probes. */
  private load(libs: LibjvmTarget[]): void {
    const { options, env } = this;
    const spLibs = new Set(libs.filter((l) => hasSafepointProbes(l.path)).map((l) => l.identity));
    // With nothing to attach to yet, the JVMs to come are expected to be like most (with them).
    this.safepointsAvailable = spLibs.size > 0 || libs.length === 0;
    this.safepointsReason = this.safepointsAvailable
      ? undefined
      : `${libs.length === 1 ? libs[0].label : 'no traced libjvm.so'} has no hs_private:safepoint__begin/end USDT probes: safepoints cannot be timed with this JDK`;
    const progs = [...PROBES.map(([p]) => p), ...(this.safepointsAvailable ? SAFEPOINT_PROBES.map(([p]) => p) : []), ...(options.all ? ['handle_exec'] : [])];
    // lazy_wakeup: records reach user space within the ring poller's 100 ms timeout rather than
    // waking it one by one; updates go out every TICK_MS anyway, and at hundreds of GCs and
    // safepoints a second the per-record wakeups were most of the tracer's own CPU time.
    this.obj = loadFirstWorking(env, 'java-gc', [progs], (o) => configure(o, options)).obj;
  }

  /** Opens the ring buffers (or the histograms) and sends an update every tick from now on. */
  collect(): void {
    const { options, env } = this;
    this.startNs = monoNs();
    // Metrics only: nothing comes through the rings, so no thread polls them.
    this.hists = options.metricsOnly ? new GcHistReader(this.obj) : undefined;
    try {
      if (!this.hists) this.rbs.push(this.obj.openRingBuffer('events', (b, o) => this.onBatch(b, o)));
      if (this.safepointsAvailable && !this.hists) this.rbs.push(this.obj.openRingBuffer('safepoints', (b, o) => this.onSafepoints(b, o)));
    } catch (e) {
      for (const rb of this.rbs) rb.close();
      this.obj.close();
      throw fromBpfError('opening the java-gc ring buffers', e);
    }
    if (this.hists && this.execs && this.waitForLaunches()) {
      // a launcher that had not mapped libjvm.so at the start is looked at again as one woken by its exec
      if (this.scanner.watchingYoung) this.lookSoon(FIRST_LOOK_MS);
      return;
    }
    // The same cadences in seconds whatever the tick: new JVMs every second, exited ones every 10 s.
    this.tickMs = options.metricsOnly ? METRICS_TICK_MS : TICK_MS;
    this.followTicks = Math.max(1, (FOLLOW_TICKS * TICK_MS) / this.tickMs);
    this.forgetTicks = Math.max(1, (FORGET_TICKS * TICK_MS) / this.tickMs);
    if (options.all) env.log(`java-gc: looking for new JVMs every ${(this.followTicks * this.tickMs) / 1000} s${this.execs ? ` among processes that exec'd ${this.launcherList()}, every ${(OTHER_EXECS_LOOKS * this.followTicks * this.tickMs) / 1000} s among those that exec'd anything else` : ''}`);
    this.timer = setInterval(() => this.tick(), this.tickMs);
  }

  private launcherList(): string {
    return launcherNames(this.options.launchers)
      .map((b) => b.toString('utf8'))
      .join(', ');
  }

  /**
   * Metrics only, all mode: no timer each second. The kernel wakes the session when a launcher
   * execs (bpf/java-gc.bpf.c `launched`, read by a thread with no poll timeout); the launcher is
   * looked at a moment later and again each second until it maps libjvm.so (three looks, as on
   * the timer). The execs of other programs, exited JVMs and the histograms wait for the slow look
   * (each scrape reads the histograms too): an idle service wakes every SLOW_LOOK_MS only.
   */
  private waitForLaunches(): boolean {
    try {
      this.rbs.push(this.obj.openRingBuffer('launched', () => this.lookSoon(FIRST_LOOK_MS), { wakeupsOnly: true }));
    } catch (e) {
      this.env.log(`java-gc: no exec wakeups (${(e as Error).message}): looking for new JVMs each second`);
      return false;
    }
    this.env.log(`java-gc: looking for new JVMs as processes exec ${this.launcherList()}, every ${SLOW_LOOK_MS / 1000} s among those that exec'd anything else`);
    this.timer = setInterval(() => this.slowLook(), SLOW_LOOK_MS);
    return true;
  }

  private lookSoon(ms: number): void {
    if (this.lookTimer || this.detachNs !== Infinity) return;
    this.lookTimer = setTimeout(() => {
      this.lookTimer = undefined;
      this.look(false);
    }, ms);
  }

  /** New JVMs among the launchers that exec'd (slow: among every exec, and all of /proc now and then); named in an update at once. */
  private look(slow: boolean): void {
    if (this.detachNs !== Infinity) return;
    // followNewJvms' look numbers: a multiple of OTHER_EXECS_LOOKS takes the other execs too.
    const n = slow ? this.slowLooks++ * OTHER_EXECS_LOOKS : 1;
    this.followAll(followNewJvms(this.scanner, this.execs, n));
    // Named in an update now, before it can exit; its pauses are read with everyone's (a scrape,
    // the slow look), not by a histogram read per JVM that starts.
    if (this.found.length && !slow && this.detachNs === Infinity) this.flush();
    if (this.scanner.watchingYoung) this.lookSoon(1000);
  }

  private slowLook(): void {
    this.look(true);
    if (!this.liveCounts) this.book.forgetExited();
    void this.readHists();
  }

  private onBatch(batch: Buffer, offsets: Uint32Array): void {
    for (const r of records(batch, offsets)) {
      let e: JavaGcEvent;
      try {
        e = decodeJavaGcEvent(r);
      } catch (err) {
        // A stale object file: say so rather than throwing on the addon's callback.
        this.env.log(`java-gc: ${(err as Error).message}`);
        return;
      }
      if (e.timestampNs > this.detachNs) continue;
      this.pids.add(e.pid);
      this.book.count(e);
      if (!this.bounded && this.options.retain !== false) this.all.push(e);
      this.fresh.push(e);
    }
  }

  private onSafepoints(batch: Buffer, offsets: Uint32Array): void {
    for (const r of records(batch, offsets)) {
      try {
        const sp = decodeSafepoint(r);
        if (!this.bounded && this.options.retain !== false) this.allSafepoints.push(sp);
        this.freshSafepoints.push(sp);
      } catch (err) {
        this.env.log(`java-gc: ${(err as Error).message}`);
        return;
      }
    }
  }

  private tick(): void {
    const { options, hists } = this;
    // New JVMs (new containers too) are looked for before the update that reports them.
    this.ticks++;
    if (options.all && this.ticks % this.followTicks === 0) this.followAll(followNewJvms(this.scanner, this.execs, this.ticks / this.followTicks - 1));
    // Without live counts nothing reads them: exited JVMs' files are closed and forgotten here.
    if (!this.liveCounts && this.ticks % this.forgetTicks === 0) this.book.forgetExited();
    if (!hists) this.flush();
    // A JVM found is named in an update right away (it may be gone at the next read).
    else if (this.ticks % METRICS_READ_TICKS === 0 || this.found.length) void this.readHists();
    if (options.all || this.ending) return;
    // Same pid but another start time: the JVM exited and the pid was reused.
    const alive = pidAlive(options.pid) && readStat(options.pid)?.startTime === this.startTime;
    if (!alive) {
      this.ending = true;
      void this.shutdown().then(() => {
        this.events.ended('target-exited', `pid ${options.pid} exited; ${this.bounded ? this.bounded.count : this.all.length} GCs traced`);
      });
    }
  }

  /** Metrics only: reads the kernel's histograms and sends what they counted as an update. */
  private readHists(): Promise<void> {
    const { hists, env } = this;
    if (!hists || this.closed || this.detachNs !== Infinity) return Promise.resolve();
    return hists.read(() => this.closed || this.detachNs !== Infinity).then(
      () => void (this.detachNs === Infinity && this.flush()),
      (e) => env.log(`java-gc: reading the pause histograms: ${(e as Error).message}`),
    );
  }

  /** Brings the live figures up to date now: in metrics-only mode an update is sent before this resolves. */
  refresh(): Promise<void> {
    return this.readHists();
  }

  private readLost(): void {
    if (this.closed) return;
    const { obj } = this;
    this.lost = readCounter(obj, 'counters', CTR_RINGBUF_FULL) + readCounter(obj, 'counters', CTR_INFLIGHT_FULL) + (this.hists ? readCounter(obj, 'counters', CTR_HIST_FULL) : 0);
    this.safepointsLost = readCounter(obj, 'counters', CTR_SAFEPOINT_LOST);
  }

  private pidList(): number[] {
    return [...this.pids].sort((a, b) => a - b);
  }

  private flush(): void {
    const { book, warnings } = this;
    this.readLost();
    if (!this.countsFinal && this.liveCounts) book.refresh();
    const histograms = this.hists ? countedInKernel(this.hists.take(), this.pids, book) : undefined;
    const u = { events: this.fresh, ...(histograms ? { histograms } : {}), safepoints: this.freshSafepoints, safepointsAvailable: this.safepointsAvailable, safepointsReason: this.safepointsReason, lost: this.lost, pids: this.pidList(), startNs: this.startNs, nowNs: monoNs(), ...(this.liveCounts ? { jvmCounts: book.results(this.options.minUs, this.lost) } : {}), ...(warnings.length ? { warnings: [...warnings] } : {}), ...(this.found.length ? { found: this.found } : {}) };
    this.fresh = [];
    this.found = [];
    this.freshSafepoints = [];
    this.bounded?.apply(u);
    this.events.update(u);
  }

  private shutdown(): Promise<void> {
    return (this.shutting ??= this.detachAndClose());
  }

  private async detachAndClose(): Promise<void> {
    const { obj, env, hists } = this;
    clearInterval(this.timer);
    clearTimeout(this.lookTimer);
    this.book.refresh();
    this.countsFinal = true;
    this.detachNs = monoNs();
    for (const l of this.links.splice(0)) {
      try {
        obj.detach(l);
      } catch {
        /* already gone */
      }
    }
    await new Promise((r) => setTimeout(r, DRAIN_MS));
    await hists?.final().catch((e) => env.log(`java-gc: reading the pause histograms: ${(e as Error).message}`));
    this.readLost();
    const poolsDropped = readCounter(obj, 'counters', CTR_POOLS_FULL);
    if (poolsDropped) env.log(`java-gc: ${poolsDropped} pool records did not fit (more than ${JAVA_GC_MAX_POOLS} pools per GC)`);
    // What arrived since the last tick still goes out live, so a view matches the result.
    if (this.fresh.length || this.freshSafepoints.length || hists?.hasPending) this.flush();
    this.closed = true;
    for (const rb of this.rbs) rb.close();
    obj.close();
    this.book.close();
  }

  snapshot(): JavaGcResult {
    const { book, safepointsAvailable, safepointsReason, safepointsLost } = this;
    if (!this.liveCounts && !this.countsFinal) book.refresh();
    const jvmCounts = book.results(this.options.minUs, this.lost);
    const problem = countsProblem(jvmCounts);
    const checked = { jvmCounts, ...(problem ? { problem } : {}) };
    if (!this.bounded) return { ...buildResult(this.pidList(), this.all, this.lost, { available: safepointsAvailable, reason: safepointsReason, events: this.allSafepoints, lost: safepointsLost }), ...checked };
    const r = this.bounded.toResult();
    return { ...r, pids: this.pidList(), lost: this.lost, safepoints: { ...r.safepoints, available: safepointsAvailable, ...(safepointsReason ? { reason: safepointsReason } : {}), lost: safepointsLost }, ...checked };
  }

  async stop(): Promise<JavaGcResult> {
    await this.shutdown();
    return this.snapshot();
  }
}
