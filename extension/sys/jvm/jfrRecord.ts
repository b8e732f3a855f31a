// Records a Java Flight Recording of a running JVM, or dumps the one it already records, through
// the JVM's attach socket (./attach.ts: as the JVM's owner, our own JVMs only unless we are root).
// The JVM writes the file itself, as its owner, into its own /tmp (its mount namespace); we read
// it as the JVM's owner (never following a link), copy it where the caller wants it and remove the
// JVM's copy.
import fs from 'node:fs';
import { jcmd, type AttachOptions } from './attach';
import { StudioError } from '../../protocol/errors';
import { openAs, processOwner, unlinkAs } from '../asUser';
import { processInfo } from '../proc/processes';
import { assertOwnProcess } from '../ownership';
import { guardRecording } from './recordingGuard';

export const JFR_SETTINGS = ['default', 'profile'] as const;
export type JfrSettings = (typeof JFR_SETTINGS)[number];

/** jcmd answers a failed diagnostic command with status 0 and the reason in its text. */
function checkReply(pid: number, what: string, out: string): string {
  if (/Unknown diagnostic command|Could not|Exception|not supported|No recording|Error/i.test(out)) throw new StudioError('unsuitable', `the JVM (pid ${pid}) refused ${what}: ${out.trim()}`);
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * Moves the JVM's file (inside its root) to `dest`: opened as the JVM's owner, the last component
 * never followed (extension/sys/asUser.ts), so a link planted at that name is refused instead of
 * root reading its target; the JVM's copy is then removed, as its owner too.
 */
function fetchRecording(pid: number, jvmPath: string, dest: string): string {
  const owner = processOwner(pid);
  let fd: number;
  try {
    fd = openAs(owner, jvmPath, fs.constants.O_RDONLY);
  } catch (e) {
    throw new StudioError('unsuitable', `the JVM (pid ${pid}) did not leave a readable recording at ${jvmPath} (${(e as Error).message})`);
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw new StudioError('unsuitable', `${jvmPath} of pid ${pid} is not a regular file`);
    const out = fs.openSync(dest, 'wx', 0o600);
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) fs.writeSync(out, buf, 0, n);
    } finally {
      fs.closeSync(out);
    }
  } finally {
    fs.closeSync(fd);
    try {
      unlinkAs(owner, jvmPath);
    } catch {
      /* already gone */
    }
  }
  return dest;
}

/** A JFR method filter (JDK 25): Class::method, Class (all its methods), @Annotation, ::<clinit>. */
const METHOD_FILTER = /^(@[A-Za-z_$][\w$.]*|[A-Za-z_$][\w$.]*(::([A-Za-z_$][\w$]*|<init>|<clinit>))?|::<clinit>)$/;
export const MAX_METHOD_FILTERS = 64;

/** JFR's filter text for a list of methods ("a.B::c", "a.D"): joined by ';', each checked. */
export function methodFilter(methods: string[], what: string): string {
  const list = methods.map((m) => m.trim()).filter(Boolean);
  if (!list.length) throw new StudioError('usage', `${what}: name at least one method, e.g. com.example.Foo::parse`);
  if (list.length > MAX_METHOD_FILTERS) throw new StudioError('usage', `${what}: at most ${MAX_METHOD_FILTERS} methods (got ${list.length})`);
  const bad = list.find((m) => !METHOD_FILTER.test(m));
  if (bad !== undefined) throw new StudioError('usage', `${what}: ${JSON.stringify(bad.slice(0, 200))} is not a method filter: give Class::method (e.g. com.example.Foo::parse, Foo::<init>), a class (com.example.Foo) or @an.Annotation`);
  return list.join(';');
}

/** Method timing and tracing came with JDK 25 (JEP 520): an older JVM is refused by name. */
export function requireMethodTracing(pid: number): { version: string; feature: number } {
  const jvm = processInfo(pid)?.jvm;
  if (!jvm) throw new StudioError('input', `pid ${pid} is not a running JVM (no libjvm.so mapped)`);
  const feature = jvm.feature ?? NaN;
  if (!(feature >= 25)) throw new StudioError('unsuitable', `pid ${pid} runs JDK ${jvm.version ?? 'of unknown version'} (${jvm.javaHome}): JFR's method timing and tracing need JDK 25 or later`);
  return { version: jvm.version ?? String(feature), feature };
}

/**
 * Starts a named recording with JFR.start's extra arguments (settings, event settings). A JVM
 * slow to reply (instrumenting methods on a loaded machine) may have started it all the same:
 * on any failure it is stopped by name, so nothing is left recording.
 */
export async function startRecording(pid: number, name: string, args: string, o: AttachOptions): Promise<void> {
  try {
    checkReply(pid, 'JFR.start', await jcmd(pid, `JFR.start name=${name} ${args}`, { ...o, timeoutMs: Math.max(o.timeoutMs ?? 0, 60_000) }));
  } catch (e) {
    await jcmd(pid, `JFR.stop name=${name}`, o).catch(() => undefined);
    throw e;
  }
}

/** JFR.dump of one named recording (what it has so far) into `dest`. */
export async function dumpRecording(pid: number, name: string, dest: string, o: AttachOptions): Promise<string> {
  const jvmPath = `/tmp/${name}-${Date.now()}-dump.jfr`;
  checkReply(pid, 'JFR.dump', await jcmd(pid, `JFR.dump name=${name} filename=${jvmPath}`, { ...o, timeoutMs: Math.max(o.timeoutMs ?? 0, 60_000) }));
  return fetchRecording(pid, jvmPath, dest);
}

/** JFR.stop of a named recording: written to `dest` when given, else discarded. */
export async function stopRecording(pid: number, name: string, dest: string | undefined, o: AttachOptions): Promise<string | undefined> {
  const jvmPath = `/tmp/${name}.jfr`;
  checkReply(pid, 'JFR.stop', await jcmd(pid, `JFR.stop name=${name}${dest ? ` filename=${jvmPath}` : ''}`, { ...o, timeoutMs: Math.max(o.timeoutMs ?? 0, 60_000) }));
  return dest ? fetchRecording(pid, jvmPath, dest) : undefined;
}

export interface RecordOptions extends AttachOptions {
  durationS: number;
  settings: JfrSettings;
  /** JDK 25: JFR's method timing (jdk.MethodTiming) of these methods (filters, see methodFilter) */
  methodTiming?: string[];
  /** JDK 25: every call of these methods traced (jdk.MethodTrace, with its stack) */
  methodTrace?: string[];
  /** where the recording goes */
  dest: string;
  /** ends the recording early (it is still written) */
  signal?: AbortSignal;
}

/** JFR.start, wait, JFR.stop with a file: returns `dest` once the JVM has written it. */
export async function recordJfr(pid: number, o: RecordOptions): Promise<string> {
  if (!JFR_SETTINGS.includes(o.settings)) throw new StudioError('usage', `JFR settings must be one of ${JFR_SETTINGS.join(', ')}`);
  const name = `ebpf-studio-${process.pid}-${Date.now()}`;
  const methods = [o.methodTiming?.length ? `method-timing=${methodFilter(o.methodTiming, 'method timing')}` : '', o.methodTrace?.length ? `method-trace=${methodFilter(o.methodTrace, 'method trace')}` : ''].filter(Boolean);
  // whose JVM it is comes first: another user's JVM is not ours to look at (its JDK included)
  assertOwnProcess(pid, 'recording JFR');
  if (methods.length) requireMethodTracing(pid);
  await startRecording(pid, name, [`settings=${o.settings}`, ...methods].join(' '), o);
  // killed while it waits, we would leave the JVM recording for nobody: the guard stops it then
  const guard = guardRecording(pid, name, (s) => process.stderr.write(`${s}\n`));
  try {
    await sleep(o.durationS * 1000, o.signal);
    return (await stopRecording(pid, name, o.dest, o))!;
  } finally {
    guard.release();
  }
}

/** JFR.dump of every recording the JVM runs (a JVM that records continuously): returns `dest`. */
export async function dumpJfr(pid: number, o: AttachOptions & { dest: string }): Promise<string> {
  const jvmPath = `/tmp/ebpf-studio-${process.pid}-${Date.now()}-dump.jfr`;
  checkReply(pid, 'JFR.dump', await jcmd(pid, `JFR.dump filename=${jvmPath}`, { ...o, timeoutMs: Math.max(o.timeoutMs ?? 0, 60_000) }));
  return fetchRecording(pid, jvmPath, o.dest);
}
