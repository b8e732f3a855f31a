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
    const model = new JvmTimeline();
    model.pid = options.pid;
    model.frequency = options.frequency;
    model.sliceMs = options.sliceMs;
    let gcFresh: JavaGcEvent[] = [];
    let spFresh: JavaSafepoint[] = [];
    let rqFresh: JvmRunqSlice[] = [];
    let spAvailable = false;
    let spReason: string | undefined;
    let gcLost = 0;
    let rqDropped = 0;
    let cpuLost = 0;
    let lastRunqNs = monoNs();
    const warnings: string[] = [];
    let ending = false;
    let shutdown: () => Promise<void> = async () => undefined;
    const onEnded = (who: TracerName) => (reason: 'target-exited' | 'error', message?: string) => {
      if (ending) return;
      ending = true;
      void shutdown().then(() => events.ended(reason, reason === 'error' ? `${who}: ${message ?? 'failed'}` : `pid ${options.pid} exited`));
    };
    const sub = <N extends TracerName>(who: N, update: SessionEvents<N>['update']): SessionEvents<N> => ({ update, ended: onEnded(who) });

    const started: Session<TracerName>[] = [];
    const startAll = async () => {
      const gc = await javaGcTracer.start(
        { pid: options.pid, all: false, minUs: 0 },
        env,
        sub('java-gc', (u) => {
          gcFresh.push(...u.events);
          spFresh.push(...(u.safepoints ?? []));
          if (u.safepointsAvailable !== undefined) {
            spAvailable = u.safepointsAvailable;
            spReason = u.safepointsReason;
          }
          gcLost = u.lost;
          // Said once: the GC lane would otherwise look like a JVM that does not collect.
          const missed = u.jvmCounts?.find((c) => c.verdict === 'missed');
          if (missed && !warnings.some((w) => w.startsWith('GC pauses: '))) warnings.push(`GC pauses: ${missed.message}`);
        }),
      );
      started.push(gc as Session<TracerName>);
      const rq = await runqlatTracer.start(
        { pid: options.pid, per: 'thread', unit: 'us', intervalS: options.sliceMs / 1000 },
        env,
        sub('runqlat', (u: RunqlatUpdate) => {
          const end = u.interval.timestampNs;
          for (const k of u.keys) {
            rqFresh.push({ startNs: lastRunqNs, endNs: end, tid: k.key, buckets: k.buckets });
            if (k.comm) seeThread(k.key, k.comm);
          }
          lastRunqNs = end;
          rqDropped = u.dropped;
        }),
      );
      started.push(rq as Session<TracerName>);
      const prof = await profileTracer.start(
        { pid: options.pid, frequency: options.frequency, includeIdle: false, javaPerfMap: true, stackStorageSize: PROFILE_DEFAULT_STACK_STORAGE },
        env,
        sub('profile', (u) => {
          cpuLost = u.lost;
          for (const w of u.warnings ?? []) if (!warnings.includes(w)) warnings.push(w);
        }),
      );
      started.push(prof as Session<TracerName>);
      // Off-CPU time by thread and state: the off-CPU tracer's public interface, its cumulative
      // per-(thread, stack, state) totals read every second and diffed per thread and state. No
      // Java agent (the timeline shows states, not stacks). Optional: without it the rest runs.
      let off: Session<'offcpu'> | undefined;
      try {
        off = await offcpuTracer.start(
          { pid: options.pid, event: 'offcpu', minBlockUs: 1, frequency: 99, stackStorageSize: PROFILE_DEFAULT_STACK_STORAGE, javaPerfMap: false, java: 'perfmap' },
          env,
          sub('offcpu', () => undefined),
        );
        started.push(off as Session<TracerName>);
      } catch (e) {
        offReason = `off-CPU states not traced: ${(e as Error).message}`;
        warnings.push(offReason);
      }
      return { gc, rq, prof, off };
    };
    let offReason: string | undefined;
    let offFresh: JvmOffcpuSlice[] = [];
    /** cumulative µs per "tid/state index" at the previous read */
    const offSeen = new Map<string, number>();
    let lastOffNs = 0;
    const cutOffcpu = (stacks: readonly ProfileStack[], nowNs: number) => {
      const now = new Map<string, number>();
      for (const s of stacks) {
        const si = s.state ? OFF_STATES.indexOf(s.state as OffState) : -1;
        if (si < 0) continue;
        const key = `${s.tid}/${si}`;
        now.set(key, (now.get(key) ?? 0) + (s.value ?? 0));
      }
      const rows: number[] = [];
      for (const [key, us] of now) {
        const d = us - (offSeen.get(key) ?? 0);
        if (d <= 0) continue;
        offSeen.set(key, us);
        const [tid, si] = key.split('/').map(Number);
        rows.push(tid, si, d);
      }
      offFresh.push({ startNs: lastOffNs, endNs: nowNs, rows });
      lastOffNs = nowNs;
    };
    const freshThreads = new Map<number, JvmThread>();
    const seeThread = (tid: number, comm: string) => {
      const known = model.threads.get(tid) ?? freshThreads.get(tid);
      if (known && known.comm === comm) return;
      freshThreads.set(tid, { tid, comm, group: threadGroup(comm) });
    };
    const scanThreads = () => {
      for (const t of readThreads(options.pid)) seeThread(t.tid, t.comm);
    };

    let subs: Awaited<ReturnType<typeof startAll>>;
    try {
      subs = await startAll();
    } catch (e) {
      for (const s of started.reverse()) await s.stop().catch(() => undefined);
      throw e;
    }
    env.log(`jvm: GC, run-queue and CPU tracers attached (pid ${options.pid})`);
    // The off-CPU tracer's warnings are about its stacks, which the timeline does not show.
    for (const s of started) if (s !== (subs.off as unknown)) warnings.push(...s.warnings);
    const startNs = monoNs();
    lastOffNs = startNs;
    model.startNs = startNs;
    model.endNs = startNs;
    scanThreads();
    const slicer = new CpuSlicer();
    let lastCpuNs = startNs;
    let ticks = 0;

    const emit = (nowNs: number, fresh: { cpu: ReturnType<CpuSlicer['next']>[] }) => {
      const u = {
        startNs,
        nowNs,
        gc: gcFresh,
        safepoints: spFresh,
        safepointsAvailable: spAvailable,
        safepointsReason: spReason,
        runq: rqFresh,
        cpu: fresh.cpu.map((c) => c.slice).filter((s) => s.samples.length > 0),
        ...(offFresh.length ? { offcpu: offFresh } : {}),
        ...(offReason ? { offcpuReason: offReason } : {}),
        stacks: fresh.cpu.flatMap((c) => c.fresh),
        threads: [...freshThreads.values()],
        lost: gcLost + cpuLost,
        dropped: rqDropped,
        warnings: [...warnings],
      };
      gcFresh = [];
      offFresh = [];
      spFresh = [];
      rqFresh = [];
      freshThreads.clear();
      model.apply(u);
      events.update(u);
    };
    const cut = (snapshot: Parameters<CpuSlicer['next']>[0], nowNs: number) => {
      const c = slicer.next(snapshot, lastCpuNs, nowNs);
      lastCpuNs = nowNs;
      // A thread that lived between two scans of /proc is named by its samples.
      for (const s of c.fresh) if (s.comm && !model.threads.has(s.tid) && !freshThreads.has(s.tid)) seeThread(s.tid, s.comm);
      return c;
    };
    const tick = () => {
      ticks++;
      if (ticks % 4 === 0) scanThreads();
      const now = monoNs();
      let c: ReturnType<CpuSlicer['next']> | undefined;
      try {
        c = cut(subs.prof.snapshot().stacks, now);
      } catch (e) {
        env.log(`jvm: reading CPU samples failed: ${(e as Error).message}`);
      }
      // Off-CPU totals: once a second (each read walks the tracer's stack table).
      if (subs.off && now - lastOffNs >= 1e9 - options.sliceMs * 5e5) {
        try {
          cutOffcpu(subs.off.snapshot().stacks, now);
        } catch (e) {
          env.log(`jvm: reading off-CPU totals failed: ${(e as Error).message}`);
        }
      }
      emit(now, { cpu: c ? [c] : [] });
    };
    const timer = setInterval(tick, options.sliceMs);
    // The profiler names JIT-compiled methods from the JVM's perf map, which it asks for at Stop;
    // a JVM that exits first would leave them unnamed. Asking now and then keeps a recent map on
    // disk for the profiler's periodic re-reads of the process (same file, same names).
    // Another user's JVM (and we do not act for root): no attach request, no perf map, no private
    // file of it (extension/sys/ownership.ts, the check writePerfMap goes through as well).
    const owner = foreignOwner(options.pid, env.requester);
    if (owner !== undefined) {
      warnings.push(`pid ${options.pid} is a JVM of uid ${owner}, not yours (uid ${env.requester?.uid}): eBPF Studio sends no attach request into another user's JVM (no perf map), so its JIT-compiled Java methods show as [unknown]. Run as root (sudo) or as uid ${owner} to name them`);
    }
    let perfMapFailed = owner !== undefined;
    const target = identify(options.pid); // by start time too: never an attach request to the pid's next process
    const refreshPerfMap = () => {
      if (perfMapFailed || !target || !sameProcess(target)) return;
      writePerfMap(options.pid, { timeoutMs: 3000 }).catch((e) => {
        perfMapFailed = true;
        env.log(`jvm: fetching the perf map of pid ${options.pid} failed: ${(e as Error).message}`);
      });
    };
    const perfMapFirst = setTimeout(refreshPerfMap, 500);
    const perfMapTimer = setInterval(refreshPerfMap, 4000);

    let final: ReturnType<JvmTimeline['toResult']> | undefined;
    let stopping: Promise<void> | undefined;
    shutdown = () =>
      (stopping ??= (async () => {
        clearInterval(timer);
        clearTimeout(perfMapFirst);
        clearInterval(perfMapTimer);
        scanThreads();
        // The profiler symbolizes (and fetches the JVM's perf map) at stop: its last counts are cut
        // into the last slice, and every stack gets its names.
        if (subs.off) {
          try {
            cutOffcpu(subs.off.snapshot().stacks, monoNs());
          } catch (e) {
            env.log(`jvm: reading off-CPU totals failed: ${(e as Error).message}`);
          }
        }
        const [, , prof] = await Promise.all([subs.gc.stop(), subs.rq.stop(), subs.prof.stop(), subs.off?.stop().catch(() => undefined)]);
        const now = monoNs();
        const last = cut(prof.stacks, now);
        cpuLost = prof.lost;
        emit(now, { cpu: [last] });
        model.replaceStacks(slicer.symbolized(prof.stacks));
        final = model.toResult();
      })());

    return {
      targets: [options.pid],
      warnings,
      snapshot: () => final ?? model.toResult(),
      async stop() {
        ending = true;
        await shutdown();
        return final!;
      },
    };
  },
};

export type { TracerEnv };
