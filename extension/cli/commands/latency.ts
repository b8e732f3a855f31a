// `ebpf-studio latency --pid P FUNCTION|FILE:LINE [--threshold-ms N] [--ms] [--interval S]
// [--duration S] [--json] [--profile-slow [--frequency HZ] [--folded]]`: how long one function of a
// running process takes, with the stacks of the calls slower than the threshold, and on request
// the wall-clock profile (on and off CPU, by state) of those slow calls only.
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { latencyTracer } from '../../tracers/latency/tracer';
import { latencyRoute } from '../../tracers/latency/javaTarget';
import { usageError } from '../../protocol/errors';
import { assertOwnProcess } from '../../sys/ownership';
import type { LatencyOptions, LatencyStats } from '../../protocol/latency';
import { latencyReport, statsLine } from '../../model/latencyFormat';
import { PROFILE_MAX_FREQUENCY, type ProfileResult } from '../../protocol/profile';
import { WALL_DEFAULT_FREQUENCY } from '../../protocol/offcpu';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { toFolded } from '../../model/flamegraph/formats';
import { formatTimeSummary } from './offcpu';

const USAGE = [
  'ebpf-studio latency --pid P FUNCTION|FILE:LINE [--threshold-ms N] [--returns auto|ret|uretprobe] [--ms] [--interval S] [--duration S] [--json]',
  '                 [--by-caller] [--profile-slow [--frequency HZ] [--unwind cfi|fp] [--folded]]',
  '  FUNCTION         a function of the program or a library it maps (C++: ns::name or its mangled name)',
  '  FILE:LINE        the function at a source line (from the DWARF line tables: build with -g)',
  '  Class.method     a Java method (or Class::method; Class.method(descriptor) for one overload) of a',
  '                   running JVM, asked as its owner: JDK 25+ by the JVM\'s own JFR method tracing, JDK',
  '                   17 to 23 by eBPF Studio\'s agent (the class is rewritten to time every call and put',
  '                   back at the end); the slowest calls come with their Java stacks',
  '  --threshold-ms N calls at least N ms long are reported with their stacks (default: none)',
  '  --returns HOW    where returns are caught: ret (a uprobe on each ret instruction: safe for C++',
  '                   exceptions thrown through it), uretprobe (cheaper per call; a C++ exception thrown',
  '                   through it aborts the program), auto (default: ret unless the function tail-calls)',
  '  --ms             histogram in milliseconds (default microseconds)',
  '  --interval S     print the figures every S seconds',
  '  --duration S     stop after S seconds (default: Ctrl-C or the process exiting)',
  '  --json           print the result document as JSON',
  '  --by-caller      also the figures per caller (the function each call returns to): calls, mean,',
  '                   max, total and a log2 histogram each. A Java method: per calling Class.method',
  '                   with the line of the call (our agent walks to the caller on each call, ~µs;',
  '                   JFR reads it from each call\'s stack)',
  '  --profile-slow   also profile the calls at least --threshold-ms long: a wall-clock profile (on-CPU',
  '                   samples and off-CPU time with why: sleep, I/O, lock, preempted) of only what ran',
  '                   inside them; printed after the figures (or with --folded as folded stacks). A',
  '                   Java method: our JVMTI agent adds the Java frames (JDK 17 to 23; needs root)',
  `  --frequency HZ   --profile-slow: on-CPU samples per second (default ${WALL_DEFAULT_FREQUENCY})`,
  '  --unwind cfi|fp  --profile-slow: user stacks walked by the program\'s unwind tables (cfi, default:',
  '                   a function blocking in libc keeps its own frame) or by frame pointers (fp)',
  '  --folded         --profile-slow: print the slow calls\' profile as folded stacks (flamegraph.pl)',
].join('\n');

/** The slow calls' profile after the figures: what was kept, then its time summary. */
function profileReport(p: ProfileResult | undefined, st: LatencyStats): string {
  if (!p) return 'slow calls profile: none read';
  if (!st.profiledSlow) return 'slow calls profiled: 0: no call was slower than the threshold, so the profile is empty';
  const lost = st.profileLost ? ` (${st.profileLost} slow-call windows or samples lost to full buffers: the profile is short of them)` : '';
  return [`slow calls profiled: ${st.profiledSlow}${lost}`, formatTimeSummary(p)].join('\n');
}

export const latencyCommand: Command = {
  name: 'latency',
  summary: cliSummary('latency'),
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { ...commonOptions, pid: { type: 'string', short: 'p' }, 'threshold-ms': { type: 'string' }, returns: { type: 'string' }, ms: { type: 'boolean' }, interval: { type: 'string' }, 'profile-slow': { type: 'boolean' }, 'by-caller': { type: 'boolean' }, unwind: { type: 'string' }, frequency: { type: 'string' }, folded: { type: 'boolean' } }, true);
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    const pid = pidFlag(values.pid);
    if (pid === undefined) throw usageError('latency needs --pid P (the running process)');
    if (positionals.length !== 1) throw usageError('name one FUNCTION or FILE:LINE to measure');
    const interval = numberFlag(values.interval, '--interval', 0.1, 3600);
    const returns = values.returns ?? 'auto';
    if (returns !== 'auto' && returns !== 'ret' && returns !== 'uretprobe') throw usageError(`--returns takes auto, ret or uretprobe, not ${JSON.stringify(returns)}`);
    const profileSlow = Boolean(values['profile-slow']);
    const thresholdMs = numberFlag(values['threshold-ms'], '--threshold-ms', 0, 3_600_000) ?? 0;
    if (profileSlow && !thresholdMs) throw usageError('--profile-slow needs --threshold-ms N (N > 0): the calls at least N ms long are the ones profiled');
    if (!profileSlow && (values.folded || values.frequency !== undefined || values.unwind !== undefined)) throw usageError(`${values.folded ? '--folded' : values.unwind !== undefined ? '--unwind' : '--frequency'} applies to --profile-slow only`);
    const unwind = values.unwind ?? 'cfi';
    if (unwind !== 'cfi' && unwind !== 'fp') throw usageError(`--unwind takes cfi or fp, not ${JSON.stringify(unwind)}`);
    if (values.folded && values.json) throw usageError('--folded and --json exclude each other: give one');
    const frequency = numberFlag(values.frequency, '--frequency', 1, PROFILE_MAX_FREQUENCY, { integer: true }) ?? WALL_DEFAULT_FREQUENCY;
    const options: LatencyOptions = { returns, pid, target: positionals[0], thresholdMs, per: 'none', unit: values.ms ? 'ms' : 'us', intervalS: interval ?? 1, ...(profileSlow ? { profileSlow, frequency, unwind } : {}), ...(values['by-caller'] ? { byCaller: true } : {}) };
    // Another user's process is refused here, by whom it belongs to, before any privilege question
    // (its maps, which tell a JVM, may not even be readable).
    assertOwnProcess(pid, 'measuring a function');
    return runTracer(
      {
        tracer: latencyTracer,
        options,
        // a Java method of a JVM is timed inside the JVM (JFR or our agent), asked as its owner
        // ... but the slow calls' profile is a BPF wall-clock profile of the JVM
        privilege: latencyRoute(pid, positionals[0]) === 'native' ? 'uprobe' : profileSlow ? 'bpf' : 'none',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => (interval !== undefined ? `${new Date().toTimeString().slice(0, 8)}  ${statsLine(u.stats)}` : ''),
        formatResult: (r) => {
          if (values.folded) return r.profile ? toFolded(fromProfileResult(r.profile, { groupByProcess: false })).trimEnd() : '';
          return profileSlow ? `${latencyReport(r)}\n\n${profileReport(r.profile, r.stats)}` : latencyReport(r);
        },
        banner: () => `Measuring ${positionals[0]} in pid ${pid}... Hit Ctrl-C to end.`,
      },
      io,
    );
  },
};
