// Fake JVM processes and a fake helper that lists them, for the unit tests of the features that
// pick a JVM (Trace Java GC, Open JVM Timeline): what the helper's listProcesses would return.
import type { ProcessInfo } from '../../extension/protocol/protocol';

/** A JVM process; `usdt` false gives a vendor JDK whose libjvm.so has no USDT probes. */
export function fakeJvm(pid: number, usdt: boolean): ProcessInfo {
  const home = usdt ? '/usr/lib/jvm/java-17-openjdk-amd64' : '/opt/vendor-jdk';
  return {
    pid, ppid: 1, user: 'alice', uid: 1000, comm: 'java', cmdline: ['java', '-jar', 'app.jar'], kernelThread: false,
    jvm: { libjvm: `${home}/lib/server/libjvm.so`, usdt, main: 'app.jar', javaHome: home, preserveFramePointer: false },
  };
}

/**
 * A helper that answers listProcesses with `processes`, records each method asked in `calls` (and its
 * parameters in `params` when given), and refuses anything else (no session starts in unit tests).
 */
export function listingHelper(processes: ProcessInfo[], calls: string[], params?: unknown[]): never {
  return {
    request: async (type: { method: string }, p?: unknown) => {
      calls.push(type.method);
      params?.push(p);
      if (type.method === 'listProcesses') return processes;
      throw new Error(`unexpected ${type.method}`);
    },
  } as never;
}
