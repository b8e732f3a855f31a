// `ebpf-studio latency --pid P FUNCTION|FILE:LINE [--threshold-ms N] [--ms] [--interval S]
// [--duration S] [--json]`: how long one function of a running process takes, with the stacks of
// the calls slower than the threshold.
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { latencyTracer } from '../../tracers/latency/tracer';
import { usageError } from '../../protocol/errors';
import type { LatencyOptions } from '../../protocol/latency';
import { latencyReport, statsLine } from '../../model/latencyFormat';

const USAGE = [
  'ebpf-studio latency --pid P FUNCTION|FILE:LINE [--threshold-ms N] [--returns auto|ret|uretprobe] [--ms] [--interval S] [--duration S] [--json]',
  '  FUNCTION         a function of the program or a library it maps (C++: ns::name or its mangled name)',
  '  FILE:LINE        the function at a source line (from the DWARF line tables: build with -g)',
  '  --threshold-ms N calls at least N ms long are reported with their stacks (default: none)',
  '  --returns HOW    where returns are caught: ret (a uprobe on each ret instruction: safe for C++',
  '                   exceptions thrown through it), uretprobe (cheaper per call; a C++ exception thrown',
  '                   through it aborts the program), auto (default: ret unless the function tail-calls)',
  '  --ms             histogram in milliseconds (default microseconds)',
  '  --interval S     print the figures every S seconds',
  '  --duration S     stop after S seconds (default: Ctrl-C or the process exiting)',
  '  --json           print the result document as JSON',
].join('\n');

export const latencyCommand: Command = {
  name: 'latency',
  summary: cliSummary('latency'),
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { ...commonOptions, pid: { type: 'string', short: 'p' }, 'threshold-ms': { type: 'string' }, returns: { type: 'string' }, ms: { type: 'boolean' }, interval: { type: 'string' } }, true);
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
    const options: LatencyOptions = { returns, pid, target: positionals[0], thresholdMs: numberFlag(values['threshold-ms'], '--threshold-ms', 0, 3_600_000) ?? 0, per: 'none', unit: values.ms ? 'ms' : 'us', intervalS: interval ?? 1 };
    return runTracer(
      {
        tracer: latencyTracer,
        options,
        privilege: 'uprobe',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => (interval !== undefined ? `${new Date().toTimeString().slice(0, 8)}  ${statsLine(u.stats)}` : ''),
        formatResult: (r) => latencyReport(r),
        banner: () => `Measuring ${positionals[0]} in pid ${pid}... Hit Ctrl-C to end.`,
      },
      io,
    );
  },
};
