// What a CPU profile of one process sampled against the CPU time the process itself accounts
// (utime + stime over the session): cpu-clock sampling at F Hz takes about F samples per second
// the target ran, so far fewer means the samplers missed it, which must be said, never shown as a
// quiet, thin flame graph. Pure.
import type { ProfileCpuCheck } from '../protocol/profile';

/** Below this many expected samples the process barely ran: nothing to judge. */
const MIN_EXPECTED = 20;
/** Under this share of the expected samples the profile is an error; under WARN_SHARE a warning. */
const MISSED_SHARE = 0.5;
const WARN_SHARE = 0.8;

export interface ProfileCpuInput {
  pid: number;
  frequency: number;
  /** samples of the target the BPF program took (those it could not record, its `lost`, among them) */
  samples: number;
  /** the target's utime + stime over the session in ms; undefined when unreadable */
  cpuMs?: number;
}

const MISSED_CAUSES =
  'likely causes: the kernel throttled the cpu-clock events (perf_event_max_sample_rate / perf_cpu_time_max_percent: dmesg says "perf: interrupt took too long"), ' +
  'another BPF program was running on the CPU when samples fell due (the kernel skips a BPF program that would nest), ' +
  'or the pid filter did not match its threads';

export function checkProfileCpu(x: ProfileCpuInput): ProfileCpuCheck {
  const sampled = x.samples;
  if (x.cpuMs === undefined) return { pid: x.pid, verdict: 'unread', sampled, message: `pid ${x.pid}: sampled ${sampled} — its CPU time could not be read, so this count is not checked` };
  const expected = Math.round((x.cpuMs / 1000) * x.frequency);
  const base = { pid: x.pid, sampled, expected, cpuMs: x.cpuMs };
  const says = `pid ${x.pid}: sampled ${sampled} — its own CPU time (${(x.cpuMs / 1000).toFixed(2)} s over the session) implies about ${expected} at ${x.frequency} Hz`;
  if (expected < MIN_EXPECTED) return { ...base, verdict: 'idle', message: `${says} (too little CPU time to judge)` };
  if (sampled < MISSED_SHARE * expected) return { ...base, verdict: 'missed', message: `${says}: the profile saw ${Math.round((100 * sampled) / expected)} % of it; ${MISSED_CAUSES}` };
  if (sampled < WARN_SHARE * expected) return { ...base, verdict: 'fewer', message: `${says}: ${expected - sampled} samples fewer than expected (the profile's shares still hold if the missing ones fell evenly)` };
  return { ...base, verdict: 'agree', message: says };
}
