// The Java heap tracer's two CLI faces: `ebpf-studio profile --pid P --event alloc` (allocation
// flame graph: bytes by Java stack, the allocated class as the leaf) and `ebpf-studio memleak
// --pid P` on a JVM (live objects by allocation site, leak candidates with their evidence).
// Reached from profile.ts and memleak.ts, which only dispatch here.
import fs from 'node:fs';
import type { Io } from '../command';
import { commonOptions, durationFlag, numberFlag, parse, pidFlag } from '../args';
import { runTracer } from '../runTracer';
import { javaHeapTracer } from '../../tracers/javaHeap/tracer';
import { inputError, usageError } from '../../protocol/errors';
import { JAVA_HEAP_DEFAULT_DEPTH, JAVA_HEAP_DEFAULT_INTERVAL_BYTES, JAVA_HEAP_MAX_DEPTH, JAVA_HEAP_MAX_INTERVAL_BYTES, type JavaHeapOptions } from '../../protocol/javaHeap';
import { allocFolded, allocReportText, heapReportText, toAllocProfile } from '../../model/javaHeapReport';
import { toAllocPprof } from '../../model/allocPprof';
import { processInfo } from '../../sys/proc/processes';
import { gzipSync } from 'node:zlib';
import { checkOutputFile } from './profileOutput';

export const ALLOC_USAGE = `ebpf-studio profile --pid P --event alloc [--interval-bytes N] [--depth N] [--duration S] [--json | --folded] [--pprof FILE]
  Java allocations of the JVM P by stack (JVMTI heap sampling through eBPF Studio's agent, no
  restart; JDK 11+). Every figure is an unbiased estimate from the sampled allocations.
  --interval-bytes N  mean bytes between sampled allocations (default ${JAVA_HEAP_DEFAULT_INTERVAL_BYTES}, HotSpot's own)
  --depth N           Java frames kept per sample (default ${JAVA_HEAP_DEFAULT_DEPTH}, at most ${JAVA_HEAP_MAX_DEPTH})
  --json              the profile document: each stack's "value" is bytes ("unit": "bytes"), "count" objects
  --folded            folded stacks weighted by bytes, the allocated class as the leaf frame
  --pprof FILE        also write gzipped pprof with alloc_objects/count and alloc_space/bytes (as Go heap profiles)`;

export const LEAK_USAGE = `ebpf-studio memleak --pid P (a JVM) [--interval-bytes N] [--depth N] [--top N] [--interval S] [--duration S] [--json]
  Java heap leaks of the JVM P: sampled objects (JVMTI heap sampling, no restart; JDK 11+) that the
  GCs have not collected, by allocation site: live bytes and objects (estimates ± one standard
  error), GCs survived, growth per second; a site whose live bytes keep growing across GCs is a
  leak candidate. --native traces the JVM's malloc/free instead (JNI, direct buffers, libjvm).`;

/** `--event alloc` (or `--event=alloc`) among profile's arguments. */
export function wantsAllocEvent(argv: string[]): boolean {
  const i = argv.indexOf('--event');
  return (i >= 0 && argv[i + 1] === 'alloc') || argv.includes('--event=alloc');
}

function comm(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return 'java';
  }
}

function heapOptions(values: Record<string, unknown>, pid: number): JavaHeapOptions {
  return {
    pid,
    intervalBytes: numberFlag(values['interval-bytes'], '--interval-bytes', 1, JAVA_HEAP_MAX_INTERVAL_BYTES, { integer: true }) ?? JAVA_HEAP_DEFAULT_INTERVAL_BYTES,
    depth: numberFlag(values.depth, '--depth', 1, JAVA_HEAP_MAX_DEPTH, { integer: true }) ?? JAVA_HEAP_DEFAULT_DEPTH,
    top: numberFlag(values.top, '--top', 0, 100000, { integer: true }) ?? 10,
    intervalS: numberFlag(values.interval, '--interval', 0.1, 3600) ?? 5,
  };
}

export async function runAllocProfile(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { ...commonOptions, pid: { type: 'string' }, event: { type: 'string' }, 'interval-bytes': { type: 'string' }, depth: { type: 'string' }, folded: { type: 'boolean' }, pprof: { type: 'string' } });
  if (values.help) {
    io.out(ALLOC_USAGE);
    return 0;
  }
  const pid = pidFlag(values.pid);
  if (pid === undefined) throw usageError(`--event alloc samples one JVM's allocations: give --pid P\n${ALLOC_USAGE}`);
  if (values.json && values.folded) throw usageError('--json and --folded exclude each other: give one');
  if (values.pprof === '') throw usageError('--pprof takes a file name, e.g. --pprof alloc.pb.gz');
  const info = processInfo(pid);
  if (info && !info.jvm)
    throw inputError(`--event alloc samples Java allocations, and pid ${pid} (${info.comm}) is not a JVM: for native allocations use \`ebpf-studio memleak --pid ${pid}\` (outstanding malloc by stack)`);
  const pprofFile = typeof values.pprof === 'string' ? checkOutputFile(values.pprof, '--pprof', 'alloc.pb.gz') : undefined;
  const options = heapOptions(values, pid);
  const startMs = Date.now();
  const name = comm(pid);
  return runTracer(
    {
      tracer: javaHeapTracer,
      options,
      privilege: 'none',
      json: Boolean(values.json),
      verbose: Boolean(values.verbose),
      durationS: durationFlag(values.duration),
      formatUpdate: () => '',
      toJson: (r) => toAllocProfile(r, name),
      formatResult: (r) => (values.folded ? allocFolded(toAllocProfile(r, name)) : allocReportText(r)),
      onResult: (r, out) => {
        if (!pprofFile) return;
        try {
          fs.writeFileSync(pprofFile, gzipSync(toAllocPprof(toAllocProfile(r, name), r.sampleBytes, { startMs, durationMs: Date.now() - startMs })));
          out.err(`wrote ${r.allocated.length} allocation stacks to ${pprofFile} (pprof: go tool pprof -sample_index=alloc_space -top ${pprofFile})`);
        } catch (e) {
          throw inputError(`cannot write ${pprofFile}: ${(e as Error).message}`);
        }
      },
      banner: values.json || values.folded ? undefined : () => `Sampling Java allocations of pid ${pid} every ~${options.intervalBytes} bytes... Ctrl-C to end.`,
    },
    io,
  );
}

/** The pid of `memleak --pid P` when P is a JVM and --native was not given, else undefined (native memleak). */
export function javaLeakTarget(argv: string[]): number | undefined {
  const dashes = argv.indexOf('--');
  const flags = dashes < 0 ? argv : argv.slice(0, dashes);
  if (flags.includes('--native') || flags.includes('--kernel') || dashes >= 0) return undefined;
  let raw: string | undefined;
  flags.forEach((a, i) => {
    if (a === '--pid' || a === '-p') raw = flags[i + 1];
    else if (a.startsWith('--pid=')) raw = a.slice(6);
  });
  const pid = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return pid !== undefined && processInfo(pid)?.jvm ? pid : undefined;
}

export async function runJavaLeaks(argv: string[], io: Io): Promise<number> {
  const native = ['min-age-ms', 'sample-rate', 'min-size', 'max-size', 'max-outstanding', 'allocator-lib', 'symbol-prefix', 'unwind', 'stack-copy-kb', 'mode', 'sample-bytes', 'folded'];
  const nativeOnly = Object.fromEntries(native.map((k) => [k, { type: k === 'folded' ? ('boolean' as const) : ('string' as const) }]));
  const { values } = parse(argv, { ...commonOptions, ...nativeOnly, pid: { type: 'string', short: 'p' }, 'interval-bytes': { type: 'string' }, depth: { type: 'string' }, top: { type: 'string', short: 'T' }, interval: { type: 'string' } });
  if (values.help) {
    io.out(LEAK_USAGE);
    return 0;
  }
  const given = native.find((k) => values[k] !== undefined);
  if (given) throw usageError(`--${given} applies to native allocation tracing; pid ${values.pid} is a JVM, traced for Java heap leaks: add --native to trace its malloc/free instead, or drop --${given}`);
  const pid = pidFlag(values.pid)!;
  const options = heapOptions(values, pid);
  const clock = () => new Date().toTimeString().slice(0, 8);
  return runTracer(
    {
      tracer: javaHeapTracer,
      options,
      privilege: 'none',
      json: Boolean(values.json),
      verbose: Boolean(values.verbose),
      durationS: durationFlag(values.duration),
      formatUpdate: (u) => heapReportText(u.stacks, `[${clock()}] ≈${u.totalBytes} bytes live (sampled objects that survived a GC) after ${u.gcs} GCs; top`, u.sampleBytes),
      formatResult: (r) => heapReportText(r.stacks.slice(0, options.top || undefined), `[${clock()}] final report for pid ${r.pid} (${r.gcs} GCs in ${(r.durationMs / 1000).toFixed(1)} s)`, r.sampleBytes),
      banner: () => `Tracing Java heap leaks of pid ${pid} (sampling every ~${options.intervalBytes} bytes)... Ctrl-C to end.`,
    },
    io,
  );
}
