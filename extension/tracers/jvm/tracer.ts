// The JVM timeline session: runs the existing java-gc, runqlat (per thread of the pid), profile
// and off-CPU tracers together against one JVM, on one clock (CLOCK_MONOTONIC = bpf_ktime_get_ns),
// and cuts their data into time slices: every `sliceMs` the run-queue histograms are read by
// runqlat itself (its interval) and the profiler's cumulative counts are diffed into a CPU slice.
// No BPF code of its own: only the other tracers' public start/snapshot/stop.
import fs from 'node:fs';
import type { JavaGcEvent, JavaSafepoint } from '../../protocol/javaGc';
import type { RunqlatUpdate } from '../../protocol/runqlat';
import { CpuSlicer, JvmTimeline, OFF_STATES, threadGroup, type JvmOffcpuSlice, type JvmOptions, type JvmRunqSlice, type JvmThread, type OffState } from '../../model/jvmTimeline';
import { PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, type ProfileStack } from '../../protocol/profile';
import { asObject, int, PID_MAX } from '../../protocol/validate';
import type { Session, SessionEvents, Tracer, TracerEnv } from '../tracer';
import { javaGcTracer, libjvmOf } from '../javaGc/tracer';
import { runqlatTracer } from '../runqlat/tracer';
import { profileTracer } from '../profile/tracer';
import { offcpuTracer } from '../offcpu/tracer';
import { kernelWalksTables } from '../cfiTables';
import { writePerfMap } from '../../sys/jvm/attach';
import { foreignOwner } from '../../sys/ownership';
import { identify, sameProcess } from '../../sys/proc/processes';
import type { TracerName } from '../../protocol/protocol';

function monoNs(): number {
  return Number(process.hrtime.bigint());
}

/** The JVM's threads by name, from /proc (threads that exited are kept by the caller). */
export function readThreads(pid: number): JvmThread[] {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: JvmThread[] = [];
  for (const t of tids) {
    try {
      const comm = fs.readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').replace(/\n$/, '');
      out.push({ tid: Number(t), comm, group: threadGroup(comm) });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

export const jvmTracer: Tracer<'jvm'> = {
  name: 'jvm',
  validate(raw): JvmOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 1, PID_MAX),
      frequency: int(o, 'frequency', 1, PROFILE_MAX_FREQUENCY, 99),
      sliceMs: int(o, 'sliceMs', 100, 10_000, 250),
    };
  },
  async start(options, env, events) {
    // Refuses a non-JVM (or a JDK without USDT) before anything is loaded.
    libjvmOf(options.pid);
    const session = new JvmSession(options, env, events);
    await session.attach();
    session.collect();
    return session;
  },
};

interface Parts {
  gc: Session<'java-gc'>;
  rq: Session<'runqlat'>;
  prof: Session<'profile'>;
  /** optional: without it the rest runs */
  off?: Session<'offcpu'>;
}

/** One JVM timeline: the four tracers' sessions, and what they sent since the last slice. */
class JvmSession implements Session<'jvm'> {
  readonly targets: number[];
  readonly warnings: string[] = [];
  private readonly model = new JvmTimeline();
  private readonly started: Session<TracerName>[] = [];
  private parts!: Parts;
  // what the tracers sent since the last update
  private gcFresh: JavaGcEvent[] = [];
  private spFresh: JavaSafepoint[] = [];
  private rqFresh: JvmRunqSlice[] = [];
  private offFresh: JvmOffcpuSlice[] = [];
  private readonly freshThreads = new Map<number, JvmThread>();
  private spAvailable = false;
  private spReason?: string;
  private offReason?: string;
  private gcLost = 0;
  private rqDropped = 0;
  private cpuLost = 0;
  private lastRunqNs = monoNs();
  /** cumulative µs per "tid/state index" at the previous read */
  private readonly offSeen = new Map<string, number>();
  private lastOffNs = 0;
  private startNs = 0;
  private readonly slicer = new CpuSlicer();
  private lastCpuNs = 0;
  private ticks = 0;
  private readonly timers: NodeJS.Timeout[] = [];
  private perfMapFailed = false;
  private target?: ReturnType<typeof identify>;
  private ending = false;
  private final?: ReturnType<JvmTimeline['toResult']>;
  private stopping?: Promise<void>;

  constructor(
    private readonly options: JvmOptions,
    private readonly env: TracerEnv,
    private readonly events: SessionEvents<'jvm'>,
  ) {
    this.targets = [options.pid];
    this.model.pid = options.pid;
    this.model.frequency = options.frequency;
    this.model.sliceMs = options.sliceMs;
  }

  private sub<N extends TracerName>(who: N, update: SessionEvents<N>['update']): SessionEvents<N> {
    return { update, ended: (reason, message) => this.onEnded(who, reason, message) };
  }

  private onEnded(who: TracerName, reason: 'target-exited' | 'error', message?: string): void {
    if (this.ending) return;
    this.ending = true;
    void this.shutdown().then(() => this.events.ended(reason, reason === 'error' ? `${who}: ${message ?? 'failed'}` : `pid ${this.options.pid} exited`));
  }

  /** Starts the four tracers on the JVM; stops those started when one fails. */
  async attach(): Promise<void> {
    try {
      this.parts = await this.startParts();
    } catch (e) {
      for (const s of this.started.reverse()) await s.stop().catch(() => undefined);
      throw e;
    }
    this.env.log(`jvm: GC, run-queue and CPU tracers attached (pid ${this.options.pid})`);
    // The off-CPU tracer's warnings are about its stacks, which the timeline does not show.
    for (const s of this.started) if (s !== (this.parts.off as unknown)) this.warnings.push(...s.warnings);
  }

  private async startParts(): Promise<Parts> {
    const { options, env } = this;
    const gc = await javaGcTracer.start({ pid: options.pid, all: false, minUs: 0 }, env, this.sub('java-gc', (u) => this.onGc(u)));
    this.started.push(gc as Session<TracerName>);
    const rq = await runqlatTracer.start({ pid: options.pid, per: 'thread', unit: 'us', intervalS: options.sliceMs / 1000 }, env, this.sub('runqlat', (u: RunqlatUpdate) => this.onRunq(u)));
    this.started.push(rq as Session<TracerName>);
    // Native frames by the unwind tables in the kernel where it walks them: libjvm and libc have no
    // frame pointers, so GC and VM threads reach thread_native_entry and start_thread with nothing
    // copied per sample; JIT frames still come from the perf map.
    const prof = await profileTracer.start(
      { pid: options.pid, frequency: options.frequency, includeIdle: false, javaPerfMap: true, stackStorageSize: PROFILE_DEFAULT_STACK_STORAGE, ...(kernelWalksTables() ? { unwind: 'cfi' as const } : {}) },
      env,
      this.sub('profile', (u) => {
        this.cpuLost = u.lost;
        for (const w of u.warnings ?? []) if (!this.warnings.includes(w)) this.warnings.push(w);
      }),
    );
    this.started.push(prof as Session<TracerName>);
    return { gc, rq, prof, off: await this.startOffcpu() };
  }

  /**
   * Off-CPU time by thread and state: the off-CPU tracer's public interface, its cumulative
   * per-(thread, stack, state) totals read every second and diffed per thread and state. No
   * Java agent (the timeline shows states, not stacks). Optional: without it the rest runs.
   */
  private async startOffcpu(): Promise<Session<'offcpu'> | undefined> {
    try {
      const off = await offcpuTracer.start(
        { pid: this.options.pid, event: 'offcpu', minBlockUs: 1, frequency: 99, stackStorageSize: PROFILE_DEFAULT_STACK_STORAGE, javaPerfMap: false, java: 'perfmap' },
        this.env,
        this.sub('offcpu', () => undefined),
      );
      this.started.push(off as Session<TracerName>);
      return off;
    } catch (e) {
      this.offReason = `off-CPU states not traced: ${(e as Error).message}`;
      this.warnings.push(this.offReason);
      return undefined;
    }
  }

  private onGc(u: Parameters<SessionEvents<'java-gc'>['update']>[0]): void {
    this.gcFresh.push(...u.events);
    this.spFresh.push(...(u.safepoints ?? []));
    if (u.safepointsAvailable !== undefined) {
      this.spAvailable = u.safepointsAvailable;
      this.spReason = u.safepointsReason;
    }
    this.gcLost = u.lost;
    // Said once: the GC lane would otherwise look like a JVM that does not collect.
    const missed = u.jvmCounts?.find((c) => c.verdict === 'missed');
    if (missed && !this.warnings.some((w) => w.startsWith('GC pauses: '))) this.warnings.push(`GC pauses: ${missed.message}`);
  }

  private onRunq(u: RunqlatUpdate): void {
    const end = u.interval.timestampNs;
    for (const k of u.keys) {
      this.rqFresh.push({ startNs: this.lastRunqNs, endNs: end, tid: k.key, buckets: k.buckets });
      if (k.comm) this.seeThread(k.key, k.comm);
    }
    this.lastRunqNs = end;
    this.rqDropped = u.dropped;
  }

  /** The slices from now on: one every sliceMs, and the JVM's perf map kept fresh. */
  collect(): void {
    const { options, env } = this;
    this.startNs = this.lastOffNs = this.lastCpuNs = monoNs();
    this.model.startNs = this.startNs;
    this.model.endNs = this.startNs;
    this.scanThreads();
    this.timers.push(setInterval(() => this.tick(), options.sliceMs));
    // The profiler names JIT-compiled methods from the JVM's perf map, which it asks for at Stop;
    // a JVM that exits first would leave them unnamed. Asking now and then keeps a recent map on
    // disk for the profiler's periodic re-reads of the process (same file, same names).
    // Another user's JVM (and we do not act for root): no attach request, no perf map, no private
    // file of it (extension/sys/ownership.ts, the check writePerfMap goes through as well).
    const owner = foreignOwner(options.pid, env.requester);
    if (owner !== undefined) {
      this.warnings.push(`pid ${options.pid} is a JVM of uid ${owner}, not yours (uid ${env.requester?.uid}): eBPF Studio sends no attach request into another user's JVM (no perf map), so its JIT-compiled Java methods show as [unknown]. Run as root (sudo) or as uid ${owner} to name them`);
    }
    this.perfMapFailed = owner !== undefined;
    this.target = identify(options.pid); // by start time too: never an attach request to the pid's next process
    this.timers.push(setTimeout(() => this.refreshPerfMap(), 500), setInterval(() => this.refreshPerfMap(), 4000));
  }

  private refreshPerfMap(): void {
    if (this.perfMapFailed || !this.target || !sameProcess(this.target)) return;
    writePerfMap(this.options.pid, { timeoutMs: 3000 }).catch((e) => {
      this.perfMapFailed = true;
      this.env.log(`jvm: fetching the perf map of pid ${this.options.pid} failed: ${(e as Error).message}`);
    });
  }

  private seeThread(tid: number, comm: string): void {
    const known = this.model.threads.get(tid) ?? this.freshThreads.get(tid);
    if (known && known.comm === comm) return;
    this.freshThreads.set(tid, { tid, comm, group: threadGroup(comm) });
  }

  private scanThreads(): void {
    for (const t of readThreads(this.options.pid)) this.seeThread(t.tid, t.comm);
  }

  private cutOffcpu(stacks: readonly ProfileStack[], nowNs: number): void {
    const now = new Map<string, number>();
    for (const s of stacks) {
      const si = s.state ? OFF_STATES.indexOf(s.state as OffState) : -1;
      if (si < 0) continue;
      const key = `${s.tid}/${si}`;
      now.set(key, (now.get(key) ?? 0) + (s.value ?? 0));
    }
    const rows: number[] = [];
    for (const [key, us] of now) {
      const d = us - (this.offSeen.get(key) ?? 0);
      if (d <= 0) continue;
      this.offSeen.set(key, us);
      const [tid, si] = key.split('/').map(Number);
      rows.push(tid, si, d);
    }
    this.offFresh.push({ startNs: this.lastOffNs, endNs: nowNs, rows });
    this.lastOffNs = nowNs;
  }

  /** Reads the off-CPU tracer's totals into a slice (said, not thrown, when it fails). */
  private readOffcpu(nowNs: number): void {
    if (!this.parts.off) return;
    try {
      this.cutOffcpu(this.parts.off.snapshot().stacks, nowNs);
    } catch (e) {
      this.env.log(`jvm: reading off-CPU totals failed: ${(e as Error).message}`);
    }
  }

  private emit(nowNs: number, cpu: ReturnType<CpuSlicer['next']>[]): void {
    const u = {
      startNs: this.startNs,
      nowNs,
      gc: this.gcFresh,
      safepoints: this.spFresh,
      safepointsAvailable: this.spAvailable,
      safepointsReason: this.spReason,
      runq: this.rqFresh,
      cpu: cpu.map((c) => c.slice).filter((s) => s.samples.length > 0),
      ...(this.offFresh.length ? { offcpu: this.offFresh } : {}),
      ...(this.offReason ? { offcpuReason: this.offReason } : {}),
      stacks: cpu.flatMap((c) => c.fresh),
      threads: [...this.freshThreads.values()],
      lost: this.gcLost + this.cpuLost,
      dropped: this.rqDropped,
      warnings: [...this.warnings],
    };
    this.gcFresh = [];
    this.offFresh = [];
    this.spFresh = [];
    this.rqFresh = [];
    this.freshThreads.clear();
    this.model.apply(u);
    this.events.update(u);
  }

  private cut(snapshot: Parameters<CpuSlicer['next']>[0], nowNs: number): ReturnType<CpuSlicer['next']> {
    const c = this.slicer.next(snapshot, this.lastCpuNs, nowNs);
    this.lastCpuNs = nowNs;
    // A thread that lived between two scans of /proc is named by its samples.
    for (const s of c.fresh) if (s.comm && !this.model.threads.has(s.tid) && !this.freshThreads.has(s.tid)) this.seeThread(s.tid, s.comm);
    return c;
  }

  private tick(): void {
    this.ticks++;
    if (this.ticks % 4 === 0) this.scanThreads();
    const now = monoNs();
    let c: ReturnType<CpuSlicer['next']> | undefined;
    try {
      c = this.cut(this.parts.prof.snapshot().stacks, now);
    } catch (e) {
      this.env.log(`jvm: reading CPU samples failed: ${(e as Error).message}`);
    }
    // Off-CPU totals: once a second (each read walks the tracer's stack table).
    if (now - this.lastOffNs >= 1e9 - this.options.sliceMs * 5e5) this.readOffcpu(now);
    this.emit(now, c ? [c] : []);
  }

  private shutdown(): Promise<void> {
    return (this.stopping ??= (async () => {
      for (const t of this.timers) clearTimeout(t);
      this.scanThreads();
      // The profiler symbolizes (and fetches the JVM's perf map) at stop: its last counts are cut
      // into the last slice, and every stack gets its names.
      this.readOffcpu(monoNs());
      const { gc, rq, prof, off } = this.parts;
      const [, , profResult] = await Promise.all([gc.stop(), rq.stop(), prof.stop(), off?.stop().catch(() => undefined)]);
      const now = monoNs();
      const last = this.cut(profResult.stacks, now);
      this.cpuLost = profResult.lost;
      this.emit(now, [last]);
      this.model.replaceStacks(this.slicer.symbolized(profResult.stacks));
      this.final = this.model.toResult();
    })());
  }

  snapshot(): ReturnType<JvmTimeline['toResult']> {
    return this.final ?? this.model.toResult();
  }

  async stop(): Promise<ReturnType<JvmTimeline['toResult']>> {
    this.ending = true;
    await this.shutdown();
    return this.final!;
  }
}

export type { TracerEnv };
