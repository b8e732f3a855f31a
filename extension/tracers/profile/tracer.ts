// The CPU profiler: perf_event software cpu-clock at the chosen frequency on every online CPU
// (bpf/profile.bpf.c). User stacks are unwound one of two ways:
//  - dwarf (the default): each sample brings the user registers and a copy of the top of the user
//    stack through a ring buffer, unwound here by CFI (./profileDwarf.ts, libdw in the addon), so
//    stacks are whole through -O2 code, GCC leaf functions and Debian's libc;
//  - fp: the kernel walks frame pointers and counts per (pid, tid, user stack, kernel stack);
//    nothing is copied per sample (for very high frequencies, or to compare).
// Symbolized at the end (live snapshots name what a background pass has reached). For a JVM, the
// perf map is requested through the HotSpot attach socket at the end so methods compiled late are
// named; with the Java agent (./javaAgent.ts) Java frames come from the agent instead, joined to
// each sample's kernel and native stack (either unwind mode) live and at the end. Map decoders:
// ./profileDecode.ts.
import fs from 'node:fs';
import type { BpfObject } from '../../../native/index';
import { Symbolizer, type ProcessImage } from '../../sys/symbolize';
import type { ProfileFrame, ProfileOptions, ProfileResult, ProfileStack } from '../../protocol/profile';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_STORAGE, UNWIND_CHOICES, type UnwindInfo, type UnwindMode } from '../../protocol/profile';
import { asObject, bool, int, oneOf, PID_MAX } from '../../protocol/validate';
import { fromBpfError, unsuitableError } from '../../protocol/errors';
import { checkPid, pidAlive, processInfo } from '../../sys/proc/processes';
import { boolFlag, writePerfMap } from '../../sys/jvm/attach';
import type { Tracer, TracerEnv } from '../tracer';
import { loadFirstWorking, setRodata } from '../bpfObject';
import { decodeCounts, parseCpuList, PROFILE_STAT, sumPerCpu, type CountEntry } from './decode';
import { assemble, readStacks, symbolizeStacks, type RawStack } from './stacks';
import { DwarfAggregator, PROFILE_DEFAULT_STACK_COPY, PROFILE_SAMPLE_HEADER_SIZE, PROFILE_MAX_STACK_COPY } from './dwarf';
import { records } from '../bpfObject';
import { unwindModules } from './unwindModules';
import { agentLibrary, agentUnavailableMessage, checkAgentTarget, foreignOwner, JAVA_MODES, startJavaAgent, type JavaAgentSession } from '../javaAgent/agent';

export * from './decode';

const TICK_MS = 1000;

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

/** The running kernel's GNU build-id from /sys/kernel/notes (raw ELF notes), for pprof's kernel mapping. */
function readKernelBuildId(): string | undefined {
  let d: Buffer;
  try {
    d = fs.readFileSync('/sys/kernel/notes');
  } catch {
    return undefined;
  }
  const align4 = (n: number) => (n + 3) & ~3;
  for (let o = 0; o + 12 <= d.length; ) {
    const namesz = d.readUInt32LE(o);
    const descsz = d.readUInt32LE(o + 4);
    const type = d.readUInt32LE(o + 8);
    const name = d.toString('latin1', o + 12, o + 12 + Math.max(0, namesz - 1));
    const desc = o + 12 + align4(namesz);
    if (name === 'GNU' && type === 3) return d.toString('hex', desc, desc + descsz);
    o = desc + align4(descsz);
  }
  return undefined;
}

function readStat(obj: BpfObject, index: number): number {
  const key = Buffer.alloc(4);
  key.writeUInt32LE(index);
  return sumPerCpu(obj.mapLookup('stats', key));
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
    };
  },
  async start(options, env, events) {
    const warnings: string[] = [];
    const cmdline = options.pid ? (checkPid(options.pid), processInfo(options.pid)) : undefined;
    const jvmPids = new Set<number>();
    let java: JavaAgentSession | undefined; // the JVMTI agent path, when Java frames come from the agent
    // auto is CFI: libdw uses each module's .eh_frame/.debug_frame and walks frame pointers only
    // through code that has no CFI (JIT code), which is "frame pointers where they are all there is".
    // A JVM profiled with the Java agent is unwound the same way: auto picks CFI for it too. Its
    // Java frames come from the agent, not from the unwind, so what the unwind has to get right
    // is the native part under the first JIT or interpreter frame (JNI libraries, libjvm's
    // runtime, libc, the kernel entry), and there CFI keeps callers that frame pointers lose
    // (Debian's libz and libc have no frame pointers). The cost is in the helper (~30 µs of
    // unwinding per sample) plus a 16 KiB copy per sample in the kernel, nothing in the JVM.
    // The join (./javaAgent.ts) is by tid and time either way; fp stays available (--unwind fp).
    const mode: UnwindMode = options.unwind === 'fp' ? 'fp' : 'dwarf';
    if (options.pid && options.java === 'agent' && !cmdline?.jvm) {
      // Not seen as a JVM: maybe another user's, whose maps we cannot read. The target checks
      // (owner first) say why; a readable process without libjvm.so is no JVM at all.
      checkAgentTarget(options.pid, env.requester);
      throw unsuitableError(`pid ${options.pid} is not a HotSpot JVM (no libjvm.so mapped): --java agent loads a JVMTI agent into a JVM; profile it without --java`);
    }
    if (cmdline?.jvm) {
      const owner = foreignOwner(options.pid, env.requester);
      if (owner === undefined) jvmPids.add(options.pid);
      const fp = options.java === 'agent' ? false : await jvmPreservesFramePointer(options.pid, cmdline.cmdline, env, options.javaPerfMap && owner === undefined);
      // Where the agent would be used, refuse (checkAgentTarget names owner, requester and fix);
      // otherwise native and kernel frames only: no attach request into another user's JVM.
      if (owner !== undefined && (options.java === 'agent' || (options.java === 'auto' && !fp))) checkAgentTarget(options.pid, env.requester);
      if (owner !== undefined) {
        warnings.push(`pid ${options.pid} is a JVM of uid ${owner}, not yours (uid ${env.requester?.uid}): eBPF Studio sends no attach request into another user's JVM (no Java agent, no perf map), so its Java frames show as [unknown]. Profile it as root (sudo) or as uid ${owner}`);
      } else if (options.java === 'auto' && !fp && !agentLibrary(env.assetDir)) warnings.push(`${agentUnavailableMessage(env.assetDir)}. ${preserveFramePointerAdvice(options.pid, cmdline.cmdline)}`);
      else if (options.java === 'agent' || (options.java === 'auto' && !fp)) java = await startJavaAgent(options.pid, env, { unwind: mode });
      else if (!fp) warnings.push(preserveFramePointerAdvice(options.pid, cmdline.cmdline));
    }
    const stackCopyBytes = options.stackCopyBytes ?? PROFILE_DEFAULT_STACK_COPY;
    let loaded: ReturnType<typeof loadFirstWorking>;
    try {
      loaded = loadFirstWorking(env, 'profile', [['on_sample']], (o) => {
        o.setMaxEntries('stacks', options.stackStorageSize ?? PROFILE_DEFAULT_STACK_STORAGE);
        // ring buffer: ~half a second of the largest samples on every CPU, as a power of two
        if (mode === 'dwarf') {
          o.setMaxEntries('samples', ringBytes(options.frequency, stackCopyBytes, onlineCpus().length));
          o.setMaxEntries('scratch', env.addon.numPossibleCpus());
        }
        setRodata(o, { target_pid: options.pid, include_idle: options.includeIdle, unwind_dwarf: mode === 'dwarf', stack_copy_bytes: stackCopyBytes, signal_target: Boolean(java) });
      });
      // Java agent: signal_target, and in fp mode the java_samples ring (in dwarf mode
      // the samples ring carries tid and time, forwarded below once unwound)
      if (mode === 'fp') java?.attachRing(loaded.obj);
    } catch (e) {
      await java?.abort();
      throw e;
    }
    const { obj } = loaded;
    const warnOpts = mode === 'dwarf' ? ({ stacks: 'cfi' } as const) : ({ stacks: 'fp', fpFix: 'or profile with --unwind dwarf (the default), which unwinds by CFI' } as const);
    const dwarf = mode === 'dwarf' ? new DwarfAggregator(env.addon, stackCopyBytes, env.log) : undefined;
    let ring: ReturnType<BpfObject['openRingBuffer']> | undefined;
    if (dwarf && options.pid) dwarf.pool.prime(options.pid);
    if (dwarf) {
      try {
        ring = obj.openRingBuffer('samples', (batch, offsets) => {
          for (const rec of records(batch, offsets)) {
            try {
              const u = dwarf.add(rec);
              if (java && u.sample.pid === options.pid) java.addCfiSample(u.sample.tid, u.sample.nsTid, u.sample.ts, { user: u.user, kernStackId: u.sample.kernStackId, note: u.note, comm: u.sample.comm });
            } catch (e) {
              env.log(`profile: a sample could not be unwound: ${(e as Error).message}`);
            }
          }
        });
      } catch (e) {
        obj.close();
        throw fromBpfError('opening the profiler ring buffer', e);
      }
    }
    const cpus = onlineCpus();
    try {
      for (const cpu of cpus) obj.attachPerfEvent('on_sample', { type: 'cpu-clock', frequency: options.frequency, cpu });
    } catch (e) {
      obj.close();
      await java?.abort();
      throw fromBpfError(`opening cpu-clock perf events at ${options.frequency} Hz`, e);
    }
    const started = Date.now();
    const symbolizer = new Symbolizer({ log: env.log });
    const images = new Map<number, ProcessImage>();
    const capture = (pid: number) => {
      if (pid === 0 || !pidAlive(pid)) return;
      try {
        images.set(pid, symbolizer.captureProcess(pid));
      } catch (e) {
        env.log(`profile: cannot read the mappings of pid ${pid}: ${(e as Error).message}`);
      }
    };
    if (options.pid) {
      capture(options.pid);
      const img = images.get(options.pid);
      if (img) warnings.push(...symbolizer.warnings(img, warnOpts));
    }

    // Processes can exit or dlopen while we sample: their mappings are captured while alive.
    let ticks = 0;
    const seen = new Set<number>();
    const tick = () => {
      ticks++;
      let samples = 0;
      let lost = 0;
      try {
        samples = readStat(obj, PROFILE_STAT.samples);
        lost = readStat(obj, PROFILE_STAT.lost);
      } catch {
        return;
      }
      events.update({ samples, lost, elapsedMs: Date.now() - started });
      if (options.pid) {
        if (!pidAlive(options.pid)) {
          clearInterval(timer);
          events.ended('target-exited', `pid ${options.pid} exited`);
        } else if (ticks % 5 === 0) capture(options.pid);
      } else if (ticks % 2 === 0) {
        try {
          const d = obj.mapDump('counts');
          for (const e of decodeCounts(d.keys, d.values, d.count)) {
            if (seen.has(e.pid)) continue;
            seen.add(e.pid);
            capture(e.pid);
          }
        } catch (e) {
          env.log(`profile: reading counts: ${(e as Error).message}`);
        }
      }
    };
    const timer = setInterval(tick, TICK_MS);

    const kernelFrames = new Map<bigint, ProfileFrame[]>();
    const userFrames = new Map<number, Map<string, ProfileFrame[]>>();
    let totals = { samples: 0, lost: 0 };
    let rawLast: RawStack[] = [];
    let final: ProfileResult | undefined;
    let closed = false;
    const liveKernelFrames = new Map<bigint, ProfileFrame[]>();
    const liveUserFrames = new Map<number, Map<string, ProfileFrame[]>>();
    let liveNaming: Promise<void> | undefined;

    const collect = (): RawStack[] => {
      totals = { samples: readStat(obj, PROFILE_STAT.samples), lost: readStat(obj, PROFILE_STAT.lost) };
      if (dwarf) return dwarf.raw((id) => obj.readStack('stacks', id));
      const d = obj.mapDump('counts');
      const entries: CountEntry[] = decodeCounts(d.keys, d.values, d.count);
      return readStacks(entries, (id) => obj.readStack('stacks', id));
    };
    let unwindModuleInfo: UnwindInfo['modules'];
    const unwindInfo = (): UnwindInfo => {
      if (!dwarf) return { mode, ...(java ? { javaAgent: true } : {}) };
      return {
        mode,
        ...(java ? { javaAgent: true } : {}),
        // With the agent the unwind only has to reach the first JIT frame; what it does beyond
        // (frame-pointer guesses through JIT code, often off the copied stack) is cut by the join,
        // so "deeper than the copy" would blame the copy size for nothing.
        truncated: java ? undefined : dwarf.stats.truncated,
        unwindNsPerSample: dwarf.pool.nsPerStack(),
        ...(unwindModuleInfo ? { modules: unwindModuleInfo } : {}),
      };
    };
    const buildIds = new Map<string, string>();
    const result = (stacks: ProfileStack[]): ProfileResult => ({
      tracer: 'profile',
      unit: 'samples',
      frequency: options.frequency,
      samples: totals.samples,
      lost: totals.lost,
      stacks,
      unwind: unwindInfo(),
      ...(buildIds.size ? { buildIds: Object.fromEntries(buildIds) } : {}),
    });

    return {
      targets: options.pid ? [options.pid] : [],
      warnings,
      snapshot() {
        if (final) return final;
        try {
          rawLast = collect();
        } catch {
          /* object closing: keep the last read */
        }
        // Frames are named by what a background pass has symbolized so far (one pass at a time,
        // started by snapshots only: a CLI run never pays for it). Its caches are not the final
        // ones: the final profile is symbolized afresh once the JVM's perf map is fetched.
        if (!liveNaming && !closed) {
          liveNaming = symbolizeStacks(rawLast, symbolizer, (pid) => images.get(pid), liveKernelFrames, liveUserFrames, () => undefined)
            .catch(() => undefined)
            .finally(() => (liveNaming = undefined));
        }
        const live = result(assemble(rawLast, liveKernelFrames, liveUserFrames));
        // Java frames from the agent, joined as far as its records have come in.
        return java ? java.live(live, rawLast, (raws) => assemble(raws, liveKernelFrames, liveUserFrames)) : live;
      },
      async stop() {
        if (final) return final;
        clearInterval(timer);
        await liveNaming;
        if (!closed) {
          closed = true;
          try {
            ring?.close();
            rawLast = collect();
          } finally {
            obj.close();
          }
          if (dwarf && options.pid && pidAlive(options.pid)) {
            try {
              unwindModuleInfo = unwindModules(dwarf.modules(options.pid));
            } catch (e) {
              env.log(`profile: listing the modules of pid ${options.pid}: ${(e as Error).message}`);
            }
          }
          dwarf?.close();
        }
        const pids = new Set(rawLast.map((r) => r.entry.pid));
        const late: string[] = [];
        for (const pid of pids) {
          if (!pidAlive(pid)) continue;
          capture(pid);
          if (options.javaPerfMap && !jvmPids.has(pid) && !options.pid && processInfo(pid)?.jvm && foreignOwner(pid, env.requester) === undefined) jvmPids.add(pid);
        }
        if (options.javaPerfMap) {
          await Promise.all(
            [...jvmPids].filter((p) => pids.has(p) && pidAlive(p)).map(async (pid) => {
              try {
                await writePerfMap(pid, { timeoutMs: 8000 });
                const img = images.get(pid);
                if (img) symbolizer.refreshPerfMap(img);
              } catch (e) {
                late.push(`Java methods of pid ${pid} are not named: fetching its perf map failed: ${(e as Error).message}`);
              }
            }),
          );
        }
        await symbolizeStacks(rawLast, symbolizer, (pid) => images.get(pid), kernelFrames, userFrames, env.log, buildIds);
        const kernelBuildId = readKernelBuildId();
        if (kernelBuildId) buildIds.set('[kernel]', kernelBuildId);
        // Debug-info and frame-pointer findings are known only once modules were touched.
        const told = new Set(warnings);
        for (const pid of options.pid ? [options.pid] : []) {
          const img = images.get(pid);
          for (const w of img ? symbolizer.warnings(img, warnOpts) : []) if (!told.has(w)) late.push(w);
        }
        symbolizer.dispose();
        for (const w of late) env.log(`profile: ${w}`);
        if (late.length) events.update({ samples: totals.samples, lost: totals.lost, elapsedMs: Date.now() - started, warnings: late });
        final = result(assemble(rawLast, kernelFrames, userFrames));
        // Java agent: Java frames from the agent replace the target's truncated stacks
        if (java) final = await java.finish(final, rawLast, (raws) => assemble(raws, kernelFrames, userFrames));
        return final;
      },
    };
  },
};

