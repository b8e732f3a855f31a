// `ebpf-studio profile --event offcpu|wall (--pid P | --all) [--min-block-us N] [--frequency HZ]`:
// where threads wait (off-CPU time by stack and state) or where their time goes (wall clock:
// on-CPU samples and off-CPU time together), as the CPU profile's text summary, --json,
// --folded or --pprof, every stack weighed in µs.
import type { Io } from '../command';
import { durationFlag, numberFlag, type Values } from '../args';
import { runTracer } from '../runTracer';
import { offcpuTracer } from '../../tracers/offcpu/tracer';
import { CFI_HOST_MAX_MAX_BYTES } from '../../tracers/cfiHost';
import { usageError } from '../../protocol/errors';
import { profileOutputs } from './profileOutput';
import { PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_STORAGE, THREAD_STATE_LABEL, THREAD_STATES, type ProfileFrame, type ProfileResult } from '../../protocol/profile';
import { OFFCPU_DEFAULT_MIN_BLOCK_US, OFFCPU_MAX_MIN_BLOCK_US, WALL_DEFAULT_FREQUENCY } from '../../protocol/offcpu';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { frameTotals } from '../../model/flamegraph/model';

export const OFFCPU_USAGE = `  --event E        cpu (default): on-CPU samples;
                   offcpu: time threads spent off CPU (blocked or preempted), exact, by stack and
                           state (sleeping, I/O, lock = futex wait, preempted); stacks weigh µs;
                   wall: on-CPU samples (each 1/frequency s) and off-CPU time in one profile
  --min-block-us N offcpu/wall: leave out off-CPU intervals shorter than N µs (default ${OFFCPU_DEFAULT_MIN_BLOCK_US})
                   a JVM (--java agent, or auto without -XX:+PreserveFramePointer): each blocked
                   thread's Java stack is taken by the agent when it returns from the blocking
                   system call (a sleeping thread is never signalled)
  --unwind fp|cfi  offcpu/wall user stacks: cfi walks the processes' unwind tables (.eh_frame,
                   .debug_frame, loaded into the kernel) so code built without frame pointers
                   keeps its callers; fp walks frame pointers in the kernel. Default (auto): cfi
                   on Linux 5.17+, fp otherwise. The first stacks of a session are walked by
                   frame pointers while the tables compile (a few hundred ms, ~3 s for node);
                   with --all, each file's once a switch-out first meets it`;

const ms = (us: number) => (us >= 10_000_000 ? `${(us / 1e6).toFixed(1)} s` : `${(us / 1000).toFixed(1)} ms`);

/**
 * The text report of a time profile: per-state totals, then the functions with the most time.
 * Every off-CPU stack ends in the scheduler, so "self" is counted where the program waits: its
 * innermost user frame (kernel frames left out), or for a kernel thread its innermost frame
 * outside the scheduler.
 */
export function formatTimeSummary(r: ProfileResult, top = 20): string {
  const waitingIn = (frames: ProfileFrame[]) => {
    const user = frames.filter((f) => f.kind !== 'kernel');
    if (user.length) return user;
    const i = frames.findIndex((f) => !/^(__)?schedule|^preempt_schedule|^schedule_/.test(f.function ?? ''));
    return i < 0 ? frames : frames.slice(i);
  };
  const p = fromProfileResult({ ...r, stacks: r.stacks.map((s) => (s.state === 'oncpu' ? s : { ...s, frames: waitingIn(s.frames) })) }, { groupByProcess: false });
  const { self, total } = frameTotals(p);
  const pct = (n: number) => (p.total ? ((100 * n) / p.total).toFixed(1).padStart(5) : '  0.0');
  const rows = p.frames
    .map((f, i) => ({ f, self: self[i], total: total[i] }))
    .filter((x) => x.self > 0)
    .sort((a, b) => b.self - a.self)
    .slice(0, top)
    .map((x) => `${pct(x.self)}% ${pct(x.total)}% ${ms(x.self).padStart(10)}  ${x.f.name}${x.f.file ? `  ${x.f.file}:${x.f.line}` : ''}`);
  const states = THREAD_STATES.filter((s) => r.states?.[s]).map((s) => `  ${THREAD_STATE_LABEL[s].padEnd(24)} ${ms(r.states![s]!).padStart(10)}  ${pct(r.states![s]!)}%`);
  const what = r.event === 'wall' ? `wall clock (on-CPU samples at ${r.frequency} Hz and off-CPU time)` : 'off-CPU time';
  const cut = r.unwind?.cutByCap ? `, ${r.unwind.cutByCap} cut by the unwind table memory cap (--cfi-max-mb)` : '';
  const head = `${what}: ${ms(p.total)} in ${r.samples} intervals/samples, ${r.lost} lost${cut}, ${r.stacks.length} distinct stacks`;
  return [head, '', ...states, '', ' self%  total%       self  function (self: the innermost frame of the program, where it waits)', ...rows].join('\n');
}

export async function runOffcpuProfile(event: 'offcpu' | 'wall', values: Values, pid: number | undefined, pprofFile: string | undefined, io: Io): Promise<number> {
  for (const flag of ['stack-copy-kb', 'idle'] as const) {
    if (values[flag] !== undefined) throw usageError(`--${flag} applies to --event cpu only: off-CPU and wall stacks are walked in the kernel (Java frames: --java)`);
  }
  const unwind = values.unwind as string | undefined;
  if (unwind !== undefined && unwind !== 'fp' && unwind !== 'cfi' && unwind !== 'auto') throw usageError(`--unwind takes fp or cfi with --event ${event}, not "${unwind}": its stacks are walked in the kernel, by frame pointers or by unwind tables`);
  // (off-CPU and wall profiles of --all walk the same capped tables as CPU profiles)
  const cfiMaxMb = numberFlag(values['cfi-max-mb'], '--cfi-max-mb', 0.01, CFI_HOST_MAX_MAX_BYTES / 2 ** 20);
  if (cfiMaxMb !== undefined && (pid !== undefined || unwind === 'fp')) throw usageError('--cfi-max-mb applies to --all with --unwind cfi (or auto)');
  if (event === 'offcpu' && values.frequency !== undefined) throw usageError('--frequency applies to --event cpu and wall: off-CPU time is measured at every context switch, not sampled');
  const minBlockUs = numberFlag(values['min-block-us'], '--min-block-us', 0, OFFCPU_MAX_MIN_BLOCK_US, { integer: true }) ?? OFFCPU_DEFAULT_MIN_BLOCK_US;
  const java = values.java as string | undefined;
  if (java !== undefined && !['agent', 'perfmap', 'auto'].includes(java)) throw usageError(`--java takes agent, perfmap or auto, not "${java}"`);
  if (java !== undefined && values['no-java']) throw usageError('--java and --no-java exclude each other: give one');
  if (java === 'agent' && pid === undefined) throw usageError('--java agent needs --pid: the agent is loaded into one JVM');
  const frequency = numberFlag(values.frequency, '--frequency', 1, PROFILE_MAX_FREQUENCY, { integer: true }) ?? WALL_DEFAULT_FREQUENCY;
  const folded = Boolean(values.folded);
  const startMs = Date.now();
  return runTracer(
    {
      tracer: offcpuTracer,
      options: {
        pid: pid ?? 0,
        event,
        minBlockUs,
        frequency,
        stackStorageSize: numberFlag(values['stack-storage-size'], '--stack-storage-size', 1, PROFILE_MAX_STACK_STORAGE, { integer: true }) ?? PROFILE_DEFAULT_STACK_STORAGE,
        javaPerfMap: !values['no-java'],
        java: values['no-java'] ? 'perfmap' : ((java as 'agent' | 'perfmap' | 'auto' | undefined) ?? 'auto'),
        unwind: (unwind as 'auto' | 'fp' | 'cfi' | undefined) ?? 'auto',
        ...(cfiMaxMb !== undefined ? { cfiMaxBytes: Math.round(cfiMaxMb * 2 ** 20) } : {}),
      },
      privilege: 'bpf',
      json: Boolean(values.json),
      verbose: Boolean(values.verbose),
      durationS: durationFlag(values.duration),
      formatUpdate: () => '',
      ...profileOutputs({ folded, pid, pprofFile, startMs, summary: formatTimeSummary }),
      banner: (targets) => `Tracing ${event === 'wall' ? 'wall-clock time' : 'off-CPU time'} of ${targets.length ? `pid ${targets.join(', ')}` : 'all processes'}${minBlockUs > 1 ? ` (intervals ≥ ${minBlockUs} µs)` : ''}... Ctrl-C to end.`,
    },
    io,
  );
}
