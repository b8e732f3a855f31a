// `ebpf-studio memleak (--pid P | -- COMMAND [ARGS...]) [--min-age-ms N] [--sample-rate N]
// [--min-size N] [--max-size N] [--top N] [--interval S] [--max-outstanding N] [--kernel] [--duration S] [--json |
// --folded] [--allocator-lib PATH --symbol-prefix P] [--mode preload|inject|uprobe|auto] [--sample-bytes N]`: outstanding allocations by stack, reported
// every interval and at the end (duration, Ctrl-C, or the launched command exiting).
import { cliSummary } from '../../protocol/catalog';
import type { Command } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { memleakTracer, preloadRefusal } from '../../tracers/memleak/tracer';
import { defaultAssetDir } from '../../sys/addon';
import { usageError } from '../../protocol/errors';
import { MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES, MEMLEAK_DEFAULT_MAX_OUTSTANDING, MEMLEAK_MODES, type MemleakMode, type MemleakOptions } from '../../protocol/memleak';
import { reportText, toFolded } from '../../model/memleakFormat';
import { javaLeakTarget, runJavaLeaks } from './javaHeap';

const USAGE =
  'ebpf-studio memleak (--pid P | -- COMMAND [ARGS...]) [--native] [--min-age-ms N] [--sample-rate N] [--min-size N] [--max-size N] [--top N] [--interval S] [--kernel] [--duration S] [--json | --folded] [--allocator-lib PATH] [--symbol-prefix P] [--mode preload|inject|uprobe|auto] [--sample-bytes N] [--unwind auto|dwarf|fp|cfi] [--stack-copy-kb N]\n  --unwind MODE    uprobe mode: dwarf copies the stack at each recorded allocation and unwinds it by CFI,\n                   so callers survive code built without frame pointers; fp walks frame pointers in the kernel (cheaper);\n                   cfi walks the running process\'s unwind tables in the kernel (--pid; whole stacks, nothing copied);\n                   auto (default): when the program has no frame pointers, cfi for a running process (Linux 5.17+)\n                   or dwarf for a launched one; else fp\n                   (preload mode always unwinds by CFI, in the process)\n  --native         a JVM (--pid): trace its malloc/free (JNI, direct buffers, libjvm) instead of its Java heap\n                   (without --native, a JVM gets Java heap leaks: memleak --pid P --help on a JVM)\n  --stack-copy-kb N  dwarf: KiB of stack copied per recorded allocation (default 8, 1..16)';

export const memleakCommand: Command = {
  name: 'memleak',
  summary: cliSummary('memleak'),
  usage: USAGE,
  async run(argv, io) {
    // a JVM: Java heap leaks unless --native asks for its malloc/free
    if (javaLeakTarget(argv) !== undefined) return runJavaLeaks(argv, io);
    const dashes = argv.indexOf('--');
    const flags = dashes < 0 ? argv : argv.slice(0, dashes);
    const command = dashes < 0 ? [] : argv.slice(dashes + 1);
    const { values, positionals } = parse(
      flags,
      {
        ...commonOptions,
        pid: { type: 'string', short: 'p' },
        'min-age-ms': { type: 'string', short: 'o' },
        'sample-rate': { type: 'string', short: 's' },
        'min-size': { type: 'string', short: 'z' },
        'max-size': { type: 'string', short: 'Z' },
        top: { type: 'string', short: 'T' },
        interval: { type: 'string' },
        'max-outstanding': { type: 'string' },
        kernel: { type: 'boolean' },
        folded: { type: 'boolean' },
        'allocator-lib': { type: 'string' },
        'symbol-prefix': { type: 'string' },
        unwind: { type: 'string' },
        'stack-copy-kb': { type: 'string' },
        mode: { type: 'string' },
        'sample-bytes': { type: 'string' },
        native: { type: 'boolean' },
      },
      true,
    );
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    if (positionals.length) throw usageError(`unexpected argument "${positionals[0]}": put the command to launch after "--"`);
    const pid = pidFlag(values.pid);
    const kernel = Boolean(values.kernel);
    if (pid !== undefined && command.length) throw usageError('give either --pid P or -- COMMAND, not both');
    if (dashes >= 0 && command.length === 0) throw usageError('nothing to launch after "--"');
    if (pid === undefined && !command.length && !kernel) throw usageError('give a target: --pid P (a running process) or -- COMMAND [ARGS...] (start one), or --kernel');
    if (kernel && command.length) throw usageError('--kernel traces kernel allocations; it takes --pid or nothing, not a command');
    if (values.json && values.folded) throw usageError('--json and --folded are two output formats: pick one');
    if (values['symbol-prefix'] !== undefined && values['allocator-lib'] === undefined) throw usageError('--symbol-prefix applies to --allocator-lib PATH');
    const mode = (values.mode ?? 'auto') as MemleakMode;
    if (!MEMLEAK_MODES.includes(mode)) throw usageError(`--mode must be preload, inject, uprobe or auto, got "${values.mode}"`);
    if (mode === 'inject' && command.length) throw usageError('--mode inject attaches to a running process (--pid P); a command it starts is preloaded (--mode preload or auto)');
    if (mode === 'preload' && !command.length) throw usageError('--mode preload traces a command it starts (-- COMMAND): a running process or the kernel cannot be preloaded; use --mode inject, uprobe or auto');
    const machine = Boolean(values.json || values.folded);
    const unwind = (values.unwind ?? 'auto') as 'auto' | 'dwarf' | 'fp' | 'cfi';
    if (!['auto', 'dwarf', 'fp', 'cfi'].includes(unwind)) throw usageError(`--unwind must be one of auto, dwarf, fp, cfi, not "${values.unwind}"`);
    const copyKb = numberFlag(values['stack-copy-kb'], '--stack-copy-kb', 1, 16, { integer: true });
    if (copyKb !== undefined && (unwind === 'fp' || unwind === 'cfi' || kernel)) throw usageError('--stack-copy-kb applies to user stacks unwound with --unwind dwarf (or auto)');
    const minSize = numberFlag(values['min-size'], '--min-size', 0, Number.MAX_SAFE_INTEGER, { integer: true }) ?? 0;
    const maxSize = numberFlag(values['max-size'], '--max-size', 1, Number.MAX_SAFE_INTEGER, { integer: true }) ?? 0;
    if (maxSize && maxSize < minSize) throw usageError(`--max-size ${maxSize} is smaller than --min-size ${minSize}`);
    const options: MemleakOptions = {
      pid,
      launch: command.length ? { command, output: machine ? 'stderr' : 'inherit' } : undefined,
      kernel,
      minAgeMs: numberFlag(values['min-age-ms'], '--min-age-ms', 0, 7 * 24 * 3600 * 1000) ?? 0,
      sampleRate: numberFlag(values['sample-rate'], '--sample-rate', 1, 1 << 30, { integer: true }) ?? 1,
      minSize,
      maxSize,
      top: numberFlag(values.top, '--top', 0, 100000, { integer: true }) ?? 10,
      intervalS: numberFlag(values.interval, '--interval', 0.1, 3600) ?? 5,
      maxOutstanding: numberFlag(values['max-outstanding'], '--max-outstanding', 1, 100_000_000, { integer: true }) ?? MEMLEAK_DEFAULT_MAX_OUTSTANDING,
      allocatorLib: values['allocator-lib'] as string | undefined,
      symbolPrefix: values['symbol-prefix'] as string | undefined,
      unwind,
      stackCopyBytes: (copyKb ?? 8) * 1024,
      mode,
      // attach: sampled by default (see MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES); launch and kernel: exact
      sampleBytes: numberFlag(values['sample-bytes'], '--sample-bytes', 0, 2 ** 40, { integer: true }) ?? (pid !== undefined && !kernel ? MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES : 0),
    };
    // Preload mode needs no privilege: a user can trace their own program without sudo. A launch
    // that falls back to uprobes says why before the privilege check can refuse it.
    const refusal = command.length && !kernel ? preloadRefusal(memleakTracer.validate(options), defaultAssetDir()) : '';
    if (refusal && process.geteuid?.() !== 0) io.err(`note: ${refusal}: tracing with uprobes instead`);
    const clock = () => new Date().toTimeString().slice(0, 8);
    return runTracer(
      {
        tracer: memleakTracer,
        options,
        privilege: kernel ? 'bpf' : refusal === undefined ? 'none' : 'uprobe',
        json: Boolean(values.json),
        verbose: Boolean(values.verbose),
        durationS: durationFlag(values.duration),
        formatUpdate: (u) => (machine ? '' : reportText(u.stacks, `[${clock()}] ${u.sampleBytes ? '≈' : ''}${u.totalBytes} bytes outstanding in ${u.sampleBytes ? '≈' : ''}${u.totalAllocations} allocations; top`, u.sampleBytes)),
        formatResult: (r) =>
          values.folded
            ? toFolded(r)
            : [reportText(r.stacks, `[${clock()}] final report for ${r.pid ? `pid ${r.pid}` : 'the kernel'}`, r.sampleBytes), r.dropped ? `${r.dropped} allocations were not recorded (tables full)` : '', r.problem ? `ERROR ${r.problem}` : ''].filter(Boolean).join('\n'),
        failure: (r) => r.problem,
        banner: (targets) => (command.length ? `Tracing allocations of ${command[0]} (pid ${targets[0]})... Ctrl-C to end.` : `Tracing outstanding allocations of ${targets.length ? `pid ${targets[0]}` : 'the kernel'}... Ctrl-C to end.`),
      },
      io,
    );
  },
};
