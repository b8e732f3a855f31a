// The Java agent's parts (CPU profile, heap sampler, lock tracer) keep writing into the JVM's /tmp
// only while someone reads: the reader holds a shared flock(2) on its own fd of the part's file,
// and the agent's service thread (native/jvmagent/service.c service_orphaned) ends the part when
// it can take an exclusive lock, which the kernel allows once that fd is closed, however the
// helper died (SIGKILL included). The agent's probe holds its exclusive lock for an instant every
// 100 ms, so a shared lock asked for at that instant is refused once and asked for again.
import type { Addon } from '../../sys/addon';

const TRIES = 50;

/** Takes the reader's shared lock on `fd`; false (logged) when it could not, then the agent ends the part after its grace period. */
export function holdReaderLock(addon: Addon, fd: number, log: (m: string) => void, what: string): boolean {
  let last = '';
  for (let i = 0; i < TRIES; i++) {
    try {
      addon.lockShared(fd);
      return true;
    } catch (e) {
      last = (e as Error).message;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2); // 2 ms: past the agent's probe
    }
  }
  log(`${what}: no reader's lock on the agent's file (${last}): the agent will stop writing it after its grace period`);
  return false;
}

/** Logs the agent's own end of a part ("X full <bytes>": its file reached the agent's limit, so the part stopped as if told to). */
export function noteAgentLimit(text: string, log: (m: string) => void, what: string): void {
  const m = /^X\tfull\t(\d+)/m.exec(text);
  if (m) log(`${what}: the agent's file reached ${(Number(m[1]) / 2 ** 20).toFixed(0)} MiB, its limit: the agent stopped recording there (what came before is kept)`);
}
