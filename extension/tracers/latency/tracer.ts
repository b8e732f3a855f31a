// The latency tracer: how long one function of a running process takes (bcc's funclatency, with
// the slow calls' stacks). Probes its entry and the ret instructions its calls end at (a uretprobe
// only where it tail-calls: see bpf/latency.bpf.c on why), keeps the log2 histogram of the kit
// (one heat-map column per interval), exact counts and percentiles in the kernel, and symbolizes
// the stacks of the calls slower than the threshold, which alone cross to user space.
import type { BpfObject } from '../../../native/index';
import type { CallerLatency, LatencyOptions, LatencyProbe, LatencyResult, LatencyStats, LatencyUpdate, SlowCall } from '../../protocol/latency';
import { asObject, bool, int, num, oneOf, str, PID_MAX } from '../../protocol/validate';
import { PROFILE_MAX_FREQUENCY, type ProfileResult } from '../../protocol/profile';
import { WALL_DEFAULT_FREQUENCY } from '../../protocol/offcpu';
import { fromBpfError, inputError, StudioError, unsuitableError } from '../../protocol/errors';
import { checkPid, identify, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { Symbolizer, type Frame, type ProcessImage } from '../../sys/symbolize';
import { assertOwnProcess, requester } from '../../sys/ownership';
import type { SessionEvents, Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, readCounter, records, setRodata } from '../bpfObject';
import { HistEpochs } from '../histEpochs';
import { watchTarget } from '../targetWatch';
import { CTR_HIST_FULL, CTR_START_FULL, decodeHistEntries, HIST_KEY_SIZE, HistAggregate } from '../histDecode';
import { decodeFine, decodeSlow, percentile, STAT, type SlowRecord } from './decode';
import { resolveTarget, type ResolvedFunction } from './resolve';
import { decodeCallers, mergeCallers } from './callers';
import { attachSlowProfile, checkSlowProfileKernel, configureSlowProfile, planCfi, readSlowProfile, refreshCfi, SLOWPROF_PROGRAMS } from './slowProfile';
import type { CfiTables } from '../cfiTables';
import { startJfrLatency } from './jfrMethodTrace';
import { startAgentLatency } from './javaAgentLatency';
import { latencyRoute } from './javaTarget';
import { processInfo } from '../../sys/proc/processes';

/** Slow calls kept for the result (the slowest), and sent per update at most. */
export const MAX_SLOW_KEPT = 100;
export const MAX_SLOW_PER_UPDATE = 50;
/** Intervals between looks for libraries loaded since (their unwind tables, for the slow-call profile). */
const CFI_REFRESH_INTERVALS = 5;
/** Slow records waiting to be symbolized: beyond this, the fastest of them are let go. */
const MAX_SLOW_PENDING = 1000;

function validate(raw: unknown): LatencyOptions {
  const o = asObject(raw, 'options');
  const target = str(o, 'target', 4096).trim();
  if (!target || target.includes('\0')) throw inputError('target must name a function or FILE:LINE');
  const thresholdMs = num(o, 'thresholdMs', 0, 3_600_000, 0);
  const profileSlow = bool(o, 'profileSlow', false);
  if (profileSlow && !thresholdMs) throw inputError('profiling the slow calls needs a threshold: calls at least thresholdMs (--threshold-ms N) long are the slow ones');
  return {
    pid: int(o, 'pid', 1, PID_MAX),
    target,
    thresholdMs,
    per: oneOf(o, 'per', ['none'] as const, 'none'),
    unit: oneOf(o, 'unit', ['us', 'ms'] as const, 'us'),
    intervalS: num(o, 'intervalS', 0.1, 3600, 1),
    returns: oneOf(o, 'returns', ['auto', 'ret', 'uretprobe'] as const, 'auto'),
    profileSlow,
    byCaller: bool(o, 'byCaller', false),
    unwind: oneOf(o, 'unwind', ['cfi', 'fp'] as const, 'cfi'),
    frequency: int(o, 'frequency', 1, PROFILE_MAX_FREQUENCY, WALL_DEFAULT_FREQUENCY),
  };
}

function load(env: TracerEnv, o: LatencyOptions, fn: ResolvedFunction, retInsns: boolean): { obj: BpfObject; cfi?: CfiTables } {
  const cfi = o.profileSlow && o.unwind !== 'fp' ? planCfi(o.pid, env.log) : undefined;
  const base = ['lat_entry', 'lat_return', ...(o.profileSlow ? SLOWPROF_PROGRAMS : [])];
  const frequency = o.frequency ?? WALL_DEFAULT_FREQUENCY;
  const { obj } = loadFirstWorking(env, 'latency', [[...base, 'lat_exit_btf'], [...base, 'lat_exit_raw']], (b) => {
    if (!o.byCaller) b.setMaxEntries('callers', 1);
    setRodata(b, { target_tgid: o.pid, unit_ns: o.unit === 'ms' ? 1_000_000 : 1000, threshold_ns: BigInt(Math.round(o.thresholdMs * 1e6)), ret_insns: retInsns, by_caller: Boolean(o.byCaller), ...configureSlowProfile(b, Boolean(o.profileSlow), frequency, cfi) });
  });
  const binary = fn.module.path;
  try {
    cfi?.load(obj);
    obj.attachUprobe('lat_entry', { binary, offset: fn.entryOffset, pid: o.pid, retprobe: false });
    if (retInsns) for (const offset of fn.retOffsets) obj.attachUprobe('lat_return', { binary, offset, pid: o.pid, retprobe: false });
    else obj.attachUprobe('lat_return', { binary, offset: fn.entryOffset, pid: o.pid, retprobe: true });
    const exit = obj.programs().find((p) => p.name.startsWith('lat_exit_') && p.autoload);
    if (exit) obj.attach(exit.name);
    if (o.profileSlow) attachSlowProfile(obj, frequency);
    env.log(`latency: attached to ${fn.name} in ${fn.module.name}: entry and ${retInsns ? `${fn.retOffsets.length} ret instructions` : 'a uretprobe'}${o.profileSlow ? `, the slow calls profiled at ${frequency} Hz on CPU and at each switch off it` : ''}`);
  } catch (e) {
    obj.close();
    throw fromBpfError(`attaching the probes of ${fn.name} in ${fn.module.name}`, e);
  }
  return { obj, cfi };
}

function maxOver(obj: BpfObject): number {
  const key = Buffer.alloc(4);
  key.writeUInt32LE(STAT.maxNs);
  const v = obj.mapLookup('lat_stats', key);
  let m = 0n;
  for (let o = 0; v && o + 8 <= v.length; o += 8) if (v.readBigUInt64LE(o) > m) m = v.readBigUInt64LE(o);
  return Number(m);
}

class LatencySession {
  private readonly agg: HistAggregate<'latency'>;
  private readonly epochs: HistEpochs;
  private readonly sym = new Symbolizer();
  private image?: ProcessImage;
  private readonly pending: SlowRecord[] = [];
  private readonly kept: SlowCall[] = [];
  private readonly ring;
  private readonly timer: NodeJS.Timeout;
  private readonly unwatch: () => void;
  private readonly t0 = Date.now();
  private reading: Promise<void> = Promise.resolve();
  private dropped = 0;
  private intervals = 0;
  closed = false;

  constructor(
    private readonly o: LatencyOptions,
    private readonly fn: ResolvedFunction,
    readonly probe: LatencyProbe,
    private readonly obj: BpfObject,
    private readonly cfi: CfiTables | undefined,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'latency'>,
    target: ProcessIdentity,
  ) {
    this.agg = new HistAggregate('latency', 'none', o.unit);
    this.epochs = new HistEpochs(obj, HIST_KEY_SIZE);
    const retInsns = probe.returns === 'ret-instructions';
    this.ring = obj.openRingBuffer('slow', (batch, offsets) => {
      for (const rec of records(batch, offsets)) this.pending.push(decodeSlow(rec, retInsns));
      if (this.pending.length > MAX_SLOW_PENDING) this.pending.sort((a, b) => b.durationNs - a.durationNs).splice(MAX_SLOW_PENDING);
    });
    this.timer = setInterval(() => void this.serial(false), o.intervalS * 1000);
    this.unwatch = watchTarget(target, () => this.ended());
    this.refreshImage();
    if (!sameProcess(target)) setImmediate(() => this.ended());
  }

  private refreshImage(): void {
    try {
      if (!this.image) this.image = this.sym.captureProcess(this.o.pid);
      else this.sym.refreshMaps(this.image);
    } catch (e) {
      this.env.log(`latency: reading the maps of ${this.o.pid} failed: ${(e as Error).message}`);
    }
  }

  stats(): LatencyStats {
    const c = (i: number) => readCounter(this.obj, 'lat_stats', i);
    const fine = decodeFine(this.obj.mapDump('fine'));
    const count = c(STAT.calls);
    const seconds = Math.max(0.001, (Date.now() - this.t0) / 1000);
    const maxNs = maxOver(this.obj);
    // a percentile interpolated inside its slot may pass the longest call the kernel measured
    const pct = (p: number) => Math.round(Math.min(maxNs || Infinity, percentile(fine, p)));
    return {
      count,
      totalNs: c(STAT.sumNs),
      p50Ns: pct(50),
      p90Ns: pct(90),
      p99Ns: pct(99),
      maxNs,
      callsPerS: count / seconds,
      abandoned: c(STAT.abandoned),
      exited: c(STAT.exited),
      tooDeep: c(STAT.tooDeep),
      slowLost: c(STAT.slowLost),
      ...(this.o.thresholdMs ? { slowCalls: c(STAT.slowSent) + c(STAT.slowLost) } : {}),
      ...(this.o.byCaller ? { callersFull: c(STAT.callersFull) } : {}),
      ...(this.o.profileSlow ? { profiledSlow: c(STAT.profKept), profiledFast: c(STAT.profDropped), profileLost: c(STAT.profLost) } : {}),
    };
  }

  /** The slow calls' wall-clock profile, read before the object closes. */
  async readProfile(): Promise<void> {
    if (!this.o.profileSlow || this.closed) return;
    this.refreshImage();
    try {
      const lost = readCounter(this.obj, 'lat_stats', STAT.profLost);
      this.profile = await readSlowProfile(this.obj, { pid: this.o.pid, frequency: this.o.frequency ?? 0, lost, cfi: this.cfi }, this.sym, this.image, this.env.log);
    } catch (e) {
      this.env.log(`latency: reading the slow calls' profile failed: ${(e as Error).message}`);
    }
  }

  private profile?: ProfileResult;
  private callers?: CallerLatency[];
  private readonly callerFrames = new Map<bigint, Frame | undefined>();

  /** byCaller: the call sites so far, the new ones named, merged per calling function. */
  private async readCallers(): Promise<CallerLatency[] | undefined> {
    if (!this.o.byCaller) return undefined;
    const sites = decodeCallers(this.obj.mapDump('callers'));
    const fresh = sites.map((s) => s.address).filter((a) => !this.callerFrames.has(a));
    if (fresh.length) {
      this.refreshImage();
      try {
        const frames = this.image ? await this.sym.symbolizeUser(this.image, fresh, { returnAddresses: fresh.map(() => true) }) : [];
        fresh.forEach((a, i) => this.callerFrames.set(a, frames[i]));
      } catch (e) {
        this.env.log(`latency: naming the callers failed: ${(e as Error).message}`);
      }
    }
    return (this.callers = mergeCallers(sites, sites.map((s) => this.callerFrames.get(s.address))));
  }

  /** Symbolizes the slow calls that arrived; keeps the slowest for the result. */
  private async slowCalls(): Promise<SlowCall[]> {
    const todo = this.pending.splice(0).sort((a, b) => b.durationNs - a.durationNs);
    if (!todo.length) return [];
    this.refreshImage();
    let frames: Awaited<ReturnType<Symbolizer['symbolizeFile']>> = [];
    try {
      // The function itself by its link-time address (its module's file), then the stack.
      const [own] = await this.sym.symbolizeFile(this.fn.module.path, [this.fn.entry]);
      const stacks = this.image ? await this.sym.symbolizeUser(this.image, todo.flatMap((r) => r.addresses), { returnAddresses: todo.flatMap((r) => r.addresses.map(() => true)) }) : [];
      let k = 0;
      frames = todo.flatMap((r) => [{ ...own, module: this.fn.module.name }, ...r.addresses.map(() => stacks[k++])]);
    } catch (e) {
      this.env.log(`latency: symbolizing slow calls failed: ${(e as Error).message}`);
    }
    let k = 0;
    const calls = todo.map((r) => {
      const n = r.addresses.length + 1;
      const stack = frames.slice(k, k + n).filter(Boolean);
      k += n;
      return { durationNs: r.durationNs, tid: r.tid, endNs: r.endNs, stack };
    });
    this.kept.push(...calls);
    this.kept.sort((a, b) => b.durationNs - a.durationNs).splice(MAX_SLOW_KEPT);
    return calls.slice(0, MAX_SLOW_PER_UPDATE);
  }

  private async collect(final: boolean): Promise<void> {
    if (this.closed) return;
    const taken = await this.epochs.take(() => this.closed);
    if (!taken) return;
    const entries = decodeHistEntries(taken.dump, 'none');
    if (this.cfi && ++this.intervals % CFI_REFRESH_INTERVALS === 0) refreshCfi(this.cfi, this.obj, this.o.pid, this.env.log);
    this.dropped = readCounter(this.obj, 'counters', CTR_START_FULL) + readCounter(this.obj, 'counters', CTR_HIST_FULL);
    const slow = await this.slowCalls();
    const callers = await this.readCallers();
    if (this.closed && !final) return;
    const update: LatencyUpdate = { ...this.agg.addInterval(entries, taken.endedNs, this.dropped), stats: this.stats(), slow, ...(callers ? { callers } : {}) };
    this.events.update(update);
  }

  serial(final: boolean): Promise<void> {
    this.reading = this.reading.then(() => this.collect(final)).catch((e) => this.env.log(`latency: reading failed: ${(e as Error).message}`));
    return this.reading;
  }

  result(): LatencyResult {
    return { ...this.agg.result(this.dropped), probe: this.probe, stats: this.closed ? this.lastStats : this.stats(), slow: [...this.kept], ...(this.profile ? { profile: this.profile } : {}), ...(this.callers ? { callers: this.callers } : {}) };
  }

  private lastStats!: LatencyStats;

  close(): void {
    if (this.closed) return;
    try {
      this.lastStats = this.stats();
    } catch {
      /* keep what the last update said */
    }
    this.closed = true;
    clearInterval(this.timer);
    this.unwatch();
    this.ring.close();
    this.obj.close();
    this.sym.dispose();
  }

  private ended(): void {
    if (this.closed) return;
    void this.serial(true).then(async () => {
      await this.readProfile();
      this.close();
      this.events.ended('target-exited', `process ${this.o.pid} exited`);
    });
  }
}

/** ret instructions where an exception may pass through the call (a uretprobe would abort it), else the cheaper uretprobe. */
function returnsAtRet(o: LatencyOptions, fn: ResolvedFunction): boolean {
  if (o.returns === 'uretprobe') return false;
  if (fn.tailCalls.length) {
    if (o.returns === 'ret') throw unsuitableError(`${fn.name} ends in a tail call (${fn.tailCalls.slice(0, 3).join(', ')}): those calls end at no ret of its own; measure it with --returns uretprobe`);
    return false;
  }
  // A uretprobe swaps each in-flight call's return address for its trampoline's, where the
  // slow-call profile's table walk (which, unlike the kernel's frame-pointer walk, is not told of
  // it) would stop: its stacks would end at the function.
  return o.returns === 'ret' || fn.unwinds !== undefined || (Boolean(o.profileSlow) && o.unwind !== 'fp');
}

function probeOf(fn: ResolvedFunction, retInsns: boolean): LatencyProbe {
  return { function: fn.name, module: fn.module.name, address: `0x${fn.entry.toString(16)}`, returns: retInsns ? 'ret-instructions' : 'uretprobe' };
}

/** resolveTarget, whose refusal on a JVM says how Java methods are named. */
function resolveInJvm(pid: number, target: string): ResolvedFunction {
  try {
    return resolveTarget(pid, target);
  } catch (e) {
    if (!(e instanceof StudioError) || !processInfo(pid)?.jvm) throw e;
    throw new StudioError(e.kind, `${e.message}. pid ${pid} is a JVM: name a Java method as Class.method (e.g. com.example.Parser.parse or Parser.parse: every overload) or Class.method(descriptor) for one overload (e.g. Parser.parse(Ljava/lang/String;)I)`, e.detail);
  }
}

export const latencyTracer: Tracer<'latency'> = {
  name: 'latency',
  validate,
  async start(options, env, events) {
    checkPid(options.pid);
    // A Java method of a JVM: the JVM's JFR method tracing (JDK 25+) or our agent (JDK 17 to 23).
    const route = latencyRoute(options.pid, options.target);
    if (route === 'jfr') return startJfrLatency(options, env, events);
    if (route === 'agent') return startAgentLatency(options, env, events, processInfo(options.pid)?.jvm?.feature);
    // Resolving reads the process's own files (through map_files, as root in the helper), which
    // its owner may keep from others, and its timings are its owner's to see.
    assertOwnProcess(options.pid, 'measuring a function', env.requester ?? requester());
    const target = identify(options.pid);
    if (!target) throw inputError(`no process with pid ${options.pid} is running (check with: ps -p ${options.pid})`);
    const fn = resolveInJvm(options.pid, options.target);
    const warnings: string[] = [];
    if (options.profileSlow) checkSlowProfileKernel();
    const retInsns = returnsAtRet(options, fn);
    if (retInsns && fn.retOffsets.length === 0) throw unsuitableError(`${fn.name} never returns (no ret instruction): there is no call duration to measure`);
    if (!retInsns && options.profileSlow && options.unwind !== 'fp') warnings.push(`the slow calls' stacks end at ${fn.name}: its returns are caught with a uretprobe${fn.tailCalls.length ? ' (it ends in a tail call)' : ''}, whose trampoline the unwind-table walk cannot pass; --unwind fp walks past it, through functions that keep frame pointers`);
    if (!retInsns && fn.unwinds) warnings.push(`${fn.name} ends in a tail call (${fn.tailCalls.slice(0, 3).join(', ') || 'asked: --returns uretprobe'}): its returns are caught with a uretprobe, and ${fn.unwinds}: an exception thrown through it aborts the program`);
    if (fn.line) env.log(`latency: ${options.target} is in ${fn.name} (${fn.line.file}:${fn.line.line})`);
    const { obj, cfi } = load(env, options, fn, retInsns);
    const s = new LatencySession(options, fn, probeOf(fn, retInsns), obj, cfi, env, events, target);
    return {
      targets: [options.pid],
      warnings,
      snapshot: () => s.result(),
      async stop() {
        await s.serial(true);
        await s.readProfile();
        s.close();
        return s.result();
      },
    };
  },
};
