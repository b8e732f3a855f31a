// `ebpf-studio profile (--pid P | --all) [--frequency HZ] [--duration S] [--json | --folded] [--pprof FILE]`:
// samples on-CPU stacks (user + kernel, Java frames named through the JVM's perf map) and
// prints the hottest functions, folded stacks (flamegraph.pl / inferno input) or the JSON result;
// --pprof also writes gzipped profile.proto (go tool pprof, Pyroscope, Parca).
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { profileTracer } from '../../tracers/profile/tracer';
import { usageError } from '../../protocol/errors';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_COPY_KB, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, PROFILE_MAX_STACK_COPY_KB, PROFILE_MAX_STACK_STORAGE, UNWIND_CHOICES, type ProfileResult, type UnwindChoice } from '../../protocol/profile';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { frameTotals } from '../../model/flamegraph/model';
import { runAllocProfile, wantsAllocEvent } from './javaHeap';
import { OFFCPU_USAGE, runOffcpuProfile } from './offcpu';
import { CFI_HOST_DEFAULT_MAX_BYTES, CFI_HOST_MAX_MAX_BYTES } from '../../tracers/cfiHost';
import { checkOutputFile, profileOutputs } from './profileOutput';
import { runLockProfile, wantsLockEvent } from './javaLocks';

const USAGE = `ebpf-studio profile (--pid P | --all) [--event cpu|offcpu|wall] [--min-block-us N] [--frequency HZ] [--duration S] [--java agent|perfmap|auto] [--unwind auto|dwarf|fp|cfi] [--cfi-max-mb N] [--stack-copy-kb N] [--stack-storage-size N] [--json | --folded] [--pprof FILE]
  --pid P          sample process P (all its threads)
  --all            sample every process (the idle task excluded; add --idle to include it)
${OFFCPU_USAGE}
  --frequency HZ   samples per second per CPU (default ${PROFILE_DEFAULT_FREQUENCY}, at most ${PROFILE_MAX_FREQUENCY})
  --duration S     stop after S seconds (default: Ctrl-C or the target's exit)
  --no-java        do not attach to a JVM at all: no agent, no perf map (Java JIT frames stay unnamed)
  --java MODE      for a JVM (--pid): agent = load eBPF Studio's JVMTI agent for whole Java stacks
                   (AsyncGetCallTrace, no restart; the agent stays loaded but idle afterwards);
                   perfmap = name JIT frames from the perf map (whole stacks need -XX:+PreserveFramePointer);
                   auto (default) = agent when the JVM runs without -XX:+PreserveFramePointer
  --unwind MODE    how user stacks are unwound (default auto = cfi on Linux 5.17+, one process
                   or --all; dwarf for a JVM or an older kernel):
                     dwarf: CFI (.eh_frame/.debug_frame) from a copy of the stack, whole stacks
                            through -O2 code, leaf functions and libraries without frame pointers;
                            code without CFI (JIT) is walked by frame pointer
                     fp:    frame pointers walked in the kernel; nothing copied per sample
                     cfi:   unwind tables compiled from each file's .eh_frame, walked in the
                            kernel; nothing copied per sample, whole stacks through code without
                            frame pointers. Its first samples are walked by frame pointers while
                            the tables compile (a few hundred ms, ~3 s for node). With --all, a
                            file's table is compiled once a sample meets it, shared by every
                            process that maps the file
                   a JVM profiled with the agent: auto = dwarf too. The agent gives the Java
                   frames; the unwind gives the native part under the first JIT or interpreter
                   frame (JNI libraries, libjvm, libc, often built without frame pointers),
                   joined to the agent's stack by thread and time
  --cfi-max-mb N   --all with cfi: MiB of unwind tables the kernel holds (default ${CFI_HOST_DEFAULT_MAX_BYTES / 2 ** 20},
                   0.01 at least; allocated at start); when full, the least recently sampled
                   file's table goes first, and samples a missing table cuts are counted
                   ("N cut by the unwind table memory cap")
  --stack-copy-kb N
                   dwarf: KiB of user stack copied per sample (default ${PROFILE_DEFAULT_STACK_COPY_KB}, 1..${PROFILE_MAX_STACK_COPY_KB});
                   deeper stacks end in a "[stack deeper than ...]" frame
  --stack-storage-size N
                   distinct stacks the kernel keeps (default ${PROFILE_DEFAULT_STACK_STORAGE}, at most ${PROFILE_MAX_STACK_STORAGE});
                   samples whose stack finds no room are counted as lost
  --json           print the result document as JSON
  --folded         print folded stacks ("root;...;leaf count") for flamegraph.pl or inferno.
                   Frames carry async-profiler's annotations (what its "ann" option writes):
                   _[k] kernel, _[j] JIT-compiled Java (C2, or tier unknown), and with the agent
                   (--java agent) _[1] C1-compiled, _[i] inlined into its caller, _[0] interpreted;
                   native frames none. flamegraph.pl --color=java colours _[k]/_[j]/_[i] and
                   strips them; _[0]/_[1] stay in the name, as with async-profiler's files.
                   --json gives each Java frame a "javaType" (interpreted, c1, c2, compiled,
                   inlined) where the agent could tell it; absent where it could not
  --pprof FILE     also write the profile as gzipped pprof (profile.proto) to FILE, for
                   go tool pprof, Pyroscope, Parca or Cloud Profiler
  --event alloc    a JVM's Java allocations by stack instead of CPU (profile --event alloc --help)
  --event lock     a JVM's contended monitors and java.util.concurrent parks by waiter stack, lock
                   class and holder (profile --event lock --help)
  --event vthread  where a JVM's virtual threads wait, by their own stacks (JDK 21+; profile
                   --event vthread --help)`;

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
    .map((x) => `${pct(x.self)}% ${pct(x.total)}%  ${x.f.name}${x.f.kind === 'native' ? '' : ` [${x.f.javaType ?? x.f.kind}]`}${x.f.file ? `  ${x.f.file}:${x.f.line}` : ''}`);
  const cut = r.unwind?.cutByCap ? `, ${r.unwind.cutByCap} cut by the unwind table memory cap (--cfi-max-mb)` : '';
  const head = `${r.samples} samples at ${r.frequency} Hz, ${r.lost} lost${cut}, ${r.stacks.length} distinct stacks`;
  return [head, '', ' self%  total%  function', ...rows].join('\n');
}

export const profileCommand: Command = {
  name: 'profile',
  summary: cliSummary('profile'),
  usage: USAGE,
  async run(argv, io) {
    if (wantsAllocEvent(argv)) return runAllocProfile(argv, io);
    if (wantsLockEvent(argv)) return runLockProfile(argv, io);
    const { values } = parse(argv, {
      ...commonOptions,
      pid: { type: 'string' },
      all: { type: 'boolean' },
      idle: { type: 'boolean' },
      frequency: { type: 'string' },
      folded: { type: 'boolean' },
      'no-java': { type: 'boolean' },
      java: { type: 'string' },
      'stack-storage-size': { type: 'string' },
      unwind: { type: 'string' },
      'stack-copy-kb': { type: 'string' },
      'cfi-max-mb': { type: 'string' },
      pprof: { type: 'string' },
      event: { type: 'string' },
      'min-block-us': { type: 'string' },
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
    const event = (values.event as string | undefined) ?? 'cpu';
    if (!['cpu', 'offcpu', 'wall'].includes(event)) throw usageError(`--event takes cpu, offcpu, wall, alloc, lock or vthread, not "${event}"`);
    if (values.pprof === '') throw usageError('--pprof takes a file name, e.g. --pprof cpu.pb.gz');
    if (event === 'offcpu' || event === 'wall') return runOffcpuProfile(event, values, pid, typeof values.pprof === 'string' ? checkOutputFile(values.pprof, '--pprof') : undefined, io);
    if (values['min-block-us'] !== undefined) throw usageError('--min-block-us applies to --event offcpu or wall');
    const frequency = numberFlag(values.frequency, '--frequency', 1, PROFILE_MAX_FREQUENCY, { integer: true }) ?? PROFILE_DEFAULT_FREQUENCY;
    const folded = Boolean(values.folded);
    const unwind = (values.unwind ?? 'auto') as UnwindChoice;
    if (!UNWIND_CHOICES.includes(unwind)) throw usageError(`--unwind must be one of ${UNWIND_CHOICES.join(', ')}, not "${values.unwind}"`);
    const copyKb = numberFlag(values['stack-copy-kb'], '--stack-copy-kb', 1, PROFILE_MAX_STACK_COPY_KB, { integer: true });
    if (copyKb !== undefined && (unwind === 'fp' || unwind === 'cfi')) throw usageError(`--stack-copy-kb applies to --unwind dwarf (or auto), not ${unwind}`);
    const cfiMaxMb = numberFlag(values['cfi-max-mb'], '--cfi-max-mb', 0.01, CFI_HOST_MAX_MAX_BYTES / 2 ** 20);
    if (cfiMaxMb !== undefined && (pid !== undefined || unwind === 'fp' || unwind === 'dwarf')) throw usageError('--cfi-max-mb applies to --all with --unwind cfi (or auto)');
    if (values.pprof === '') throw usageError('--pprof takes a file name, e.g. --pprof cpu.pb.gz');
    const pprofFile = typeof values.pprof === 'string' ? checkOutputFile(values.pprof, '--pprof') : undefined;
    const startMs = Date.now();
    const java = values.java as string | undefined;
    if (java !== undefined && !['agent', 'perfmap', 'auto'].includes(java)) throw usageError(`--java takes agent, perfmap or auto, not "${java}"`);
    if (java !== undefined && values['no-java']) throw usageError('--java and --no-java exclude each other: give one');
    if (java === 'agent' && pid === undefined) throw usageError('--java agent needs --pid: the agent is loaded into one JVM');
    return runTracer(
      {
        tracer: profileTracer,
        options: {
          pid: pid ?? 0,
          frequency,
          includeIdle: Boolean(values.idle),
          javaPerfMap: !values['no-java'],
          java: values['no-java'] ? 'perfmap' : ((java as 'agent' | 'perfmap' | 'auto' | undefined) ?? 'auto'),
          stackStorageSize: numberFlag(values['stack-storage-size'], '--stack-storage-size', 1, PROFILE_MAX_STACK_STORAGE, { integer: true }) ?? PROFILE_DEFAULT_STACK_STORAGE,
          unwind,
          stackCopyBytes: (copyKb ?? PROFILE_DEFAULT_STACK_COPY_KB) * 1024,
          ...(cfiMaxMb !== undefined ? { cfiMaxBytes: Math.round(cfiMaxMb * 2 ** 20) } : {}),
        },
        privilege: 'bpf',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        // update warnings go to stderr through runTracer (so --folded output stays clean)
        formatUpdate: () => '',
        failure: (r) => r.problem,
        ...profileOutputs({ folded, pid, pprofFile, startMs, summary: formatSummary }),
        banner: (targets) => `Sampling ${targets.length ? `pid ${targets.join(', ')}` : 'all processes'} at ${frequency} Hz... Ctrl-C to end.`,
      },
      io,
    );
  },
};
