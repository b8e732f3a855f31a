// The fleet agent's core: runs the tracers in-process for as long as the service lives and keeps
// what Prometheus and pprof scrapers pull from it.
//  - java-gc in "all" mode (uprobes on every USDT-capable libjvm.so with pid -1) sees every JVM,
//    those that start later included; a JDK that appears later (looked for every minute) restarts the
//    session so its libjvm.so is attached too. Each pause lands in a histogram labelled by the JVM's main class
//    and pid; the series of a JVM that exited are dropped a while later (forgetExitedAfterSeconds).
//  - runqlat reads the kernel's log2 histograms every intervalSeconds and adds them up; so do the
//    other kit tracers named under "histograms" (kitMetrics.ts).
//  - the native functions named under "latency" are probed in every process running their file
//    (latencyMetrics.ts); their kernel histograms are read on each scrape and every intervalSeconds.
//  - the CPU, off-CPU/wall and Java allocation profilers run only while a /debug/pprof/profile,
//    /debug/pprof/offcpu or /debug/pprof/allocs request waits: requests of the same kind (same event,
//    same JVM) that arrive while a profile is being taken join it and get the same profile.
// A tracer that fails to start is retried (RETRY_MS) and reported by ebpf_studio_tracer_up and
// ebpf_studio_attach_failures_total; the others keep running.
import type { TracerEnv } from '../tracers/tracer';
import type { Session } from '../tracers/tracer';
import { javaGcTracer, allLibjvms, installedLibjvms } from '../tracers/javaGc/tracer';
import { runqlatTracer } from '../tracers/runqlat/tracer';
import { profileTracer } from '../tracers/profile/tracer';
import { offcpuTracer } from '../tracers/offcpu/tracer';
import { javaHeapTracer } from '../tracers/javaHeap/tracer';
import { toAllocProfile } from '../model/javaHeapReport';
import { toAllocPprof } from '../model/allocPprof';
import { gzipSync } from 'node:zlib';
import type { JavaGcUpdate } from '../protocol/javaGc';
import type { RunqlatUpdate } from '../protocol/runqlat';
import { stackValue, type ProfileResult } from '../protocol/profile';
import fs from 'node:fs';
import { readStat, javaMain, processInfo } from '../sys/proc/processes';
import { CgroupNames, cgroupOfPid } from '../sys/cgroup';
import { ContainerLookup } from '../sys/proc/container';
import { JvmSelector, containerLabels } from './select';
import { encodePprofGz } from '../sys/profileFile';
import type { AgentConfig, KitExportName } from './config';
import { KitExport } from './kitMetrics';
import { FUNCTION_LATENCY_HELP, FUNCTION_LATENCY_METRIC, LatencyExport } from './latencyMetrics';
import { RequestError } from './server';
import { addLog2, Exposition, Histograms, PAUSE_BUCKETS_S, RUNQ_BUCKETS_S, type Labels } from './exposition';

const RETRY_MS = 30_000;
/** different profiles taken at once (cpu, offcpu, wall, and one per JVM asked for allocations) */
const MAX_RUNS = 6;
/**
 * How often exited JVMs (and idle series) are looked for: a fifth of forgetExitedAfterSeconds,
 * within these bounds (300 s: every minute, so a series goes 300 to 360 s after its JVM).
 */
const SWEEP_MS = { min: 1000, max: 60_000 };
/** how often a newly installed JDK is looked for (a directory read and a realpath per JDK) */
const JDK_SCAN_MS = 60_000;

type TracerId = 'java-gc' | 'runqlat' | 'profile' | 'offcpu' | 'java-heap' | KitExportName | `latency:${string}`;

interface TracerHealth {
  up: boolean;
  attachFailures: number;
  /** lost by sessions that ended, plus the running session's own count */
  lostBefore: number;
  lostNow: number;
  lastError?: string;
}

interface JvmInfo {
  pid: number;
  main: string;
  startTime: number;
  /** its cgroup v2 path when first seen, and the labels of the container it runs in (none: {}) */
  cgroup?: string;
  container: Record<string, string>;
  containerId?: string;
  /** whether the config covers it (mainClasses, containers) */
  covered: boolean;
  /** Date.now() of the last pid-reuse check */
  checkedAt: number;
  exitedAt?: number;
}

export class Agent {
  private readonly health = new Map<TracerId, TracerHealth>();
  private readonly gcPause = new Histograms(PAUSE_BUCKETS_S);
  private readonly safepoint = new Histograms(PAUSE_BUCKETS_S);
  private readonly runq = new Histograms(RUNQ_BUCKETS_S);
  private readonly kits = new Map<KitExportName, KitExport>();
  /** the "latency" entries, all in one family */
  private readonly funcLatency = new Histograms(RUNQ_BUCKETS_S);
  private readonly latencies: LatencyExport[] = [];
  private readonly jvms = new Map<number, JvmInfo>();
  /** names containers from their runtimes' files (cached per container id) */
  private readonly containers = new ContainerLookup();
  private gcSession?: Session<'java-gc'>;
  private gcLibs: string[] = [];
  private runqSession?: Session<'runqlat'>;
  /** per cgroup: names of cgroup ids, and when each cgroup series last had a wait (Date.now()) */
  private cgroups?: CgroupNames;
  private readonly cgroupSeen = new Map<string, number>();
  /** profiles being taken, by kind ("cpu", "offcpu", "wall", "alloc:PID") */
  private readonly runs = new Map<string, Promise<Buffer>>();
  /** ends the profiles being taken now (the agent stops) */
  private readonly cancels = new Set<() => void>();
  private readonly timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private readonly startedAt = Date.now();
  private lastJdkScan = Date.now();
  private readonly select: JvmSelector;

  constructor(
    readonly cfg: AgentConfig,
    private readonly env: TracerEnv,
    private readonly log: (m: string) => void,
    /** failures and restarts: said whether or not --verbose */
    private readonly warn: (m: string) => void = log,
  ) {
    this.select = new JvmSelector(cfg.jvm.mainClasses, cfg.jvm.containers);
    if (cfg.jvm.enabled) this.health.set('java-gc', fresh());
    if (cfg.runqueue.enabled) this.health.set('runqlat', fresh());
    if (cfg.profile.enabled) this.health.set('profile', { ...fresh(), up: true });
    if (cfg.profile.enabled && cfg.profile.offcpu) this.health.set('offcpu', { ...fresh(), up: true });
    if (cfg.profile.enabled && cfg.profile.allocs) this.health.set('java-heap', { ...fresh(), up: true });
    for (const [name, c] of Object.entries(cfg.histograms) as [KitExportName, AgentConfig['histograms'][KitExportName]][]) {
      if (!c?.enabled) continue;
      this.kits.set(name, new KitExport(name, c));
      this.health.set(name, fresh());
    }
    // Their own names of cgroups, walked again at most each second: a new container's first
    // calls are named before its next read.
    const cgroups = cfg.latency.length ? new CgroupNames(undefined, 1000) : undefined;
    for (const e of cfg.latency) {
      const l = new LatencyExport(e, this.funcLatency, cgroups!, this.containers);
      this.latencies.push(l);
      this.health.set(l.id as TracerId, fresh());
    }
  }

  async start(): Promise<void> {
    await Promise.all([this.cfg.jvm.enabled ? this.startGc() : undefined, this.cfg.runqueue.enabled ? this.startRunq() : undefined, ...[...this.kits.values()].map((k) => this.startKit(k)), ...this.latencies.map((l) => this.startLatency(l))]);
    const sweepMs = Math.min(SWEEP_MS.max, Math.max(SWEEP_MS.min, (this.cfg.forgetExitedAfterSeconds * 1000) / 5));
    this.timers.push(setInterval(() => void this.sweep(), sweepMs));
    for (const l of this.latencies) this.timers.push(setInterval(() => void this.lookLatency(l), l.cfg.intervalSeconds * 1000));
  }

  // ---- JVMs ---------------------------------------------------------------------------------
  private async startGc(): Promise<void> {
    if (this.stopping) return;
    const h = this.health.get('java-gc')!;
    try {
      const libs = allLibjvms().libs;
      this.gcSession = await javaGcTracer.start(javaGcTracer.validate({ all: true, minUs: this.cfg.jvm.minPauseUs, retain: false, liveCounts: false, metricsOnly: true, ...(this.cfg.jvm.launchers ? { launchers: this.cfg.jvm.launchers } : {}) }), this.env, {
        update: (u) => this.onGc(u),
        ended: (_reason, message) => this.tracerEnded('java-gc', message ?? 'the session ended', () => this.startGc()),
      });
      this.gcLibs = libs;
      h.up = true;
      h.lastError = undefined;
      this.log(`agent: java-gc attached to ${libs.join(', ')}`);
    } catch (e) {
      this.tracerFailed('java-gc', e, () => this.startGc());
    }
  }

  private onGc(u: JavaGcUpdate): void {
    const h = this.health.get('java-gc')!;
    h.lostNow = u.lost;
    // Named (main class, container) as they are found: a JVM may exit before its pauses are read.
    for (const pid of u.found ?? []) this.jvm(pid);
    for (const e of u.events) {
      // A ZGC/Shenandoah cycle runs beside the application: it is not a pause.
      if (e.kind === 'concurrent-cycle') continue;
      const jvm = this.jvm(e.pid);
      if (!jvm.covered) continue;
      this.gcPause.observe({ ...this.jvmLabels(jvm), collector: e.collector, kind: e.kind }, e.durationNs / 1e9);
    }
    for (const s of u.safepoints ?? []) {
      const jvm = this.jvm(s.pid);
      if (!jvm.covered) continue;
      this.safepoint.observe(this.jvmLabels(jvm), s.durationNs / 1e9);
    }
    // Metrics only: counted in the kernel at the same bounds (PAUSE_BUCKETS_S).
    for (const c of u.histograms ?? []) {
      if (c.kind === 'concurrent-cycle') continue;
      const jvm = this.jvm(c.pid);
      if (!jvm.covered) continue;
      const into = c.what === 'safepoint' ? this.safepoint : this.gcPause;
      const labels = c.what === 'safepoint' ? this.jvmLabels(jvm) : { ...this.jvmLabels(jvm), collector: c.collector ?? 'unknown', kind: c.kind ?? 'pause' };
      into.add(labels, c.counts.slice(0, PAUSE_BUCKETS_S.length), c.counts.slice(PAUSE_BUCKETS_S.length).reduce((a, b) => a + b, 0), c.sumNs / 1e9);
    }
  }

  /** A JVM's series labels: its main class and pid, and the container it runs in if any (one per JVM: bounded as pids are). */
  private jvmLabels(jvm: JvmInfo): Labels {
    return { main_class: jvm.main, pid: String(jvm.pid), ...jvm.container };
  }

  /** Who a pid is: read once per process (a reused pid has another start time). */
  private jvm(pid: number): JvmInfo {
    const known = this.jvms.get(pid);
    // A JVM makes up to hundreds of GCs a second: its pid is checked for reuse at most once a second.
    const now = Date.now();
    if (known && now - known.checkedAt < 1000) return known;
    const stat = readStat(pid);
    if (known && (!stat || stat.startTime === known.startTime)) {
      known.checkedAt = now;
      // A process can be moved to another cgroup (into a container's as it starts, by systemd):
      // its cgroup is read again with the reuse check, and decides from then on.
      const cgroup = stat ? cgroupOfPid(pid) : undefined;
      if (cgroup !== undefined && cgroup !== known.cgroup) {
        known.cgroup = cgroup;
        this.placeIn(known);
      }
      return known;
    }
    // The command line names the main class; processInfo() would also parse libjvm.so's ELF notes.
    let main = 'unknown';
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (cmdline.length) main = javaMain(cmdline);
    } catch {
      /* exited before its first event was read */
    }
    const j: JvmInfo = { pid, main, cgroup: cgroupOfPid(pid), container: {}, startTime: stat?.startTime ?? 0, covered: false, checkedAt: now };
    this.placeIn(j);
    if (known) this.forgetPid(pid);
    this.jvms.set(pid, j);
    return j;
  }

  /**
   * The container a JVM runs in, named from its runtime's files, and whether the config covers it.
   * Read when its cgroup is first seen or changes only: its series keep one label set.
   */
  private placeIn(j: JvmInfo): void {
    const c = this.containers.of(j.pid);
    j.container = containerLabels(c);
    j.containerId = c?.id;
    j.covered = this.select.covers(j.main, j.cgroup, c?.id);
  }

  private forgetPid(pid: number): void {
    const p = String(pid);
    this.gcPause.forget((l) => l.pid === p);
    this.safepoint.forget((l) => l.pid === p);
    this.jvms.delete(pid);
  }

  /** Drops exited JVMs' series after the grace period; restarts java-gc when a new JDK appears. */
  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const j of [...this.jvms.values()]) {
      const stat = readStat(j.pid);
      if (!stat || stat.startTime !== j.startTime) j.exitedAt ??= now;
      if (j.exitedAt !== undefined && now - j.exitedAt >= this.cfg.forgetExitedAfterSeconds * 1000) this.forgetPid(j.pid);
    }
    // A cgroup without a wait for that long (removed, or idle) gives its series' slot back.
    for (const [cg, seen] of this.cgroupSeen) {
      if (cg === 'other' || now - seen < this.cfg.forgetExitedAfterSeconds * 1000) continue;
      this.cgroupSeen.delete(cg);
      this.runq.forget((l) => l.cgroup === cg);
    }
    for (const k of this.kits.values()) k.forgetIdle(now, this.cfg.forgetExitedAfterSeconds * 1000);
    for (const l of this.latencies) l.forgetIdle(now, this.cfg.forgetExitedAfterSeconds * 1000);
    if (!this.gcSession || this.stopping || now - this.lastJdkScan < JDK_SCAN_MS) return;
    this.lastJdkScan = now;
    let libs: string[];
    try {
      // Installed JDKs only: the session follows the files of running JVMs (containers' too) itself.
      libs = installedLibjvms();
    } catch {
      return;
    }
    const added = libs.filter((l) => !this.gcLibs.includes(l));
    if (added.length === 0) return;
    this.log(`agent: new JDK ${added.join(', ')}: attaching java-gc to it too`);
    const old = this.gcSession;
    this.gcSession = undefined;
    const h = this.health.get('java-gc')!;
    await old.stop().catch(() => undefined);
    h.lostBefore += h.lostNow;
    h.lostNow = 0;
    await this.startGc();
  }

  // ---- run queue --------------------------------------------------------------------------
  private async startRunq(): Promise<void> {
    if (this.stopping) return;
    const h = this.health.get('runqlat')!;
    const per = this.cfg.runqueue.per === 'system' ? 'none' : this.cfg.runqueue.per;
    if (per === 'cgroup') {
      this.cgroups ??= new CgroupNames();
      if (!this.cgroups.root) {
        this.tracerFailed('runqlat', new Error('no cgroup2 file system is mounted (see /proc/self/mountinfo), so run-queue latency cannot be kept per cgroup: mount it, or set "runqueue": {"per": "pidns"} or "system"'), () => this.startRunq());
        return;
      }
    }
    try {
      this.runqSession = await runqlatTracer.start(runqlatTracer.validate({ pid: 0, per, unit: 'us', intervalS: this.cfg.runqueue.intervalSeconds, retain: false }), this.env, {
        update: (u) => this.onRunq(u, per),
        ended: (_reason, message) => this.tracerEnded('runqlat', message ?? 'the session ended', () => this.startRunq()),
      });
      h.up = true;
      h.lastError = undefined;
    } catch (e) {
      this.tracerFailed('runqlat', e, () => this.startRunq());
    }
  }

  private onRunq(u: RunqlatUpdate, per: 'none' | 'pidns' | 'cgroup'): void {
    this.health.get('runqlat')!.lostNow = u.dropped;
    const add = (labels: Labels, buckets: RunqlatUpdate['interval']['buckets']) => addLog2(this.runq, labels, buckets);
    if (per === 'none') add({}, u.interval.buckets);
    else if (per === 'pidns') for (const k of u.keys) add({ pidns: String(k.key) }, k.buckets);
    else for (const k of u.keys) add({ cgroup: this.cgroupLabel(k.key) }, k.buckets);
  }

  /**
   * The cgroup label of a cgroup id: its path below the cgroup2 root. Bounded: past
   * runqueue.maxCgroups series, and for a cgroup removed before it could be named, "other".
   */
  private cgroupLabel(id: number): string {
    const now = Date.now();
    const name = this.cgroups!.name(id, now);
    const label = name === undefined || (!this.cgroupSeen.has(name) && this.cgroupSeen.size >= this.cfg.runqueue.maxCgroups) ? 'other' : name;
    this.cgroupSeen.set(label, now);
    return label;
  }

  // ---- the other kit tracers ("histograms") -------------------------------------------------
  private async startKit(k: KitExport): Promise<void> {
    if (this.stopping) return;
    const h = this.health.get(k.name)!;
    try {
      await k.start(this.env, {
        update: (u) => (h.lostNow = u.dropped),
        ended: (message) => this.tracerEnded(k.name, message, () => this.startKit(k)),
      });
      h.up = true;
      h.lastError = undefined;
    } catch (e) {
      this.tracerFailed(k.name, e, () => this.startKit(k));
    }
  }

  // ---- native function latency ("latency") ------------------------------------------------
  private async startLatency(l: LatencyExport): Promise<void> {
    if (this.stopping) return;
    const id = l.id as TracerId;
    const h = this.health.get(id)!;
    try {
      for (const p of l.start(this.env)) this.warn(`ebpf-studio agent: ${id}: not probed in ${p}`);
      h.up = true;
      h.lastError = undefined;
      this.log(`agent: ${id} probed in ${l.session!.attached.map((f) => f.name + (f.pid ? ` (as pid ${f.pid} runs it)` : '')).join(', ')}`);
    } catch (e) {
      // A file no process runs yet (its container not started) is a normal state of a fleet: looked
      // for again every intervalSeconds, and said (and counted a failure) again only when the reason changes.
      const message = (e as Error).message ?? String(e);
      const changed = h.lastError !== message;
      h.up = false;
      if (changed) h.attachFailures++;
      h.lastError = message;
      if (changed) this.warn(`ebpf-studio agent: ${id} could not start: ${message} (looking again every ${l.cfg.intervalSeconds} s; the other tracers run on)`);
    }
  }

  /** Every intervalSeconds: not probed yet, tried again; else new copies of the file probed and the counts read. */
  private async lookLatency(l: LatencyExport): Promise<void> {
    if (this.stopping) return;
    if (!l.up) return this.startLatency(l);
    const h = this.health.get(l.id as TracerId)!;
    try {
      const r = l.look();
      for (const p of r.problems) this.warn(`ebpf-studio agent: ${l.id}: not probed in ${p}`);
      await l.read();
      h.lostNow = l.lost();
    } catch (e) {
      this.log(`agent: ${l.id}: reading failed: ${(e as Error).message}`);
    }
  }

  // ---- profiles on request ----------------------------------------------------------------
  /**
   * One profile per kind at a time: a request that comes while a profile of its kind is being taken
   * gets that one (one sampling session, however many scrapers ask), whatever seconds it asked for.
   */
  private shared(kind: string, take: () => Promise<Buffer>): Promise<Buffer> {
    const running = this.runs.get(kind);
    if (running) return running;
    // Each kind (and each JVM asked for allocations) is a session of its own: bounded, so a
    // scraper cycling through pids cannot hold more sessions and profiles in memory than this.
    if (this.runs.size >= MAX_RUNS) return Promise.reject(new RequestError(503, `the agent is taking ${this.runs.size} profiles already, its limit: retry when one has ended`));
    const run = take().finally(() => {
      if (this.runs.get(kind) === run) this.runs.delete(kind);
    });
    this.runs.set(kind, run);
    return run;
  }

  get profiling(): boolean {
    return this.runs.size > 0;
  }

  /** Waits `seconds`, or less if the agent stops meanwhile. */
  private async hold(seconds: number): Promise<void> {
    let cancel = () => undefined as void;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, seconds * 1000);
      cancel = () => {
        clearTimeout(t);
        resolve();
      };
      this.cancels.add(cancel);
    });
    this.cancels.delete(cancel);
  }

  /** Starts a session, keeping the tracer's health up to date. */
  private async begin<T>(id: TracerId, start: () => Promise<T>): Promise<T> {
    const h = this.health.get(id)!;
    try {
      const session = await start();
      h.up = true;
      h.lastError = undefined;
      return session;
    } catch (e) {
      // A refused target (not a JVM, an old JDK) is the request's fault, not the tracer's.
      if ((e as { kind?: string }).kind === 'input' || (e as { kind?: string }).kind === 'unsuitable') throw new RequestError(400, (e as Error).message);
      h.up = false;
      h.attachFailures++;
      h.lastError = (e as Error).message;
      throw e;
    }
  }

  /**
   * The one way every pull endpoint takes a profile: the tracer's session starts (its health kept
   * up to date), samples for `seconds` (less if the agent stops), stops, and its result is encoded.
   * Requests of the same kind share it (see shared()). The profile's duration is the sampling time,
   * not the time the probes took to attach or symbolize.
   */
  private pull<R>(kind: string, id: TracerId, seconds: number, start: () => Promise<{ stop(): Promise<R> }>, encode: (result: R, timing: { startMs: number; durationMs: number }) => Buffer): Promise<Buffer> {
    return this.shared(kind, async () => {
      const session = await this.begin(id, start);
      const startMs = Date.now();
      await this.hold(seconds);
      const durationMs = Date.now() - startMs;
      return encode(await session.stop(), { startMs, durationMs });
    });
  }

  /** What a system-wide CPU or off-CPU profile encodes to: only covered processes, lost samples counted. */
  private machineProfile(id: 'profile' | 'offcpu') {
    return (result: ProfileResult, timing: { startMs: number; durationMs: number }) => {
      this.health.get(id)!.lostBefore += result.lost;
      return encodePprofGz(this.coveredOnly(result), timing);
    };
  }

  /**
   * With jvm.mainClasses or jvm.containers in the config, only the processes it covers are visible: the samples of
   * every other process (a JVM with another main class or in another container, anything that is
   * not a JVM) are dropped.
   * A process that exited before the profile ended counts as covered only if its GC events
   * showed it to be a covered JVM.
   */
  coveredOnly(r: ProfileResult): ProfileResult {
    if (this.select.all) return r;
    const verdict = new Map<number, boolean>();
    const covered = (pid: number): boolean => {
      let v = verdict.get(pid);
      if (v === undefined) {
        const info = processInfo(pid);
        v = info ? info.jvm !== undefined && this.select.covers(info.jvm.main, cgroupOfPid(pid), this.containers.of(pid)?.id) : (this.jvms.get(pid)?.covered ?? false);
        verdict.set(pid, v);
      }
      return v;
    };
    const stacks = r.stacks.filter((st) => covered(st.pid));
    const kept: ProfileResult = { ...r, stacks, samples: stacks.reduce((a, st) => a + st.count, 0) };
    if (r.states) {
      const states: NonNullable<ProfileResult['states']> = {};
      for (const st of stacks) if (st.state) states[st.state] = (states[st.state] ?? 0) + stackValue(st);
      kept.states = states;
    }
    return kept;
  }

  /** A gzipped pprof CPU profile of the machine (the covered processes) over `seconds`. */
  profile(seconds: number): Promise<Buffer> {
    // Stacks walked in the kernel by unwind tables (auto = cfi on 5.17+, as `profile --all`):
    // native code built without frame pointers (libjvm, libc, JNI libraries, -O2 programs) keeps
    // its callers with nothing copied per sample; each file's table is compiled once a sample
    // meets it (frame pointers until then). JIT code has no CFI and is walked by frame pointer,
    // whole with -XX:+PreserveFramePointer. Java methods are named from each JVM's perf map.
    const options = profileTracer.validate({ pid: 0, frequency: this.cfg.profile.frequency, java: 'perfmap', javaPerfMap: true, unwind: 'auto' });
    return this.pull('cpu', 'profile', seconds, () => profileTracer.start(options, this.env, quiet), this.machineProfile('profile'));
  }

  /**
   * A gzipped pprof off-CPU (off_cpu/microseconds: where threads waited, by stack) or wall-clock
   * (wall/microseconds: on-CPU samples and off-CPU time together) profile of the machine.
   */
  offcpu(seconds: number, event: 'offcpu' | 'wall'): Promise<Buffer> {
    // Java frames from the perf maps, as for CPU profiles: loading the JVMTI agent into every JVM
    // of the machine on a scrape is not something a pull endpoint should do. Native frames by the
    // kernel's table walk, as for CPU profiles.
    const options = offcpuTracer.validate({ pid: 0, event, frequency: this.cfg.profile.frequency, java: 'perfmap', javaPerfMap: true, unwind: 'auto' });
    return this.pull(event, 'offcpu', seconds, () => offcpuTracer.start(options, this.env, quiet), this.machineProfile('offcpu'));
  }

  /**
   * A gzipped pprof of the Java allocations of one JVM over `seconds` (alloc_objects/count,
   * alloc_space/bytes, as Go's allocs profile), through the JVMTI heap sampler. Only a JVM the
   * config covers (jvm.mainClasses, jvm.containers) may be asked for: anything else is refused before the agent
   * is loaded into it.
   */
  allocs(seconds: number, pid: number): Promise<Buffer> {
    const info = processInfo(pid);
    if (!info) return Promise.reject(new RequestError(404, `no process with pid ${pid} is running: give the pid of a running JVM (?pid=P)`));
    if (!info.jvm) return Promise.reject(new RequestError(400, `pid ${pid} (${info.comm}) is not a JVM (no libjvm.so mapped): allocation profiles sample Java allocations; give the pid of a JVM`));
    const main = info.jvm.main;
    // Loading a JVMTI agent changes the target process: only into JVMs root named in the config,
    // never into any JVM of any user because no selection was written.
    if (this.select.all)
      return Promise.reject(
        new RequestError(403, `pid ${pid} (${main}): allocation profiles load the Java agent into the JVM, so they are taken only of JVMs the config names: add "jvm": {"mainClasses": [...]} or {"containers": [...]} to the config`),
      );
    if (!this.select.coversMain(main)) return Promise.reject(new RequestError(403, `pid ${pid} (${main}) is not a JVM this agent covers: add its main class to "jvm": {"mainClasses": [...]} in the config`));
    const cgroup = cgroupOfPid(pid);
    if (!this.select.coversCgroup(cgroup, this.containers.of(pid)?.id)) return Promise.reject(new RequestError(403, `pid ${pid} (${main}) is not a JVM this agent covers: its cgroup ${cgroup ?? '(unknown)'} is not in "jvm": {"containers": [...]} of the config; add its container id or cgroup path there`));
    return this.pull(
      `alloc:${pid}:${readStat(pid)?.startTime ?? 0}`,
      'java-heap',
      seconds,
      () => javaHeapTracer.start(javaHeapTracer.validate({ pid }), this.env, quiet),
      (result, timing) => gzipSync(toAllocPprof(toAllocProfile(result, info.comm), result.sampleBytes, timing)),
    );
  }

  // ---- failures -----------------------------------------------------------------------------
  private tracerFailed(id: TracerId, e: unknown, retry: () => Promise<void>): void {
    const h = this.health.get(id)!;
    h.up = false;
    h.attachFailures++;
    h.lastError = (e as Error).message ?? String(e);
    this.warn(`ebpf-studio agent: ${id} could not start: ${h.lastError} (retrying every ${RETRY_MS / 1000} s; the other tracers run on)`);
    if (!this.stopping) this.timers.push(setTimeout(() => void retry(), RETRY_MS));
  }

  private tracerEnded(id: TracerId, message: string, retry: () => Promise<void>): void {
    const h = this.health.get(id)!;
    h.up = false;
    h.lostBefore += h.lostNow;
    h.lostNow = 0;
    h.lastError = message;
    if (id === 'java-gc') this.gcSession = undefined;
    if (id === 'runqlat') this.runqSession = undefined;
    const kit = this.kits.get(id as KitExportName);
    if (kit) kit.session = undefined;
    this.warn(`ebpf-studio agent: ${id} ended: ${message} (restarting in ${RETRY_MS / 1000} s)`);
    if (!this.stopping) this.timers.push(setTimeout(() => void retry(), RETRY_MS));
  }

  // ---- exposition ---------------------------------------------------------------------------
  /**
   * What a scrape gets: the histograms are read from the kernel first (as ebpf_exporter reads
   * its maps per scrape), so they are current while the agent reads them between scrapes only
   * every intervalSeconds (GC: every 30 s).
   */
  async scrape(): Promise<string> {
    const sessions = [this.gcSession, this.runqSession, ...[...this.kits.values()].map((k) => k.session)];
    await Promise.all([...sessions.map((s) => s?.refresh?.().catch(() => undefined)), ...this.latencies.map((l) => l.read().catch(() => undefined))]);
    return this.metrics();
  }

  metrics(): string {
    const x = new Exposition();
    x.histogram('ebpf_studio_jvm_gc_pause_seconds', 'Stop-the-world GC pauses of each JVM, from HotSpot USDT gc__begin/gc__end (one per collection as the JVM counts it).', this.gcPause);
    x.histogram('ebpf_studio_jvm_safepoint_seconds', 'Safepoints of each JVM (every Java thread stopped), from hs_private:safepoint__begin/end.', this.safepoint);
    x.histogram('ebpf_studio_runqueue_latency_seconds', 'Time runnable threads waited for a CPU (sched_wakeup to sched_switch), kernel log2 buckets; _sum estimated at bucket middles; per cgroup: the waiting thread\'s cgroup v2 path, "other" past runqueue.maxCgroups.', this.runq);
    for (const k of this.kits.values()) x.histogram(k.metric, k.help, k.hist);
    if (this.latencies.length) x.histogram(FUNCTION_LATENCY_METRIC, FUNCTION_LATENCY_HELP, this.funcLatency);
    x.family('ebpf_studio_jvms_traced', 'gauge', 'JVMs whose GC pauses are exported (running or exited within forgetExitedAfterSeconds).');
    x.sample('ebpf_studio_jvms_traced', {}, [...this.jvms.values()].filter((j) => j.covered).length);
    x.family('ebpf_studio_tracer_up', 'gauge', '1 while the tracer is attached (profile: ready to sample on request), 0 after it failed.');
    for (const [id, h] of this.health) x.sample('ebpf_studio_tracer_up', { tracer: id }, h.up ? 1 : 0);
    x.family('ebpf_studio_attach_failures_total', 'counter', 'Times a tracer failed to load or attach.');
    for (const [id, h] of this.health) x.sample('ebpf_studio_attach_failures_total', { tracer: id }, h.attachFailures);
    x.family('ebpf_studio_tracer_error_info', 'gauge', 'The last error of a tracer that is down.');
    for (const [id, h] of this.health) if (!h.up && h.lastError) x.sample('ebpf_studio_tracer_error_info', { tracer: id, error: shortError(h.lastError) }, 1);
    x.family('ebpf_studio_lost_events_total', 'counter', 'Events the kernel could not hand over (ring buffer or map full).');
    for (const [id, h] of this.health) x.sample('ebpf_studio_lost_events_total', { tracer: id }, h.lostBefore + h.lostNow);
    const cpu = process.cpuUsage();
    x.family('process_cpu_seconds_total', 'counter', "The agent's own user and system CPU time.");
    x.sample('process_cpu_seconds_total', {}, (cpu.user + cpu.system) / 1e6);
    x.family('process_resident_memory_bytes', 'gauge', "The agent's resident set size.");
    x.sample('process_resident_memory_bytes', {}, process.memoryUsage.rss());
    x.family('process_start_time_seconds', 'gauge', 'When the agent started, seconds since the epoch.');
    x.sample('process_start_time_seconds', {}, Math.floor(this.startedAt / 1000));
    return x.text();
  }

  /** Detaches everything: no BPF program of the agent stays loaded. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearTimeout(t);
    for (const cancel of [...this.cancels]) cancel();
    const running = [...this.runs.values()].map((r) => r.catch(() => undefined));
    await Promise.all([this.gcSession?.stop(), this.runqSession?.stop(), ...[...this.kits.values()].map((k) => k.session?.stop()), ...running]);
    this.gcSession = undefined;
    this.runqSession = undefined;
    for (const k of this.kits.values()) k.session = undefined;
    for (const l of this.latencies) l.close();
  }
}

/** The pull endpoints' sessions: nothing is shown while they run. */
const quiet = { update: () => undefined, ended: () => undefined };

/**
 * An error as a bounded label (one series per tracer, so 1000 characters cost little): whole as a
 * rule; past that its start (what failed) and its end (the cause and the fix).
 */
function shortError(m: string): string {
  return m.length <= 1000 ? m : `${m.slice(0, 500)} … ${m.slice(-497)}`;
}

function fresh(): TracerHealth {
  return { up: false, attachFailures: 0, lostBefore: 0, lostNow: 0 };
}
