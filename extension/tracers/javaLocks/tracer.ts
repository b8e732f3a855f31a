// The Java lock tracer (`ebpf-studio profile --pid P --event lock`): time Java threads waited for
// contended `synchronized` monitors (exact, JVMTI MonitorContendedEnter/Entered) and parked in
// java.util.concurrent locks (sampled), by the waiter's Java stack, the lock's class and the
// holder, through eBPF Studio's JVMTI agent (native/jvmagent/locks.c) loaded without a restart
// like the CPU profiler's (../javaAgent/agent.ts: same copy in the JVM's /tmp, same attach socket,
// same refusals). No BPF: which object a thread waits for, and who owns it, are JVM facts that no
// kernel event carries.
//
// The agent writes records to a file in the JVM's /tmp, read here through /proc/PID/root every
// 250 ms. On stop the agent disables its events and its poller: the JVM is back to costing nothing.
import type { ProfileUpdate } from '../../protocol/profile';
import { JAVA_LOCKS_DEFAULT_DEPTH, JAVA_LOCKS_DEFAULT_PARK_PERIOD_US, JAVA_LOCKS_MAX_DEPTH, JAVA_LOCKS_MAX_PARK_PERIOD_US, JAVA_LOCKS_MIN_PARK_PERIOD_US, type JavaLocksOptions } from '../../protocol/javaLocks';
import { asObject, bool, int, PID_MAX } from '../../protocol/validate';
import { inputError, unsuitableError } from '../../protocol/errors';
import { processInfo } from '../../sys/proc/processes';
import type { Tracer, TracerEnv } from '../tracer';
import { agentLibrary, agentUnavailableMessage, checkAgentTarget, placeAgent } from '../javaAgent/agent';
import { agentPartSession, startAgentPart } from '../javaAgent/agentPart';
import type { ProcessIdentity } from '../../sys/proc/processes';
import { jdkFeature, jdkVersion } from '../javaHeap/tracer';
import { JavaLocksModel } from './decode';

export * from './decode';

/** Agent_OnAttach's return codes for the lock commands (locks.c) as user-facing reasons. */
const LOCKS_CODES: Record<number, string> = {
  103: "the agent could not create its output file in the JVM's /tmp (read-only or full /tmp?)",
  104: 'the agent rejected its options (a mismatched agent build?)',
  105: "the JVM is out of memory for the agent's tables",
  120: 'the JVM refused a JVMTI environment to the agent',
  121: 'the JVM refused the agent the monitor-event capability (another agent may hold it)',
  122: "this JVM does not report virtual threads' mounts and unmounts to agents (JDK 21 or newer with HotSpot's VirtualThreadMount/Unmount events is needed)",
};

/** A running lock (or virtual-thread) session of the agent in one JVM. */
export interface LockSession {
  readonly model: JavaLocksModel;
  readonly jdk: string | undefined;
  /** the JVM by pid and start time */
  readonly target: ProcessIdentity;
  /** reads what the agent appended since the last call */
  read(): void;
  /** stops the agent's session (events off, poller asleep), reads the rest, removes the file */
  stop(): Promise<void>;
}

/**
 * Starts the agent's lock session in the JVM `pid` (the refusals of the Java agent first: not a
 * JVM, attach off, another user, noexec /tmp). Used by this tracer and by the off-CPU profile,
 * which names the locks of its Java lock waits with it.
 */
/**
 * `vthreads`: follow virtual threads too; `locks` (default: not with vthreads): monitors and
 * parks. Both: a JVM without virtual threads goes on with locks only. `monitorOwners: false`:
 * do not ask who owns a contended monitor (a VM operation, a safepoint in JDK 17, per contended
 * enter; the off-CPU profile would see it in the waits it measures).
 */
export async function startLockSession(pid: number, env: TracerEnv, opts: { depth?: number; parkPeriodUs?: number; vthreads?: boolean; locks?: boolean; monitorOwners?: boolean }): Promise<LockSession> {
  const info = processInfo(pid);
  if (!info) throw inputError(`no process with pid ${pid} is running (check with: ps -p ${pid})`);
  if (!info.jvm) throw inputError(`pid ${pid} (${info.comm}) is not a JVM (no libjvm.so mapped): --event lock reads Java monitors and parks; for a native program's futex waits use \`ebpf-studio profile --pid ${pid} --event offcpu\` (the lock state)`);
  const lib = agentLibrary(env.assetDir);
  if (!lib) throw unsuitableError(agentUnavailableMessage(env.assetDir));
  const jdk = jdkVersion(pid, info.jvm.javaHome);
  const locks = opts.locks ?? !opts.vthreads;
  const vthreads = Boolean(opts.vthreads) && !(locks && jdk && jdkFeature(jdk) < 21);
  if (vthreads && !locks && jdk && jdkFeature(jdk) < 21)
    throw unsuitableError(`pid ${pid} runs JDK ${jdk} (${info.jvm.javaHome}), which has no virtual threads (JDK 21 or newer): its threads' waits are in \`ebpf-studio profile --pid ${pid} --event offcpu\` and its lock waits in --event lock`);
  const ids = checkAgentTarget(pid, env.requester);
  const libInTarget = placeAgent(pid, lib, ids);
  const depth = opts.depth ?? JAVA_LOCKS_DEFAULT_DEPTH;
  const period = opts.parkPeriodUs ?? JAVA_LOCKS_DEFAULT_PARK_PERIOD_US;
  const model = new JavaLocksModel();
  const part = await startAgentPart(
    {
      pid,
      ids,
      libInTarget,
      label: 'java-locks',
      startCommand: (out) => `locks,out=${out},depth=${depth},period=${period}${vthreads ? ',vthreads' : ''}${locks ? '' : ',nolocks'}${opts.monitorOwners === false ? ',noowner' : ''}`,
      stopCommand: 'locksstop',
      startFailure: (code) => `pid ${pid}${jdk ? ` (JDK ${jdk})` : ''}: the Java ${locks ? 'lock' : 'virtual-thread'} tracer did not start: ${LOCKS_CODES[code] ?? `Agent_OnAttach returned ${code}`}`,
      encoding: 'utf8',
      feed: (text) => model.feed(text),
    },
    env,
  );
  env.log(`java-locks: ${[locks ? `contended monitors and parks (looked at every ${period} µs)` : '', vthreads ? 'virtual threads unmounted' : ''].filter(Boolean).join(', ')} in pid ${pid} (${libInTarget})`);
  let stopped = false;
  return {
    model,
    jdk,
    target: part.target,
    read: part.read,
    async stop() {
      if (stopped) return;
      stopped = true;
      await part.stop();
      if (!model.ended) env.log('java-locks: the agent file ended without its end mark; the last waits may be missing');
      const e = model.end;
      if (!locks) env.log(`java-locks: ${e.vthreadWaits} virtual-thread waits (unmount to mount); ${(e.callbackNs / 1e6).toFixed(1)} ms in callbacks (unmounts, and virtual threads' contended monitor enters: ${e.vthreadWaits ? (e.callbackNs / e.vthreadWaits / 1000).toFixed(1) : 0} µs each unmount)`);
      else
        env.log(
          `java-locks: ${e.monitorWaits} contended monitor enters, ${e.parks} park episodes, ${e.looks} looks${vthreads ? `, ${e.vthreadWaits} virtual-thread waits` : ''}; ${(e.callbackNs / 1e6).toFixed(1)} ms in monitor callbacks (${e.monitorWaits ? (e.callbackNs / e.monitorWaits / 1000).toFixed(1) : 0} µs each), ${(e.lookNs / 1e6).toFixed(1)} ms looking (${e.looks ? (e.lookNs / e.looks / 1000).toFixed(1) : 0} µs each)`,
        );
    },
  };
}

export const javaLocksTracer: Tracer<'java-locks'> = {
  name: 'java-locks',
  validate(raw): JavaLocksOptions {
    const o = asObject(raw, 'options');
    return {
      pid: int(o, 'pid', 1, PID_MAX),
      depth: int(o, 'depth', 1, JAVA_LOCKS_MAX_DEPTH, JAVA_LOCKS_DEFAULT_DEPTH),
      parkPeriodUs: int(o, 'parkPeriodUs', JAVA_LOCKS_MIN_PARK_PERIOD_US, JAVA_LOCKS_MAX_PARK_PERIOD_US, JAVA_LOCKS_DEFAULT_PARK_PERIOD_US),
      vthreads: bool(o, 'vthreads', false),
    };
  },
  async start(options, env, events) {
    const { pid } = options;
    const t0 = Date.now();
    const session = await startLockSession(pid, env, options);
    const event = options.vthreads ? 'vthread' : 'lock';
    const { model } = session;
    return agentPartSession(
      {
        target: session.target,
        label: 'java-locks',
        read: session.read,
        tick: () => events.update({ samples: model.waits.length, lost: 0, elapsedMs: Date.now() - t0 } satisfies ProfileUpdate),
        result: () => model.result(pid, event),
        end: async () => {
          await session.stop();
          return model.result(pid, event);
        },
      },
      env,
      events,
    );
  },
};
