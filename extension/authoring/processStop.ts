// Stops a program the user started (a loader, bpftrace) the way a terminal would, then harder:
// SIGINT first (bpftrace prints its maps, a loader detaches and frees its programs), SIGTERM when
// it is still running after the grace period, SIGKILL after another. The outcome is reported in
// one sentence ("stopped by SIGINT after 0.2 s", "ignored SIGINT for 2 s; stopped by SIGTERM").
import type { ChildProcess } from 'node:child_process';

export const STOP_GRACE_MS = 2000;

type Stoppable = Pick<ChildProcess, 'kill' | 'exitCode' | 'signalCode' | 'once' | 'pid'>;

export interface StopOutcome {
  /** the last signal sent before it exited */
  signal: 'SIGINT' | 'SIGTERM' | 'SIGKILL';
  ms: number;
  /** e.g. "stopped by SIGINT after 0.2 s" */
  report: string;
}

function exited(c: Stoppable): boolean {
  return c.exitCode !== null || c.signalCode !== null;
}

/** Sends SIGINT, escalates every `graceMs`, resolves once the process has exited. */
export function stopProcess(child: Stoppable, graceMs = STOP_GRACE_MS): Promise<StopOutcome> {
  const t0 = Date.now();
  const steps = ['SIGINT', 'SIGTERM', 'SIGKILL'] as const;
  let step = 0;
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      const ms = Date.now() - t0;
      const sent = steps[step];
      const secs = (n: number) => `${(n / 1000).toFixed(1)} s`;
      const ignored = step === 0 ? '' : `ignored ${steps.slice(0, step).join(' and ')} for ${secs(step * graceMs)}; `;
      resolve({ signal: sent, ms, report: `${ignored}stopped by ${sent} after ${secs(ms)}` });
    };
    if (exited(child)) {
      resolve({ signal: 'SIGINT', ms: 0, report: 'had already exited' });
      return;
    }
    child.once('exit', finish);
    const send = () => {
      if (exited(child)) return;
      child.kill(steps[step]);
      if (step < steps.length - 1) {
        timer = setTimeout(() => {
          step++;
          send();
        }, graceMs);
        timer.unref?.();
      }
    };
    send();
  });
}
