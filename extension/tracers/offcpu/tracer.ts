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
import type { Tracer } from '../tracer';
import { loadFirstWorking, readCounter, setRodata } from '../bpfObject';
import { onlineCpus } from '../profile/tracer';
import { assemble, readStacks, symbolizeStacks, type RawStack } from '../profile/stacks';
import { agentLibrary, agentUnavailableMessage, checkAgentTarget, foreignOwner, startJavaAgent, type JavaAgentSession } from '../javaAgent/agent';
import type { RingBufferHandle } from '../../../native/index';
import fs from 'node:fs';
import { addHeld, addOpenIntervals, decodeHeld, decodeJavaRecord, decodeStarts, decodeTotals, OFFCPU_JAVA_SIZE, OFFCPU_STAT, parseProcStack, stateOfLetter, type OffcpuEntry } from './decode';
import { unsuitableError } from '../../protocol/errors';
import { kernelRelease, releaseAtLeast } from '../../sys/kernelRelease';
import type { CountEntry } from '../profile/decode';
import { addLockFrames, addVirtualThreads, startLockSession } from '../javaLocks/tracer';
import { cfiRowCapacity, cfiStackReader, cfiSummary, CfiTables, cfiUnwindInfo } from '../cfiTables';

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

/** --unwind cfi: the target's tables, compiled before the object is loaded (they size its map). */
function cfiTablesFor(options: OffcpuOptions, log: (m: string) => void): CfiTables | undefined {
  if (options.unwind !== 'cfi') return undefined;
  if (!options.pid) throw inputError('--unwind cfi needs --pid: unwind tables are loaded for one process');
  const t = new CfiTables(log);
  t.plan(options.pid);
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
      unwind: oneOf(o, 'unwind', ['fp', 'cfi'] as const, 'fp'),
    };
  },
  async start(options, env, events) {
    const wall = options.event === 'wall';
    const warnings: string[] = [];
    // The target by pid and start time, read first: the BPF programs signal and sample no other process
    const target: ProcessIdentity | undefined = options.pid ? { pid: options.pid, startTime: checkPid(options.pid).startTime } : undefined;
    const info = options.pid ? processInfo(options.pid) : undefined;
    if (options.pid && !info) throw inputError(`no process with pid ${options.pid} is running (check with: ps -p ${options.pid})`);
    const release = kernelRelease();
    if (!releaseAtLeast(release, 5, 15))
      throw unsuitableError(`off-CPU and wall-clock profiles need Linux 5.15 or later (this kernel is ${release}): each thread's state is kept in BPF task storage and its user registers are read with bpf_task_pt_regs. CPU profiles (ebpf-studio profile --event cpu) work on this kernel`);
    const javaMode = options.java ?? 'auto';
    if (options.pid && javaMode === 'agent' && !info?.jvm) {
      checkAgentTarget(options.pid, env.requester);
      throw unsuitableError(`pid ${options.pid} is not a HotSpot JVM (no libjvm.so mapped): --java agent loads a JVMTI agent into a JVM; trace it without --java`);
    }
    let java: JavaAgentSession | undefined;
    if (info?.jvm && (javaMode === 'agent' || (javaMode === 'auto' && !info.jvm.preserveFramePointer))) {
      const owner = foreignOwner(options.pid, env.requester);
      if (owner !== undefined || !agentLibrary(env.assetDir)) {
        if (javaMode === 'agent') checkAgentTarget(options.pid, env.requester);
        if (javaMode === 'agent') throw unsuitableError(agentUnavailableMessage(env.assetDir));
        warnings.push(owner !== undefined ? `pid ${options.pid} is a JVM of uid ${owner}, not yours: no Java agent is loaded into it, so its Java frames stay unnamed` : `${agentUnavailableMessage(env.assetDir)}: blocked threads keep their kernel and native stacks only`);
      } else java = await startJavaAgent(options.pid, env, { unwind: 'fp', keepStacks: true });
    }
    const programs = PROGRAMS(wall, Boolean(java));
    const cfi = cfiTablesFor(options, env.log);
    let loaded: ReturnType<typeof loadFirstWorking>;
    try {
      loaded = loadFirstWorking(env, 'offcpu', [programs], (o) => {
        o.setMaxEntries('stacks', options.stackStorageSize);
        // without tables the walk's maps stay one entry each (the stacks map is preallocated)
        if (cfi) cfi.size(o, cfiRowCapacity(cfi.plannedRows), options.stackStorageSize);
        else o.setMaxEntries('cfi_stacks', 1);
        setRodata(o, { target_tgid: options.pid, ...bootStartRange(target), min_block_ns: BigInt(options.minBlockUs) * 1000n, sample_ns: wall ? BigInt(Math.round(1e9 / options.frequency)) : 0n, java_join: Boolean(java), signal_euid: java ? java.euid : 0xffffffff, cfi_unwind: Boolean(cfi) });
      });
      try {
        cfi?.load(loaded.obj);
      } catch (e) {
        loaded.obj.close();
        throw e;
      }
    } catch (e) {
      await java?.abort();
      throw e;
    }
    const { obj } = loaded;
    // Java join: intervals held until sys_exit come through this ring, with the thread's signal
    const javaIds = new Map<string, CountEntry>();
    const commOf = new Map<number, string>();
    let ring: RingBufferHandle | undefined;
    if (java) {
      const session = java;
      ring = obj.openRingBuffer('java_samples', (batch, offsets) => {
        for (let i = 0; i + 1 < offsets.length; i++) {
          const rec = batch.subarray(offsets[i], offsets[i + 1]);
          if (rec.length < OFFCPU_JAVA_SIZE) continue;
          const r = decodeJavaRecord(rec);
          const ids = `${r.tid}/${r.userStackId}/${r.kernStackId}`;
          if (!javaIds.has(ids)) {
            let comm = commOf.get(r.tid);
            if (comm === undefined) commOf.set(r.tid, (comm = threadOwner(r.tid)?.comm ?? ''));
            javaIds.set(ids, { pid: options.pid, tid: r.tid, userStackId: r.userStackId, kernStackId: r.kernStackId, comm, count: 0 });
          }
          session.addOffcpuSample(r.tid, r.nsTid, r.ktimeNs, { userStackId: r.userStackId, kernStackId: r.kernStackId }, Math.round(r.totalNs / 1000), r.state, r.count);
        }
      });
    }
    const links: number[] = [];
    try {
      for (const p of programs.filter((p) => !NOT_ATTACHED.has(p))) links.push(obj.attach(p));
    } catch (e) {
      ring?.close();
      obj.close();
      await java?.abort();
      throw fromBpfError('attaching the scheduler tracepoints (tp_btf)', e);
    }
    if (wall) {
      try {
        for (const cpu of onlineCpus()) links.push(obj.attachPerfEvent('on_cpu_sample', { type: 'cpu-clock', frequency: options.frequency, cpu }));
      } catch (e) {
        ring?.close();
        obj.close();
        await java?.abort();
        throw fromBpfError(`opening cpu-clock perf events at ${options.frequency} Hz`, e);
      }
    }
    const attachedAt = process.hrtime.bigint();
    const tidsAtStart = options.pid ? threadIds(options.pid) : [];
    env.log(`offcpu: attached via tp_btf${wall ? ` with on-CPU samples at ${options.frequency} Hz` : ''}${java ? ', Java stacks from the agent at each return to user space' : ''}`);
    const jvm = info?.jvm && foreignOwner(options.pid, env.requester) === undefined;
    // With the agent, its lock session runs alongside (../javaLocks): Java lock waits name their
    // lock (and a park's holder; a monitor's would take a safepoint per contended enter, seen in
    // the waits measured here), and on JDK 21+ virtual threads' waits are added and idle carriers marked
    const locks = java ? ((await startLockSession(options.pid, env, { locks: true, vthreads: true, monitorOwners: false }).catch((e: Error) => void env.log(`offcpu: Java lock waits keep no lock frame: ${e.message}`))) ?? undefined) : undefined;
    if (info?.jvm && !info.jvm.preserveFramePointer && !java)
      warnings.push(`pid ${options.pid} is a JVM without -XX:+PreserveFramePointer: off-CPU stacks are walked by frame pointers, so Java callers above the first compiled frame are lost. Restart it with -XX:+PreserveFramePointer for whole Java stacks`);

    const started = Date.now();
    const symbolizer = new Symbolizer({ log: env.log });
    const images = new Map<number, ProcessImage>();
    // The target by its start time too: its pid may be another process's by now.
    const running = (pid: number) => (target && pid === target.pid ? sameProcess(target) : pidAlive(pid));
    const capture = (pid: number) => {
      if (pid === 0 || !running(pid)) return;
      try {
        images.set(pid, symbolizer.captureProcess(pid));
      } catch (e) {
        env.log(`offcpu: cannot read the mappings of pid ${pid}: ${(e as Error).message}`);
      }
    };
    if (options.pid) capture(options.pid);

    let closed = false;
    const counts = () => ({ samples: readStat(obj, OFFCPU_STAT.blocks) + readStat(obj, OFFCPU_STAT.samples), lost: readStat(obj, OFFCPU_STAT.lost) + readStat(obj, OFFCPU_STAT.lostStart) + readStat(obj, OFFCPU_STAT.lostTotals) });
    let totals = { samples: 0, lost: 0 };
    let entries: OffcpuEntry[] = [];
    const collect = (final = false) => {
      // The threads' held running totals are read before the totals map: one moved between the
      // two reads is counted twice in a live view (at most OFFCPU_AGG_MAX_NS), never lost; the
      // final read comes after the programs are detached, so nothing moves.
      totals = counts();
      const threads = obj.runIterator('dump_threads');
      const d = obj.mapDump('totals');
      entries = addHeld(decodeTotals(d.keys, d.values, d.count), decodeHeld(threads));
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
        if (java) {
          const p = obj.mapDump('pending');
          for (let i = 0; i < p.count; i++) {
            const r = decodeJavaRecord(p.values.subarray(i * OFFCPU_JAVA_SIZE, (i + 1) * OFFCPU_JAVA_SIZE));
            const owner = threadOwner(r.tid);
            open.push({ tid: r.tid, pid: options.pid, comm: owner?.comm ?? '', ns: r.totalNs, userStackId: r.userStackId, kernStackId: r.kernStackId, state: r.state, ts: 0n });
          }
        }
        entries = addOpenIntervals(entries, open);
      }
      const read = stackReader(obj, Boolean(cfi));
      const stacks = read.notes(readStacks(entries, read.read));
      javaRaw = read.notes(readStacks([...javaIds.values()], read.read));
      return stacks;
    };
    let javaRaw: RawStack[] = [];
    const seen = new Set<number>();
    let ticks = 0;
    const timer = setInterval(() => {
      if (closed) return;
      ticks++;
      try {
        const c = counts();
        events.update({ ...c, elapsedMs: Date.now() - started });
      } catch {
        return;
      }
      if (target) {
        if (ticks % 5 === 0) capture(target.pid);
        // libraries loaded since (dlopen): their tables, before their frames are walked again
        if (cfi && ticks % 5 === 0) refreshCfi(cfi, obj, target.pid, env.log);
      } else if (ticks % 2 === 0) {
        // Processes can exit while we trace: their mappings are captured while alive.
        try {
          const d = obj.mapDump('totals');
          for (const e of decodeTotals(d.keys, d.values, d.count)) {
            if (seen.has(e.pid)) continue;
            seen.add(e.pid);
            capture(e.pid);
          }
        } catch (e) {
          env.log(`offcpu: reading totals: ${(e as Error).message}`);
        }
      }
    }, TICK_MS);
    const unwatch = target
      ? watchTarget(target, () => {
          clearInterval(timer);
          events.ended('target-exited', `pid ${target.pid} exited`);
        })
      : () => undefined;

    let cfiInfo: Partial<UnwindInfo> = {};
    const result = (stacks: ProfileStack[]): ProfileResult => ({
      tracer: 'profile',
      unit: 'us',
      event: options.event,
      states: stateTotals(stacks),
      frequency: wall ? options.frequency : 0,
      samples: totals.samples,
      lost: totals.lost,
      stacks,
      // the header says where Java frames came from, and nothing about JIT for a native program
      unwind: { mode: cfi ? 'cfi' : 'fp', ...cfiInfo, ...(java ? { javaAgent: true } : jvm && options.javaPerfMap ? { perfMap: true } : {}) },
    });
    let final: ProfileResult | undefined;
    let raw: RawStack[] = [];
    let stoppedAt = 0n;
    const liveKernel = new Map<bigint, ProfileFrame[]>();
    const liveUser = new Map<number, Map<string, ProfileFrame[]>>();

    return {
      targets: options.pid ? [options.pid] : [],
      warnings,
      snapshot() {
        if (final) return final;
        try {
          raw = collect();
        } catch {
          /* closing: keep the last read */
        }
        const live = result(offcpuStacks(raw, entries.map((e) => e.state), entries.map((e) => e.totalNs), liveKernel, liveUser));
        if (!java) return live;
        const joined = java.live(live, [...raw, ...javaRaw], (raws) => assemble(raws, liveKernel, liveUser).map((st) => ({ ...st, frames: dropTracingFrames(st.frames) })));
        const refined = refineJavaStates(joined.stacks);
        if (!locks) return { ...joined, stacks: refined, states: stateTotals(refined) };
        // The lock frames live too: the agent's file is read from where the last read ended, and
        // the join is the same as at stop, over the waits seen so far. The join compares each
        // lock-state stack with every wait, so past LIVE_LOCK_WAITS_MAX waits (a lock handed over
        // thousands of times a second) the live view goes without them; the final result has them.
        try {
          locks.read();
        } catch (e) {
          env.log(`offcpu: reading the Java lock waits: ${(e as Error).message}`);
        }
        if (locks.model.waits.length > LIVE_LOCK_WAITS_MAX) return { ...joined, stacks: refined, states: stateTotals(refined) };
        const withLocks = addVirtualThreads(addLockFrames(refined, locks.model, options.pid), locks.model, options.pid);
        return { ...joined, stacks: withLocks, states: stateTotals(withLocks) };
      },
      async stop() {
        if (final) return final;
        clearInterval(timer);
        unwatch();
        if (!closed) {
          closed = true;
          try {
            for (const l of links.splice(0)) obj.detach(l);
            raw = collect(true);
            const st = (k: keyof typeof OFFCPU_STAT) => readStat(obj, OFFCPU_STAT[k]);
            if (cfi) {
              env.log(cfiSummary(obj, cfi));
              cfiInfo = cfiUnwindInfo(obj, cfi);
            }
            env.log(`offcpu: ${st('switches')} switch-outs: stacks walked ${st('walks')} (${st('uncached')} of them preempted outside a system call's return, deeper than the signature reads, or kernel threads: never cached), reused ${st('reused')} (where the thread blocked last time); ${st('checks')} reuses checked by a walk, ${st('mismatch')} found other stacks`);
            ring?.close();
          } finally {
            obj.close();
          }
          stoppedAt = process.hrtime.bigint();
        }
        const pids = new Set(raw.map((r) => r.entry.pid));
        for (const pid of pids) capture(pid);
        if (jvm && options.javaPerfMap && running(options.pid)) {
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
          const windowUs = Number((stoppedAt - attachedAt) / 1000n);
          stacks.push(...blockedThroughout(options.pid, tidsAtStart, new Set(entries.map((e) => e.tid)), windowUs));
        }
        final = result(stacks);
        if (java) {
          const joined = await java.finish(final, [...raw, ...javaRaw], (raws) => assemble(raws, kernelFrames, userFrames).map((st) => ({ ...st, frames: dropTracingFrames(st.frames) })));
          const refined = refineJavaStates(joined.stacks);
          final = { ...joined, stacks: refined, states: stateTotals(refined) };
        }
        if (locks) {
          await locks.stop();
          const stacks = addVirtualThreads(addLockFrames(final.stacks, locks.model, options.pid), locks.model, options.pid);
          final = { ...final, stacks, states: stateTotals(stacks) };
        }
        return final;
      },
    };
  },
};
