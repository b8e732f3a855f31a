// The Java latency agent's snapshot (native/javalatency, Snapshot.java), parsed without trusting
// it: the file is written inside the JVM, by code its owner controls. Size is capped before
// parsing, every number is checked to be a finite non-negative integer, arrays are cut at the
// agent's own bounds, strings at 300 characters. Anything else is an error, never a throw of
// another kind. Pure.
import type { Frame } from '../../protocol/frames';
import { FINE_SLOTS, STACK_MAX } from './decode';
import { HIST_MAX_SLOTS } from '../histDecode';
import { sourceOfClass } from '../../model/jfr/stacks';
import { JAVA_CALLER_SITES, type JavaCallFigures, type JavaCallSite } from '../../model/javaCallers';

export const SNAPSHOT_MAX_BYTES = 4 << 20;
const MAX_SLOW = 1000;
const MAX_METHODS = 50;
/** the agent's ring of slow-call windows (Windows.java RING) */
export const MAX_WINDOWS = 1024;

export interface JavaSlowCall {
  seq: number;
  durationNs: number;
  endNs: number;
  tid: number;
  stack: Frame[];
}

/** A slow call's time window on one thread, for its profile: System.nanoTime = CLOCK_MONOTONIC ns. */
export interface JavaWindow {
  seq: number;
  /** the thread's id in the JVM's pid namespace (0: unknown) */
  tid: number;
  startNs: bigint;
  endNs: bigint;
}

export interface JavaSnapshot {
  state: 'running' | 'stopped' | 'error';
  error?: string;
  id: string;
  count: number;
  sumNs: number;
  maxNs: number;
  slowCalls: number;
  methods: string[];
  /** log2 slots in the session's unit */
  log2: number[];
  /** log-linear ns slots (./decode.ts fineBounds) */
  fine: number[];
  slow: JavaSlowCall[];
  /** profiling the slow calls: every slow call that started before this has ended and is in `windows` */
  horizonNs?: bigint;
  windows?: JavaWindow[];
  /** by caller: the call sites (at most JAVA_CALLER_SITES) and the calls from sites beyond them */
  callers?: { sites: JavaCallSite[]; other: JavaCallFigures; max: number };
}

export class SnapshotError extends Error {}

function n(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new SnapshotError(`${what} is not a count`);
  return v;
}

function s(v: unknown, what: string, nullable = false): string {
  if (nullable && v === null) return '';
  if (typeof v !== 'string') throw new SnapshotError(`${what} is not a string`);
  return v.slice(0, 300);
}

function arr(v: unknown, what: string, max: number): unknown[] {
  if (!Array.isArray(v) || v.length > max) throw new SnapshotError(`${what} is not a list of at most ${max}`);
  return v;
}

function frame(v: unknown): Frame {
  const [cls, method, file, line] = arr(v, 'a frame', 4);
  const ln = typeof line === 'number' && Number.isSafeInteger(line) && line > 0 ? line : undefined;
  const f = s(file, 'a frame file', true);
  return { kind: 'jit', address: '0x0', module: '[java]', function: `${s(cls, 'a frame class')}.${s(method, 'a frame method')}`, ...(f ? { file: f } : {}), ...(ln ? { line: ln } : {}) };
}

function slowCall(v: unknown): JavaSlowCall {
  if (!v || typeof v !== 'object') throw new SnapshotError('a slow call is not an object');
  const o = v as Record<string, unknown>;
  const raw = arr(o.frames, 'frames', STACK_MAX);
  // A method still running the class's version from before the rewrite (obsolete) reports no
  // source file: its class's other frames name it.
  const files = new Map<string, string>();
  const stack = raw.map((f) => {
    const fr = frame(f);
    if (fr.file) files.set(fr.function!.slice(0, fr.function!.lastIndexOf('.')), fr.file);
    return fr;
  });
  for (const fr of stack) if (!fr.file && files.has(fr.function!.slice(0, fr.function!.lastIndexOf('.')))) fr.file = files.get(fr.function!.slice(0, fr.function!.lastIndexOf('.')));
  return { seq: n(o.seq, 'seq'), durationNs: n(o.d, 'a duration'), endNs: n(o.end, 'an end time'), tid: n(o.tid, 'a thread id'), stack };
}

/** A clock reading: past 2^53 ns (104 days of uptime) a JSON number is no longer exact, but µs-close is enough for a window. */
function clock(v: unknown, what: string): bigint {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 2 ** 63) throw new SnapshotError(`${what} is not a clock reading`);
  return BigInt(Math.round(v));
}

function window(v: unknown): JavaWindow {
  const [seq, tid, start, end] = arr(v, 'a window', 4);
  const w = { seq: n(seq, 'a window number'), tid: n(tid, 'a window thread'), startNs: clock(start, 'a window start'), endNs: clock(end, 'a window end') };
  if (w.endNs < w.startNs) throw new SnapshotError('a window ends before it starts');
  return w;
}

/** count, sum, max, [log2 slots] */
function figures(v: unknown[], what: string): JavaCallFigures {
  const [count, sum, max, log2] = v;
  return { count: n(count, `${what} count`), sumNs: n(sum, `${what} sum`), maxNs: n(max, `${what} max`), log2: arr(log2, `${what} log2`, HIST_MAX_SLOTS).map((x) => n(x, `${what} log2 count`)) };
}

/** [class, method, file, line, count, sum, max, [log2]] */
function callSite(v: unknown): JavaCallSite {
  const a = arr(v, 'a call site', 8);
  if (a.length !== 8) throw new SnapshotError('a call site is not 8 fields');
  const line = n(a[3], 'a call site line');
  const cls = s(a[0], 'a caller class');
  // a frame of a method from before the class was rewritten (still running) has no file or line: its class names the file
  return { caller: `${cls}.${s(a[1], 'a caller method')}`, file: s(a[2], 'a caller file', true) || sourceOfClass(cls), line: line || null, ...figures(a.slice(4), 'a call site') };
}

function callers(v: unknown): JavaSnapshot['callers'] {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new SnapshotError('callers is not an object');
  const o = v as Record<string, unknown>;
  const max = n(o.max, 'callers max');
  if (max > JAVA_CALLER_SITES) throw new SnapshotError(`callers max is over ${JAVA_CALLER_SITES}`);
  return { max, sites: arr(o.sites, 'call sites', max).map(callSite), other: figures(arr(o.other, 'other callers', 4), 'other callers') };
}

/** Parses one snapshot's text; throws SnapshotError on anything unexpected. */
export function parseSnapshot(text: string): JavaSnapshot {
  if (text.length > SNAPSHOT_MAX_BYTES) throw new SnapshotError('the snapshot is too large');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new SnapshotError('the snapshot is not JSON');
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new SnapshotError('the snapshot is not an object');
  const o = doc as Record<string, unknown>;
  if (o.v !== 1) throw new SnapshotError(`unknown snapshot version ${JSON.stringify(o.v)}`);
  if (o.state === 'error') return { ...empty(), state: 'error', error: s(o.error, 'error', true) || 'unknown error' };
  if (o.state !== 'running' && o.state !== 'stopped') throw new SnapshotError('unknown state');
  const fine = new Array<number>(FINE_SLOTS).fill(0);
  for (const p of arr(o.fine, 'fine', FINE_SLOTS)) {
    const [slot, count] = arr(p, 'a fine slot', 2);
    if (n(slot, 'a slot') >= FINE_SLOTS) throw new SnapshotError('a slot is out of range');
    fine[slot as number] += n(count, 'a slot count');
  }
  const log2 = arr(o.log2, 'log2', HIST_MAX_SLOTS).map((x) => n(x, 'a log2 count'));
  return {
    state: o.state,
    id: s(o.id, 'id'),
    count: n(o.count, 'count'),
    sumNs: n(o.sum, 'sum'),
    maxNs: n(o.max, 'max'),
    slowCalls: n(o.slowCalls, 'slowCalls'),
    methods: arr(o.methods, 'methods', MAX_METHODS).map((m) => s(m, 'a method')),
    log2,
    fine,
    slow: arr(o.slow, 'slow', MAX_SLOW).map(slowCall),
    ...(o.callers !== undefined ? { callers: callers(o.callers) } : {}),
    ...(o.windows !== undefined ? { horizonNs: clock(o.horizon, 'horizon'), windows: arr(o.windows, 'windows', MAX_WINDOWS).map(window) } : {}),
  };
}

function empty(): Omit<JavaSnapshot, 'state'> {
  return { id: '', count: 0, sumNs: 0, maxNs: 0, slowCalls: 0, methods: [], log2: [], fine: [], slow: [] };
}
