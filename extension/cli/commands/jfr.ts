// `ebpf-studio jfr FILE`: reads a Java Flight Recording (OpenJDK 11+, async-profiler) with our own
// streaming reader and prints what is in it (event counts per type, like `jfr summary`), or turns
// its samples into our documents: a CPU, allocation, lock or any stack-carrying event type's
// profile (text, --json, --folded, --pprof), the GC events into the java-gc document, and the whole
// recording into the JVM timeline's document (--event timeline). No
// privilege: it only reads the file, one chunk at a time, within the reader's limits.
import fs from 'node:fs';
import type { Command, Io } from '../command';
import { inputError, usageError } from '../../protocol/errors';
import type { ProfileResult } from '../../protocol/profile';
import { readJfrFile, type JfrFileInfo } from '../../sys/jfrFile';
import { encodePprofGz } from '../../sys/profileFile';
import { JfrError } from '../../model/jfr/cursor';
import type { EventVisitor } from '../../model/jfr/chunk';
import { ALLOC_EVENTS, CPU_EVENTS, JfrProfileBuilder, LOCK_EVENTS } from '../../model/jfr/profile';
import { JfrGcBuilder } from '../../model/jfr/gc';
import { JfrTimelineBuilder } from '../../model/jfr/timeline';
import { JfrSummaryBuilder } from '../../model/jfr/summary';
import { LimitError } from '../../model/readLimits';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { toFolded } from '../../model/flamegraph/formats';
import { toAllocPprof } from '../../model/allocPprof';
import { formatSummary } from './profile';
import { formatGcResult } from './javaGc';
import { formatJvmResult } from './jvm';
import { checkOutputFile } from './profileOutput';
import { numberFlag, parse, pidFlag } from '../args';
import { dumpJfr, JFR_SETTINGS, methodFilter, recordJfr, type JfrSettings } from '../../sys/jvm/jfrRecord';
import { MethodTimingBuilder, methodTimingText } from '../../model/jfr/methodTrace';

const USAGE = `ebpf-studio jfr FILE [--event WHAT] [--json | --folded | --pprof OUT] [--top N]
       ebpf-studio jfr --record PID --out FILE [--duration S] [--settings profile|default]
                       [--method-timing M[,M...]] [--method-trace M[,M...]]
       ebpf-studio jfr --dump PID --out FILE
  FILE           a Java Flight Recording (.jfr) from OpenJDK 11 or later, or async-profiler
  (no --event)   event counts and bytes per event type, like \`jfr summary\`
  --event cpu    execution samples (and JDK 25's CPU-time samples) as a CPU profile
  --event alloc  allocation samples (jdk.ObjectAllocationSample) by stack, in bytes
  --event lock   contended monitor enters and parks (jdk.JavaMonitorEnter, jdk.ThreadPark), in µs
  --event gc     garbage-collection pauses and safepoints, as \`java-gc --json\` documents them
  --event timeline  GCs, safepoints, CPU samples and waits per thread on one clock, as
                 \`jvm --json\` documents them (the editor's "Open JVM Timeline" opens the JSON)
  --event method-timing  JDK 25's jdk.MethodTiming per method: calls, min, avg, max (--json too)
  --event TYPE   any event type with a stack trace (e.g. jdk.ThreadSleep,jdk.FileRead), comma-separated
  --json         print the document as JSON (the summary, the profile, the GC result or the timeline)
  --folded       print folded stacks (flamegraph.pl, speedscope)
  --pprof OUT    write the profile as gzipped pprof to OUT
  --top N        rows of the text report (default 20)
  --record PID   record a running JVM of yours (JFR.start, then JFR.stop after --duration, default 30 s)
                 through its attach socket, as jcmd would, into --out
  --method-timing M,...  JDK 25 or later: JFR times every call of these methods (jdk.MethodTiming:
                 count, min, avg, max per method); M is Class::method (com.example.Foo::parse),
                 a class (all its methods) or @an.Annotation
  --method-trace M,...   JDK 25 or later: one jdk.MethodTrace event per call of these methods, with
                 its duration and stack (see them with --event jdk.MethodTrace)
  --dump PID     write what a JVM that records continuously has recorded so far into --out
A truncated or corrupted recording ends with exit 2 and the byte offset where it stopped making sense.
Reading a recording of 32 MB or more prints its progress on stderr.`;

const ALIASES: Record<string, string[]> = { cpu: CPU_EVENTS, alloc: ALLOC_EVENTS, lock: LOCK_EVENTS };

/** Recordings this large say how far the read has got (a 100 MB one takes a few seconds). */
const PROGRESS_BYTES = 32 * 1024 * 1024;

/** A progress line on stderr at each tenth of the file. */
function progressLines(file: string, io: Io): (p: { done: number; total: number }) => void {
  let shown = 0;
  return ({ done, total }) => {
    const tenth = Math.floor((10 * done) / total);
    if (total < PROGRESS_BYTES || tenth <= shown || done === total) return;
    shown = tenth;
    io.err(`reading ${file}: ${Math.round(done / 1e6)} of ${Math.round(total / 1e6)} MB`);
  };
}

function read(file: string, visitor: Parameters<typeof readJfrFile>[1], io: Io, known?: Set<string>): JfrFileInfo {
  if (!fs.existsSync(file)) throw inputError(`${file} does not exist`);
  if (!fs.statSync(file).isFile()) throw inputError(`${file} is not a regular file`);
  try {
    return readJfrFile(file, visitor, { onChunk: (c) => known && c.metadata.byName.forEach((_, n) => known.add(n)), progress: progressLines(file, io) });
  } catch (e) {
    if (e instanceof JfrError || e instanceof LimitError) throw inputError(`${file} is not a JFR recording we can read: ${e.message}`);
    throw e;
  }
}

function summaryText(info: JfrFileInfo, types: ReturnType<JfrSummaryBuilder['types']>): string {
  const head = [` Version: ${info.major}.${info.minor}`, ` Chunks: ${info.chunks}`, ` Start: ${new Date(info.startNanos / 1e6).toISOString()}`, ` Duration: ${Math.round(info.durationNanos / 1e9)} s`, ` Size: ${info.bytes.toLocaleString('en-US')} bytes`];
  const w = Math.max(10, ...types.map((t) => t.type.length));
  const rows = types.map((t) => ` ${t.type.padEnd(w)} ${String(t.count).padStart(10)} ${String(t.bytes).padStart(13)}`);
  return [...head, '', ` ${'Event Type'.padEnd(w)} ${'Count'.padStart(10)} ${'Size (bytes)'.padStart(13)}`, ` ${'='.repeat(w + 25)}`, ...rows].join('\n');
}

function writePprof(r: ProfileResult, out: string, info: JfrFileInfo, io: Io): void {
  const opts = { startMs: info.startNanos / 1e6, durationMs: info.durationNanos / 1e6 };
  try {
    fs.writeFileSync(out, r.unit === 'bytes' ? toAllocPprof(r, 0, opts) : encodePprofGz(r, opts));
  } catch (e) {
    throw inputError(`cannot write ${out}: ${(e as Error).message}`);
  }
  io.err(`wrote ${r.samples} events (${r.stacks.length} stacks, ${r.unit}) to ${out}`);
}

/** --record / --dump: the JVM writes the recording, we move it to --out. */
async function record(values: Record<string, unknown>, positionals: string[], io: Io): Promise<number> {
  if (positionals.length || (values.record !== undefined && values.dump !== undefined)) throw usageError('--record and --dump take a pid and --out, and no recording file');
  if (typeof values.out !== 'string') throw usageError('give --out FILE: where the recording goes');
  const out = checkOutputFile(values.out, '--out', 'app.jfr');
  if (fs.existsSync(out)) throw inputError(`--out ${values.out} exists: choose a new file`);
  const pid = pidFlag((values.record ?? values.dump) as string, values.record !== undefined ? '--record' : '--dump')!;
  if (values.dump !== undefined) {
    if (values['method-timing'] !== undefined || values['method-trace'] !== undefined) throw usageError('--method-timing and --method-trace start a recording: use them with --record PID');
    await dumpJfr(pid, { dest: out, timeoutMs: 20_000 });
    io.err(`wrote the recording of pid ${pid} so far to ${out}`);
    return 0;
  }
  const durationS = numberFlag(values.duration as string | undefined, '--duration', 1, 86_400, { integer: true }) ?? 30;
  const settings = (values.settings ?? 'profile') as JfrSettings;
  if (!JFR_SETTINGS.includes(settings)) throw usageError(`--settings must be one of ${JFR_SETTINGS.join(', ')}`);
  const methods = (flag: string) => {
    const v = values[flag] as string | undefined;
    if (v === undefined) return undefined;
    const list = v.split(',');
    methodFilter(list, `--${flag}`);
    return list;
  };
  const methodTiming = methods('method-timing');
  const methodTrace = methods('method-trace');
  await recordJfr(pid, { durationS, settings, dest: out, timeoutMs: 20_000, ...(methodTiming ? { methodTiming } : {}), ...(methodTrace ? { methodTrace } : {}) });
  const timed = [methodTiming ? `; method timing: ebpf-studio jfr ${values.out} --event method-timing` : '', methodTrace ? `; calls: --event jdk.MethodTrace` : ''].join('');
  io.err(`recorded pid ${pid} for ${durationS} s (${settings} settings) into ${out}: ebpf-studio jfr ${values.out}${timed}`);
  return 0;
}

/** The events read into a document of their own (no stacks): the GC view's, the JVM timeline's. */
const DOCUMENTS: Record<string, (file: string) => { visitor: EventVisitor; print: (json: boolean) => string }> = {
  gc: () => {
    const b = new JfrGcBuilder();
    return { visitor: b, print: (json) => (json ? JSON.stringify(b.result(), null, 2) : formatGcResult(b.result())) };
  },
  timeline: (file) => {
    const b = new JfrTimelineBuilder(file);
    // compact JSON: "Open JVM Timeline" reads it back, and a long recording's slices add up
    return { visitor: b, print: (json) => (json ? JSON.stringify(b.result()) : formatJvmResult(b.result())) };
  },
  // JDK 25's per-method figures (the calls' stacks are --event jdk.MethodTrace)
  'method-timing': (file) => {
    const b = new MethodTimingBuilder();
    return { visitor: b, print: (json) => (json ? JSON.stringify({ file, methods: b.result() }, null, 2) : methodTimingText(b.result())) };
  },
};

/** --event cpu|alloc|lock|TYPE: the events' stacks as a profile, in the output asked for. */
function printProfile(file: string, event: string, values: Record<string, unknown>, top: number, io: Io): void {
  const types = ALIASES[event] ?? event.split(',').map((t) => t.trim());
  if (types.some((t) => !/^[\w$.]+$/.test(t))) throw usageError(`--event ${event}: give cpu, alloc, lock, gc, timeline or event type names such as jdk.ThreadSleep`);
  const pprofOut = values.pprof === undefined ? undefined : checkOutputFile(values.pprof as string, '--pprof');
  const b = new JfrProfileBuilder(types, file);
  const known = new Set<string>();
  const info = read(file, b, io, known);
  const unknown = types.filter((t) => !known.has(t));
  if (!ALIASES[event] && unknown.length === types.length) throw inputError(`${file} has no event type ${unknown.join(' or ')} (ebpf-studio jfr ${file} lists the types it has)`);
  if (b.events === 0) io.err(`the recording has no ${types.join(' or ')} events${ALIASES[event] ? '' : ' (ebpf-studio jfr FILE lists the types it has)'}`);
  const r = b.result();
  if (pprofOut) return writePprof(r, pprofOut, info, io);
  if (values.json) return io.out(JSON.stringify(r, null, 2));
  if (values.folded) return io.out(toFolded(fromProfileResult(r, { groupByProcess: false })).trimEnd());
  // the profile report's first line speaks of a sampling frequency a recording does not have
  const unit = r.unit === 'us' ? 'µs waited' : r.unit === 'bytes' ? 'bytes allocated (estimated by JFR)' : 'samples';
  const total = r.stacks.reduce((a, x) => a + (x.value ?? x.count), 0);
  const head = `${r.samples.toLocaleString('en-US')} ${b.used.join(' + ') || types.join(' + ')} events, ${Math.round(total).toLocaleString('en-US')} ${unit}, ${r.stacks.length} distinct stacks`;
  io.out([head, ...formatSummary(r, top).split('\n').slice(1)].join('\n'));
}

export const jfrCommand: Command = {
  name: 'jfr',
  summary: 'read a Java Flight Recording: event counts, or its samples as a profile and its GCs',
  usage: USAGE,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { event: { type: 'string' }, json: { type: 'boolean' }, folded: { type: 'boolean' }, pprof: { type: 'string' }, top: { type: 'string' }, record: { type: 'string' }, dump: { type: 'string' }, out: { type: 'string' }, duration: { type: 'string' }, settings: { type: 'string' }, 'method-timing': { type: 'string' }, 'method-trace': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, true);
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    if (values.record !== undefined || values.dump !== undefined) return record(values, positionals, io);
    if (values['method-timing'] !== undefined || values['method-trace'] !== undefined) throw usageError('--method-timing and --method-trace go with --record PID');
    if (positionals.length !== 1) throw usageError(`give one recording (got ${positionals.length})`);
    const [file] = positionals;
    const event = values.event as string | undefined;
    const outputs = [values.json, values.folded, values.pprof !== undefined].filter(Boolean).length;
    if (outputs > 1) throw usageError('choose one of --json, --folded and --pprof');
    const top = values.top === undefined ? 20 : Number(values.top);
    if (!Number.isInteger(top) || top < 1 || top > 100000) throw usageError(`--top must be a whole number from 1 to 100000 (got ${values.top})`);
    if (!event) {
      if (values.folded || values.pprof !== undefined) throw usageError('--folded and --pprof need --event (cpu, alloc, lock or an event type)');
      const s = new JfrSummaryBuilder();
      const info = read(file, s, io);
      io.out(values.json ? JSON.stringify({ file, version: `${info.major}.${info.minor}`, chunks: info.chunks, bytes: info.bytes, startNanos: info.startNanos, durationNanos: info.durationNanos, types: s.types() }, null, 2) : summaryText(info, s.types()));
      return 0;
    }
    const doc = DOCUMENTS[event];
    if (doc) {
      if (values.folded || values.pprof !== undefined) throw usageError(`--event ${event} has no stacks: use --json or the text report`);
      const { visitor, print } = doc(file);
      read(file, visitor, io);
      io.out(print(Boolean(values.json)));
      return 0;
    }
    printProfile(file, event, values, top, io);
    return 0;
  },
};
