// The CPU profiler: perf_event software cpu-clock at the chosen frequency on every online CPU,
// counts per (pid, tid, user stack, kernel stack) in the kernel (bpf/profile.bpf.c), read and
// symbolized once at the end. For a JVM, the perf map is requested through the HotSpot attach
// socket at the end so methods compiled late are named. Map decoders: ./profileDecode.ts.
import fs from 'node:fs';
import type { BpfObject } from '../../native/index';
import { Symbolizer, type ProcessImage } from '../symbolize';
import type { ProfileFrame, ProfileOptions, ProfileResult, ProfileStack } from '../shared/profile';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_STORAGE } from '../shared/profile';
import { asObject, bool, int, oneOf, PID_MAX } from '../shared/validate';
import { fromBpfError } from '../shared/errors';
import { checkPid, pidAlive, processInfo } from '../proc/processes';
import { boolFlag, writePerfMap } from '../jvm/attach';
import type { Tracer, TracerEnv } from './tracer';
import { loadFirstWorking, setRodata } from './bpfObject';
import { decodeCounts, parseCpuList, PROFILE_STAT, sumPerCpu, type CountEntry } from './profileDecode';
import { assemble, readStacks, symbolizeStacks, type RawStack } from './profileStacks';
import { agentLibrary, agentUnavailableMessage, JAVA_MODES, startJavaAgent, type JavaAgentSession } from './javaAgent';

export * from './profileDecode';

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
      java: oneOf(o, 'java', JAVA_MODES, 'auto'),
    };
  },
  async start(options, env, events) {
    const warnings: string[] = [];
    const cmdline = options.pid ? (checkPid(options.pid), processInfo(options.pid)) : undefined;
    const jvmPids = new Set<number>();
    let java: JavaAgentSession | undefined; // issue 14 hook (1/3): the JVMTI agent path
    if (cmdline?.jvm) {
      jvmPids.add(options.pid);
      const fp = options.java === 'agent' ? false : await jvmPreservesFramePointer(options.pid, cmdline.cmdline, env, options.javaPerfMap);
      if (options.java === 'auto' && !fp && !agentLibrary(env.assetDir)) warnings.push(`${agentUnavailableMessage(env.assetDir)}. ${preserveFramePointerAdvice(options.pid, cmdline.cmdline)}`);
      else if (options.java === 'agent' || (options.java === 'auto' && !fp)) java = await startJavaAgent(options.pid, env);
      else if (!fp) warnings.push(preserveFramePointerAdvice(options.pid, cmdline.cmdline));
    }
    let loaded: ReturnType<typeof loadFirstWorking>;
    try {
      loaded = loadFirstWorking(env, 'profile', [['on_sample']], (o) => {
        o.setMaxEntries('stacks', options.stackStorageSize ?? PROFILE_DEFAULT_STACK_STORAGE);
        setRodata(o, { target_pid: options.pid, include_idle: options.includeIdle, signal_target: Boolean(java) });
      });
      java?.attachRing(loaded.obj); // issue 14 hook (2/3): signal_target + the java_samples ring
    } catch (e) {
      await java?.abort();
      throw e;
    }
    const { obj } = loaded;
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
      if (img) warnings.push(...symbolizer.warnings(img));
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

    const collect = (): RawStack[] => {
      const d = obj.mapDump('counts');
      const entries: CountEntry[] = decodeCounts(d.keys, d.values, d.count);
      totals = { samples: readStat(obj, PROFILE_STAT.samples), lost: readStat(obj, PROFILE_STAT.lost) };
      return readStacks(entries, (id) => obj.readStack('stacks', id));
    };
    const result = (stacks: ProfileStack[]): ProfileResult => ({ tracer: 'profile', frequency: options.frequency, samples: totals.samples, lost: totals.lost, stacks });

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
        return result(assemble(rawLast, kernelFrames, userFrames));
      },
      async stop() {
        if (final) return final;
        clearInterval(timer);
        if (!closed) {
          closed = true;
          try {
            rawLast = collect();
          } finally {
            obj.close();
          }
        }
        const pids = new Set(rawLast.map((r) => r.entry.pid));
        const late: string[] = [];
        for (const pid of pids) {
          if (!pidAlive(pid)) continue;
          capture(pid);
          if (options.javaPerfMap && !jvmPids.has(pid) && !options.pid && processInfo(pid)?.jvm) jvmPids.add(pid);
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
        await symbolizeStacks(rawLast, symbolizer, (pid) => images.get(pid), kernelFrames, userFrames, env.log);
        // Debug-info and frame-pointer findings are known only once modules were touched.
        const told = new Set(warnings);
        for (const pid of options.pid ? [options.pid] : []) {
          const img = images.get(pid);
          for (const w of img ? symbolizer.warnings(img) : []) if (!told.has(w)) late.push(w);
        }
        symbolizer.dispose();
        for (const w of late) env.log(`profile: ${w}`);
        if (late.length) events.update({ samples: totals.samples, lost: totals.lost, elapsedMs: Date.now() - started, warnings: late });
        final = result(assemble(rawLast, kernelFrames, userFrames));
        // issue 14 hook (3/3): Java frames from the agent replace the target's truncated stacks
        if (java) final = await java.finish(final, rawLast, (raws) => assemble(raws, kernelFrames, userFrames));
        return final;
      },
    };
  },
};

