// Runs one tracer in-process until --duration, SIGINT/SIGTERM, or the target's exit, then
// prints the final result (JSON or text). Live updates go to stdout as text lines when not --json.
import type { OptionsOf, ResultOf, TracerName, UpdateOf } from '../protocol/protocol';
import type { Tracer } from '../tracers/tracer';
import type { Io } from './command';
import { cliEnv, requireBpfPrivilege } from './env';
import { lossHint } from './lossHint';
import { recordLosses } from '../tracers/lossHistory';
import { labelPids } from '../sys/proc/targetLabel';
import { targetContainer } from '../sys/proc/targetContainer';
import type { ContainerInfo } from '../sys/proc/container';

export interface RunSpec<N extends TracerName> {
  tracer: Tracer<N>;
  options: OptionsOf<N>;
  /** none: the tracer needs no privilege for these options (memleak preload mode) */
  privilege: 'bpf' | 'uprobe' | 'none';
  json: boolean;
  verbose: boolean;
  durationS?: number;
  /** text mode: a line (or lines) per update, '' for nothing */
  formatUpdate?(u: UpdateOf<N>): string;
  /** text mode: the final report */
  formatResult(r: ResultOf<N>): string;
  /** json mode: the document printed, when it is not the result itself (an allocation profile) */
  toJson?(r: ResultOf<N>): object;
  /** text mode: said once attached, e.g. "Tracing GC of pid 123... Ctrl-C to end." */
  banner?(targets: number[]): string;
  /** in every mode, before the result is printed (e.g. to write it to a file as well) */
  onResult?(r: ResultOf<N>, io: Io): void;
  /** why the result cannot be trusted (it disagrees with the target's own counters): said on stderr, and the exit code is 1 */
  failure?(r: ResultOf<N>): string | undefined;
}

/** The --json document: it names where its target ran, the container (runtime, name, id, image), null on the host. */
function jsonText<N extends TracerName>(spec: RunSpec<N>, result: ResultOf<N>, container: ContainerInfo | null | undefined): string {
  const doc = spec.toJson ? spec.toJson(result) : result;
  return JSON.stringify(container === undefined ? doc : { ...doc, container }, null, 2);
}

export async function runTracer<N extends TracerName>(spec: RunSpec<N>, io: Io): Promise<number> {
  if (spec.privilege !== 'none') requireBpfPrivilege(spec.privilege);
  const env = cliEnv(spec.verbose);
  const options = spec.tracer.validate(spec.options);
  let endedBy: { reason: string; message?: string } | undefined;
  let wake: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (wake = resolve));
  const told = new Set<string>();
  // Listen before start(): a Ctrl-C while probes attach ends the session once it has started,
  // instead of killing the process with the probes half set up.
  const onSignal = () => wake();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const unlisten = () => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  };
  let session: Awaited<ReturnType<typeof spec.tracer.start>>;
  try {
    session = await spec.tracer.start(options, env, {
      update: (u) => {
        // Warnings found during the session (e.g. a module without debug info once it is seen)
        // go to stderr in every output mode, each once.
        for (const w of (u as { warnings?: unknown }).warnings instanceof Array ? (u as { warnings: unknown[] }).warnings : []) {
          if (typeof w === 'string' && !told.has(w)) {
            told.add(w);
            io.err(`warning: ${w}`);
          }
        }
        if (spec.json || !spec.formatUpdate) return;
        const text = spec.formatUpdate(u);
        if (text) io.out(text);
      },
      ended: (reason, message) => {
        endedBy = { reason, message };
        wake();
      },
    });
  } catch (e) {
    unlisten();
    throw e;
  }
  for (const w of session.warnings) {
    if (told.has(w)) continue;
    told.add(w);
    io.err(`warning: ${w}`);
  }
  // a pid in a container is named with its container (runtime, name, image)
  if (!spec.json && spec.banner) io.err(labelPids(spec.banner(session.targets), session.targets));
  // read now: the target may have exited (and its container with it) by the end
  const container = spec.json ? targetContainer(options, session.targets) : undefined;
  const timer = spec.durationS !== undefined ? setTimeout(wake, spec.durationS * 1000) : undefined;
  await done;
  if (timer) clearTimeout(timer);
  unlisten();
  const result = await session.stop();
  recordLosses(result);
  spec.onResult?.(result, io);
  if (endedBy?.reason === 'target-exited' && !spec.json) io.err(endedBy.message ?? 'target process exited');
  if (endedBy?.reason === 'error') io.err(`ebpf-studio: ${endedBy.message ?? 'the session failed'}`);
  io.out(spec.json ? jsonText(spec, result, container) : spec.formatResult(result));
  const hint = lossHint(result);
  if (hint) io.err(hint);
  const failed = spec.failure?.(result);
  if (failed) io.err(`ebpf-studio: error: ${failed}`);
  return endedBy?.reason === 'error' || failed ? 1 : 0;
}
