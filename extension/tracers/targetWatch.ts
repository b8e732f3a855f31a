// Ends a session when its target exits. The target is watched by identity (pid and start time,
// sys/proc/processes.ts), a zombie counts as exited, and the check runs every 100 ms: the session
// is over long before another process could cycle the pid space and be handed the same number
// (the BPF programs also check the start time where they signal, which holds even then).
import { sameProcess, type ProcessIdentity } from '../sys/proc/processes';

export const TARGET_WATCH_MS = 100;

/** Calls `gone` once when the process `id` names has exited; returns a function that stops watching. */
export function watchTarget(id: ProcessIdentity, gone: () => void, everyMs = TARGET_WATCH_MS): () => void {
  let done = false;
  const timer = setInterval(() => {
    if (done || sameProcess(id)) return;
    done = true;
    clearInterval(timer);
    gone();
  }, everyMs);
  timer.unref?.();
  return () => {
    done = true;
    clearInterval(timer);
  };
}
