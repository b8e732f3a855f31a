// "Profile the slow calls" of a Java method, on both Java paths (our agent on JDK 17 to 23, JFR
// method tracing on 25+): the JVM's wall-clock profile with its Java frames (our JVMTI agent's
// join, ../offcpu), every on-CPU sample and blocked interval timed, of which only those inside a
// slow call's window (./javaSlowWindows.ts) are kept.
import type { LatencyOptions, LatencyStats } from '../../protocol/latency';
import { PROFILE_DEFAULT_STACK_STORAGE, type ProfileResult } from '../../protocol/profile';
import { OFFCPU_DEFAULT_MIN_BLOCK_US, WALL_DEFAULT_FREQUENCY } from '../../protocol/offcpu';
import type { Session, TracerEnv } from '../tracer';
import { startFilteredJavaWall } from '../offcpu/tracer';
import { checkSlowProfileKernel } from './slowProfile';
import { SlowWindows } from './javaSlowWindows';

export interface JavaSlowProfile {
  windows: SlowWindows;
  off: Session<'offcpu'>;
  result?: ProfileResult;
}

export async function startJavaSlowProfile(o: LatencyOptions, env: TracerEnv): Promise<JavaSlowProfile> {
  checkSlowProfileKernel();
  const windows = new SlowWindows();
  const off = await startFilteredJavaWall(
    { pid: o.pid, event: 'wall', minBlockUs: OFFCPU_DEFAULT_MIN_BLOCK_US, frequency: o.frequency ?? WALL_DEFAULT_FREQUENCY, stackStorageSize: PROFILE_DEFAULT_STACK_STORAGE, javaPerfMap: true, java: 'agent', unwind: o.unwind === 'fp' ? 'fp' : 'auto' },
    env,
    windows,
  );
  return { windows, off };
}

/** Once every window is known (the timing stopped, its last figures read): the profile of the samples inside them. */
export async function endJavaSlowProfile(prof: JavaSlowProfile, log: (m: string) => void): Promise<void> {
  if (prof.result) return;
  prof.windows.end();
  try {
    const r = (await prof.off.stop()) as ProfileResult;
    // its samples: those kept, not all the JVM's
    prof.result = { ...r, samples: r.stacks.reduce((a, st) => a + st.count, 0) };
  } catch (e) {
    log(`latency: reading the slow calls' profile failed: ${(e as Error).message}`);
  }
  const n = prof.windows.n;
  log(`latency: slow-call profile: ${n.windows} windows (${n.missed} overwritten in the agent before a snapshot, ${n.noTid} without a thread id, ${n.dropped} over the cap, ${n.partial} longer than the reader's lag: their first samples may be missing); samples ${n.kept} kept, ${n.outside} outside every window, ${n.lost} let go (too many waiting)`);
}

/** The figures with the profile's: slow calls profiled, fast ones not, and what was lost (windows never seen or not kept, samples let go). */
export function withProfileStats(st: LatencyStats, prof: JavaSlowProfile | undefined): LatencyStats {
  const w = prof?.windows.n;
  return w ? { ...st, profiledSlow: w.windows, profiledFast: Math.max(0, st.count - (st.slowCalls ?? 0)), profileLost: w.missed + w.noTid + w.dropped + w.partial + w.lost } : st;
}
