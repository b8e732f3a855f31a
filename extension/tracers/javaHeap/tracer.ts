// The Java heap tracer: sampled allocations of a running JVM and which of them are still alive,
// through eBPF Studio's JVMTI agent (native/jvmagent/agent.c, its heap commands), loaded without a
// restart like the CPU profiler's (../javaAgent/agent.ts: same copy in the JVM's /tmp, same attach
// socket, same refusals). No BPF: JVMTI's SampledObjectAlloc sees every Java allocation path
// (TLAB, outside TLAB, intrinsics) with the allocated class, which no uprobe on libjvm does.
//
// The agent writes records to a file in the JVM's /tmp, read here through /proc/PID/root every
// 250 ms (./decode.ts turns them into estimates). On stop the agent disables its events, deletes
// its weak references and frees its tables: the JVM is back to costing nothing.
import fs from 'node:fs';
import type { JavaHeapOptions, JavaHeapResult, JavaHeapUpdate } from '../../protocol/javaHeap';
import { JAVA_HEAP_DEFAULT_DEPTH, JAVA_HEAP_DEFAULT_INTERVAL_BYTES, JAVA_HEAP_MAX_DEPTH, JAVA_HEAP_MAX_INTERVAL_BYTES } from '../../protocol/javaHeap';
import { asObject, int, num, PID_MAX } from '../../protocol/validate';
import { inputError, unsuitableError } from '../../protocol/errors';
import { processInfo } from '../../sys/proc/processes';
import { jdkFeature, jdkVersion } from '../../sys/jvm/release';
import type { Tracer, TracerEnv } from '../tracer';
import { agentLibrary, agentUnavailableMessage, foreignOwner, placeAgent, tmpIsNoexec } from '../javaAgent/agent';
import { agentPartSession, startAgentPart } from '../javaAgent/agentPart';
import { JavaHeapModel } from './decode';

/** Agent_OnAttach's return codes for the heap commands (agent.c) as user-facing reasons. */
const HEAP_CODES: Record<number, string> = {
  103: "the agent could not create its output file in the JVM's /tmp (read-only or full /tmp?)",
  104: 'the agent rejected its options (a mismatched agent build?)',
  105: "the JVM is out of memory for the agent's tables",
  110: 'this JVM has no JVMTI 11, so no heap sampling (SampledObjectAlloc needs JDK 11 or newer): run the program on JDK 11+, or trace native allocations with `ebpf-studio memleak --native --pid P`',
  111: 'the JVM refused the agent the heap-sampling capability (another agent may hold it)',
};

export { jdkFeature, jdkVersion } from '../../sys/jvm/release';

/** Refusals before anything is written into the target: not a JVM (exit 2), a JDK without heap sampling, attach off, another user, noexec /tmp (exit 4). */
export function checkHeapTarget(pid: number, requester?: TracerEnv['requester']): { uid: number; gid: number; jdk?: string } {
  const info = processInfo(pid);
  if (!info) throw inputError(`no process with pid ${pid} is running (check with: ps -p ${pid})`);
  if (!info.jvm)
    throw inputError(
      `pid ${pid} (${info.comm}) is not a JVM (no libjvm.so mapped), so it has no Java allocations to sample: for native allocations use \`ebpf-studio memleak --pid ${pid}\` (malloc/free by stack)`,
    );
  const jdk = jdkVersion(pid, info.jvm.javaHome);
  if (jdk && jdkFeature(jdk) < 11)
    throw unsuitableError(
      `pid ${pid} runs JDK ${jdk} (${info.jvm.javaHome}), which cannot sample heap allocations (JVMTI SampledObjectAlloc came in JDK 11): run the program on JDK 11 or newer, or trace its native allocations with \`ebpf-studio memleak --native --pid ${pid}\``,
    );
  if (info.cmdline.includes('-XX:+DisableAttachMechanism')) throw unsuitableError(`pid ${pid} runs with -XX:+DisableAttachMechanism, so no agent can be loaded into it: restart it without that flag`);
  if (info.cmdline.includes('-XX:-EnableDynamicAgentLoading')) throw unsuitableError(`pid ${pid} runs with -XX:-EnableDynamicAgentLoading (JDK 21+), so no agent can be loaded into it: start it with -XX:+EnableDynamicAgentLoading`);
  const owner = foreignOwner(pid, requester);
  if (owner !== undefined) throw unsuitableError(`pid ${pid} is a JVM of uid ${owner}, not yours (uid ${requester?.uid}): loading the Java agent into another user's JVM needs root. Run as root (sudo) or as uid ${owner}`);
  if (tmpIsNoexec(pid)) throw unsuitableError(`pid ${pid}'s /tmp is mounted noexec, so the JVM cannot load the Java agent from there: give its /tmp exec (e.g. docker run --tmpfs /tmp:exec)`);
  return { uid: info.uid, gid: readGid(pid), jdk };
}

function readGid(pid: number): number {
  try {
    const m = /^Gid:\s+\d+\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}

function monotonicNs(): bigint {
  return process.hrtime.bigint(); // CLOCK_MONOTONIC: the agent's clock
}

export const javaHeapTracer: Tracer<'java-heap'> = {
  name: 'java-heap',
  validate(raw): JavaHeapOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 1, PID_MAX),
      intervalBytes: int(o, 'intervalBytes', 1, JAVA_HEAP_MAX_INTERVAL_BYTES, JAVA_HEAP_DEFAULT_INTERVAL_BYTES),
      depth: int(o, 'depth', 1, JAVA_HEAP_MAX_DEPTH, JAVA_HEAP_DEFAULT_DEPTH),
      top: int(o, 'top', 0, 100000, 20),
      intervalS: num(o, 'intervalS', 0.1, 3600, 2),
    };
  },
  async start(options, env, events) {
    const { pid } = options;
    const lib = agentLibrary(env.assetDir);
    if (!lib) throw unsuitableError(agentUnavailableMessage(env.assetDir));
    const ids = checkHeapTarget(pid, env.requester);
    const libInTarget = placeAgent(pid, lib, ids);
    const t0 = Date.now();
    const model = new JavaHeapModel(options.intervalBytes);
    const part = await startAgentPart(
      {
        pid,
        ids,
        libInTarget,
        label: 'java-heap',
        startCommand: (out) => `heap,out=${out},interval=${options.intervalBytes},depth=${options.depth ?? JAVA_HEAP_DEFAULT_DEPTH}`,
        stopCommand: 'heapstop',
        startFailure: (code) => `pid ${pid}${ids.jdk ? ` (JDK ${ids.jdk})` : ''}: the Java heap sampler did not start: ${HEAP_CODES[code] ?? `Agent_OnAttach returned ${code}`}`,
        encoding: 'latin1',
        feed: (text) => model.feed(text),
      },
      env,
    );
    env.log(`java-heap: sampling every ${options.intervalBytes} bytes in pid ${pid} (${libInTarget})`);
    let lastUpdate = Date.now();
    let updates = 0;

    const result = (): JavaHeapResult => ({
      tracer: 'java-heap',
      pid,
      sampleBytes: model.interval,
      stacks: model.liveStacks(monotonicNs(), 0),
      allocated: model.allocatedStacks(),
      samples: model.samples,
      gcs: model.sessionGcs,
      durationMs: Date.now() - t0,
      dropped: model.dropped,
      untracked: model.untracked,
      lost: 0,
      agentCallbackNs: model.callbackNs,
      ...(ids.jdk ? { jdk: ids.jdk } : {}),
    });

    const update = (): JavaHeapUpdate => {
      const t = model.totals();
      return { atMs: Date.now() - t0, totalBytes: t.liveBytes, totalAllocations: t.liveObjects, allocatedBytes: t.allocatedBytes, gcs: model.sessionGcs, stacks: model.liveStacks(monotonicNs(), options.top ?? 20), sampleBytes: model.interval };
    };

    return agentPartSession(
      {
        target: part.target,
        label: 'java-heap',
        read: part.read,
        tick: () => {
          // the first figures as soon as a GC has judged some samples (or after 1 s), then every interval
          const first = updates === 0 && (model.sessionGcs > 0 || Date.now() - t0 >= 1000) && model.samples > 0;
          if (first || (updates > 0 && Date.now() - lastUpdate >= (options.intervalS ?? 2) * 1000)) {
            lastUpdate = Date.now();
            updates++;
            events.update(update());
          }
        },
        result,
        end: async () => {
          await part.stop();
          if (!model.ended) env.log('java-heap: the agent file ended without its end mark; the last samples may be missing');
          const final = result();
          env.log(`java-heap: ${final.samples} samples, ${final.gcs} GCs, ${final.stacks.length} live sites; callback ${(final.agentCallbackNs / 1e6).toFixed(1)} ms in the JVM (${final.samples ? (final.agentCallbackNs / final.samples / 1000).toFixed(1) : 0} µs per sample)`);
          return final;
        },
      },
      env,
      events,
    );
  },
};
