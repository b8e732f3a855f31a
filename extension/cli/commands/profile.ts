// `ebpf-studio profile (--pid P | --all) [--frequency HZ] [--duration S] [--json | --folded]`:
// samples on-CPU stacks (user + kernel, Java frames named through the JVM's perf map) and
// prints the hottest functions, folded stacks (flamegraph.pl / inferno input) or the JSON result.
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { profileTracer } from '../../tracers/profile';
import { usageError } from '../../shared/errors';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_COPY_KB, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_COPY_KB, PROFILE_MAX_STACK_STORAGE, UNWIND_CHOICES, type ProfileResult, type UnwindChoice } from '../../shared/profile';
import { fromProfileResult } from '../../../webview/flamegraph/profileData';
import { toFolded } from '../../../webview/flamegraph/formats';
import { frameTotals } from '../../../webview/flamegraph/model';

const USAGE = `ebpf-studio profile (--pid P | --all) [--frequency HZ] [--duration S] [--unwind auto|dwarf|fp] [--stack-copy-kb N] [--stack-storage-size N] [--json | --folded]
  --pid P          sample process P (all its threads)
  --all            sample every process (the idle task excluded; add --idle to include it)
  --frequency HZ   samples per second per CPU (default ${PROFILE_DEFAULT_FREQUENCY}, at most ${PROFILE_MAX_FREQUENCY})
  --duration S     stop after S seconds (default: Ctrl-C or the target's exit)
  --no-java        do not ask a JVM for its perf map (Java JIT frames stay unnamed)
  --unwind MODE    how user stacks are unwound (default auto = dwarf):
                     dwarf: CFI (.eh_frame/.debug_frame) from a copy of the stack, whole stacks
                            through -O2 code, leaf functions and libraries without frame pointers;
                            code without CFI (JIT) is walked by frame pointer
                     fp:    frame pointers walked in the kernel; nothing copied per sample
  --stack-copy-kb N
                   dwarf: KiB of user stack copied per sample (default ${PROFILE_DEFAULT_STACK_COPY_KB}, 1..${PROFILE_MAX_STACK_COPY_KB});
                   deeper stacks end in a "[stack deeper than ...]" frame
  --stack-storage-size N
                   distinct stacks the kernel keeps (default ${PROFILE_DEFAULT_STACK_STORAGE}, at most ${PROFILE_MAX_STACK_STORAGE});
                   samples whose stack finds no room are counted as lost
  --json           print the result document as JSON
  --folded         print folded stacks ("root;...;leaf count") for flamegraph.pl or inferno`;

/** The text report: the functions with the most self and total samples. */
export function formatSummary(r: ProfileResult, top = 20): string {
  const p = fromProfileResult(r, { groupByProcess: false });
  const { self, total } = frameTotals(p);
  const pct = (n: number) => (p.total ? ((100 * n) / p.total).toFixed(1).padStart(5) : '  0.0');
  const rows = p.frames
    .map((f, i) => ({ f, self: self[i], total: total[i] }))
    .filter((x) => x.self > 0)
    .sort((a, b) => b.self - a.self)
    .slice(0, top)
    .map((x) => `${pct(x.self)}% ${pct(x.total)}%  ${x.f.name}${x.f.kind === 'native' ? '' : ` [${x.f.kind}]`}${x.f.file ? `  ${x.f.file}:${x.f.line}` : ''}`);
  const head = `${r.samples} samples at ${r.frequency} Hz, ${r.lost} lost, ${r.stacks.length} distinct stacks`;
  return [head, '', ' self%  total%  function', ...rows].join('\n');
}

export const profileCommand: Command = {
  name: 'profile',
  summary: 'CPU profile: sampled on-CPU stacks with Java frames (folded stacks, JSON, or the hottest functions)',
  usage: USAGE,
  async run(argv, io) {
    const { values } = parse(argv, {
      ...commonOptions,
      pid: { type: 'string' },
      all: { type: 'boolean' },
      idle: { type: 'boolean' },
      frequency: { type: 'string' },
      folded: { type: 'boolean' },
      'no-java': { type: 'boolean' },
      'stack-storage-size': { type: 'string' },
      unwind: { type: 'string' },
      'stack-copy-kb': { type: 'string' },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    const pid = pidFlag(values.pid);
    if (pid === undefined && !values.all) throw usageError(`choose what to profile: --pid P for one process or --all for the whole system\n${USAGE}`);
    if (pid !== undefined && values.all) throw usageError('--pid and --all exclude each other: give one');
    if (values.idle && !values.all) throw usageError('--idle only applies with --all');
    if (values.json && values.folded) throw usageError('--json and --folded exclude each other: give one');
    const frequency = numberFlag(values.frequency, '--frequency', 1, PROFILE_MAX_FREQUENCY, { integer: true }) ?? PROFILE_DEFAULT_FREQUENCY;
    const folded = Boolean(values.folded);
    const unwind = (values.unwind ?? 'auto') as UnwindChoice;
    if (!UNWIND_CHOICES.includes(unwind)) throw usageError(`--unwind must be one of ${UNWIND_CHOICES.join(', ')}, not "${values.unwind}"`);
    const copyKb = numberFlag(values['stack-copy-kb'], '--stack-copy-kb', 1, PROFILE_MAX_STACK_COPY_KB, { integer: true });
    if (copyKb !== undefined && unwind === 'fp') throw usageError('--stack-copy-kb applies to --unwind dwarf (or auto), not fp');
    return runTracer(
      {
        tracer: profileTracer,
        options: {
          pid: pid ?? 0,
          frequency,
          includeIdle: Boolean(values.idle),
          javaPerfMap: !values['no-java'],
          stackStorageSize: numberFlag(values['stack-storage-size'], '--stack-storage-size', 1, PROFILE_MAX_STACK_STORAGE, { integer: true }) ?? PROFILE_DEFAULT_STACK_STORAGE,
          unwind,
          stackCopyBytes: (copyKb ?? PROFILE_DEFAULT_STACK_COPY_KB) * 1024,
        },
        privilege: 'bpf',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        // update warnings go to stderr through runTracer (so --folded output stays clean)
        formatUpdate: () => '',
        // --all roots every stack by process, even when only one process ran while sampled.
        formatResult: (r) => (folded ? toFolded(fromProfileResult(r, { groupByProcess: pid === undefined })).trimEnd() : formatSummary(r)),
        banner: (targets) => `Sampling ${targets.length ? `pid ${targets.join(', ')}` : 'all processes'} at ${frequency} Hz... Ctrl-C to end.`,
      },
      io,
    );
  },
};
