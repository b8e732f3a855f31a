// The Java GC tracer: HotSpot's gc__begin/gc__end pause bracket and the memory-pool probes
// (which name the memory manager), from the JVM's own libjvm.so (or every USDT-capable
// libjvm.so, pid -1, in "all" mode). The kernel emits one event per collection as the JVM counts
// it (one memory manager's run; see bpf/java-gc.bpf.c for what fires under each collector) and
// one per safepoint; both arrive through ring buffers. Record decoders: ./decode.ts.
import fs from 'node:fs';
import type { BpfObject } from '../../../native/index';
import type { JavaGcEvent, JavaGcOptions, JavaSafepoint } from '../../protocol/javaGc';
import { buildResult } from '../../model/javaGcStats';
import { GcLive } from '../../model/javaGcLive';
import { fromBpfError, inputError, unsuitableError } from '../../protocol/errors';
import { asObject, bool, int, PID_MAX } from '../../protocol/validate';
import { checkPid, findJdks, libjvmUsdt, listProcesses, mapsOrExplain, noUsdtMessage, pidAlive, readStat } from '../../sys/proc/processes';
import { mappedFiles } from '../../sys/proc/maps';
import { ElfFile } from '../../sys/elf/elf';
import type { Tracer } from '../tracer';
import { loadFirstWorking, readCounter, records, setRodata } from '../bpfObject';
import { CTR_INFLIGHT_FULL, CTR_POOLS_FULL, CTR_RINGBUF_FULL, CTR_SAFEPOINT_LOST, decodeJavaGcEvent, decodeSafepoint, JAVA_GC_MAX_POOLS } from './decode';

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

/** The libjvm.so a JVM runs, or the reason it cannot be traced (pid errors come from checkPid). */
export function libjvmOf(pid: number): string {
  const stat = checkPid(pid);
  const libjvm = mappedFiles(mapsOrExplain(pid), /^libjvm\.so$/)[0];
  if (!libjvm) throw unsuitableError(`pid ${pid} (${stat.comm}) has no libjvm.so mapped: is it a JVM?`);
  // A JVM in another mount namespace (container) maps a path that is only valid from its root.
  const file = fs.existsSync(libjvm) ? libjvm : `/proc/${pid}/root${libjvm}`;
  if (!libjvmUsdt(file).usdt) throw unsuitableError(noUsdtMessage(libjvm));
  return file;
}

/** Every USDT-capable libjvm.so: installed JDKs plus those running JVMs map. */
export function allLibjvms(): { libs: string[]; skipped: string[] } {
  const libs = new Map<string, string>();
  const skipped: string[] = [];
  const add = (p: string) => {
    let real = p;
    try {
      real = fs.realpathSync(p);
    } catch {
      return;
    }
    if (libs.has(real) || skipped.includes(real)) return;
    if (libjvmUsdt(real).usdt) libs.set(real, real);
    else skipped.push(real);
  };
  for (const j of findJdks()) add(j.libjvm);
  for (const p of listProcesses({ jvmOnly: true })) if (p.jvm) add(p.jvm.libjvm);
  return { libs: [...libs.keys()], skipped };
}

// ---- the session ------------------------------------------------------------------------------
const TICK_MS = 500;
/** The ring buffer thread polls every 100 ms: let it hand over what is left after detaching. */
const DRAIN_MS = 250;

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
    };
  },
  async start(options, env, events) {
    const warnings: string[] = [];
    let libs: string[];
    const attachPid = options.all ? -1 : options.pid;
    const startTime = options.all ? undefined : checkPid(options.pid).startTime;
    if (options.all) {
      const found = allLibjvms();
      libs = found.libs;
      for (const s of found.skipped) warnings.push(`${s} has no USDT probes: JVMs running it are not traced`);
      if (libs.length === 0) {
        throw unsuitableError('no JDK with hotspot USDT probes was found (looked in /usr/lib/jvm, /opt, /usr/local and in running JVMs). Install one that has them, e.g. Debian/Ubuntu\'s openjdk-17-jdk.');
      }
    } else {
      libs = [libjvmOf(options.pid)];
    }

    const spLibs = libs.filter(hasSafepointProbes);
    const safepointsAvailable = spLibs.length > 0;
    const safepointsReason = safepointsAvailable
      ? undefined
      : `${libs.length === 1 ? libs[0] : 'no traced libjvm.so'} has no hs_private:safepoint__begin/end USDT probes: safepoints cannot be timed with this JDK`;
    const progs = [...PROBES.map(([p]) => p), ...(safepointsAvailable ? SAFEPOINT_PROBES.map(([p]) => p) : [])];
    // lazy_wakeup: records reach user space within the ring poller's 100 ms timeout rather than
    // waking it one by one; updates go out every TICK_MS anyway, and at hundreds of GCs and
    // safepoints a second the per-record wakeups were most of the tracer's own CPU time.
    const { obj } = loadFirstWorking(env, 'java-gc', [progs], (o) => setRodata(o, { min_duration_ns: BigInt(options.minUs) * 1000n, lazy_wakeup: true }));
    const links: number[] = [];
    try {
      for (const lib of libs) {
        for (const [prog, probe] of PROBES) links.push(obj.attachUsdt(prog, { binary: lib, provider: 'hotspot', name: probe, pid: attachPid }));
        if (spLibs.includes(lib)) for (const [prog, probe] of SAFEPOINT_PROBES) links.push(obj.attachUsdt(prog, { binary: lib, provider: 'hs_private', name: probe, pid: attachPid }));
        env.log(`java-gc: attached to ${lib} (pid ${attachPid})${spLibs.includes(lib) ? ', safepoints too' : ''}`);
      }
    } catch (e) {
      obj.close();
      if (!options.all && !pidAlive(options.pid)) throw inputError(`process ${options.pid} exited before the probes were attached`);
      throw fromBpfError(`attaching hotspot USDT probes in ${libs.join(', ')}`, e);
    }
    if (!safepointsAvailable) env.log(`java-gc: ${safepointsReason}`);

    const startNs = monoNs();
    // Every event for the CLI's document; a client that drew the live updates (the editor) asks
    // for a bounded result instead: running figures and the most recent events, so the helper's
    // memory and the size of what Stop sends back do not grow with the session.
    const all: JavaGcEvent[] = [];
    const allSafepoints: JavaSafepoint[] = [];
    const bounded = options.boundedResult ? new GcLive() : undefined;
    const pids = new Set<number>(options.all ? [] : [options.pid]);
    let fresh: JavaGcEvent[] = [];
    let freshSafepoints: JavaSafepoint[] = [];
    let lost = 0;
    let safepointsLost = 0;
    let closed = false;
    const onBatch = (batch: Buffer, offsets: Uint32Array) => {
      for (const r of records(batch, offsets)) {
        let e: JavaGcEvent;
        try {
          e = decodeJavaGcEvent(r);
        } catch (err) {
          // A stale object file: say so rather than throwing on the addon's callback.
          env.log(`java-gc: ${(err as Error).message}`);
          return;
        }
        pids.add(e.pid);
        if (!bounded && options.retain !== false) all.push(e);
        fresh.push(e);
      }
    };
    const onSafepoints = (batch: Buffer, offsets: Uint32Array) => {
      for (const r of records(batch, offsets)) {
        try {
          const sp = decodeSafepoint(r);
          if (!bounded && options.retain !== false) allSafepoints.push(sp);
          freshSafepoints.push(sp);
        } catch (err) {
          env.log(`java-gc: ${(err as Error).message}`);
          return;
        }
      }
    };
    const rbs: ReturnType<BpfObject['openRingBuffer']>[] = [];
    try {
      rbs.push(obj.openRingBuffer('events', onBatch));
      if (safepointsAvailable) rbs.push(obj.openRingBuffer('safepoints', onSafepoints));
    } catch (e) {
      for (const rb of rbs) rb.close();
      obj.close();
      throw fromBpfError('opening the java-gc ring buffers', e);
    }
    const readLost = () => {
      if (closed) return;
      lost = readCounter(obj, 'counters', CTR_RINGBUF_FULL) + readCounter(obj, 'counters', CTR_INFLIGHT_FULL);
      safepointsLost = readCounter(obj, 'counters', CTR_SAFEPOINT_LOST);
    };
    const pidList = () => [...pids].sort((a, b) => a - b);
    const flush = () => {
      readLost();
      const u = { events: fresh, safepoints: freshSafepoints, safepointsAvailable, safepointsReason, lost, pids: pidList(), startNs, nowNs: monoNs() };
      fresh = [];
      freshSafepoints = [];
      bounded?.apply(u);
      events.update(u);
    };
    let shutting: Promise<void> | undefined;
    const shutdown = () => (shutting ??= detachAndClose());
    const detachAndClose = async () => {
      clearInterval(timer);
      for (const l of links.splice(0)) {
        try {
          obj.detach(l);
        } catch {
          /* already gone */
        }
      }
      await new Promise((r) => setTimeout(r, DRAIN_MS));
      readLost();
      const poolsDropped = readCounter(obj, 'counters', CTR_POOLS_FULL);
      if (poolsDropped) env.log(`java-gc: ${poolsDropped} pool records did not fit (more than ${JAVA_GC_MAX_POOLS} pools per GC)`);
      // What arrived since the last tick still goes out live, so a view matches the result.
      if (fresh.length || freshSafepoints.length) flush();
      closed = true;
      for (const rb of rbs) rb.close();
      obj.close();
    };
    let ending = false;
    const timer = setInterval(() => {
      flush();
      if (options.all || ending) return;
      // Same pid but another start time: the JVM exited and the pid was reused.
      const alive = pidAlive(options.pid) && readStat(options.pid)?.startTime === startTime;
      if (!alive) {
        ending = true;
        void shutdown().then(() => {
          events.ended('target-exited', `pid ${options.pid} exited; ${bounded ? bounded.count : all.length} GCs traced`);
        });
      }
    }, TICK_MS);

    const result = () => {
      if (!bounded) return buildResult(pidList(), all, lost, { available: safepointsAvailable, reason: safepointsReason, events: allSafepoints, lost: safepointsLost });
      const r = bounded.toResult();
      return { ...r, pids: pidList(), lost, safepoints: { ...r.safepoints, available: safepointsAvailable, ...(safepointsReason ? { reason: safepointsReason } : {}), lost: safepointsLost } };
    };
    return {
      targets: options.all ? [] : [options.pid],
      warnings,
      snapshot: result,
      async stop() {
        await shutdown();
        return result();
      },
    };
  },
};
