// Saved sessions: one versioned JSON document per finished session, one shape per tracer
// ({"format":"ebpf-studio-session","version":1,"tracer":...}). Files end in `.ebpf-session.json`
// so the editor can claim them without claiming every JSON file. The same document is what
// panels keep in storage to come back after a reload, and what the Sessions view lists.
// Pure: no vscode, no fs; shared with tests and any future CLI reader.
import type { JavaGcUpdate } from '../protocol/javaGc';
import { isGcLiveState, type GcLiveState } from './javaGcLive';
import { isHistLiveState, type HistLiveState } from './histLive';
import type { HistUnit, HistUpdate } from '../protocol/histogram';
import type { TargetContainer } from '../protocol/protocol';
import type { FlameProfile } from './flamegraph/profileData';
import type { LeakLens, LeakViewStack } from './leakSites';
import { javaHeapSnapshot, type JavaHeapViewData } from './javaHeapReport';
import { StudioError } from '../protocol/errors';
import { checkSessionJson } from './readLimits';
import { JAVA_FRAME_TYPES } from '../protocol/profile';
import { CATALOG, CATALOG_NAMES, histogramOf, isHistogramTracer, type HistogramTracer, type SessionTracer } from '../protocol/catalog';

export const SESSION_FORMAT = 'ebpf-studio-session';
export const SESSION_VERSION = 1;
/** The file name suffix of saved sessions (and the custom editor's pattern). */
export const SESSION_SUFFIX = '.ebpf-session.json';

/** Tracers whose sessions are saved in this format: the catalog's entries with a session view. */
export type { SessionTracer };
/** The bundled view that shows each tracer's sessions (dist/webview/<view>.js), from the catalog. */
export type SessionView = (typeof CATALOG)[SessionTracer]['sessionView'];
export const SESSION_TRACERS = CATALOG_NAMES.filter((n) => 'sessionView' in CATALOG[n]) as readonly SessionTracer[];
/** Every view a saved or restored session opens in (each is restored after a window reload). */
export const SESSION_VIEW_NAMES: readonly SessionView[] = [...new Set(SESSION_TRACERS.map((t) => CATALOG[t].sessionView))];

export type EndedState = { reason: 'stopped' | 'target-exited' | 'error'; message?: string };

/**
 * A log2-histogram tracer's session. `state`: the cumulative and per-key counts and the most
 * recent intervals (bounded). Files written before it have `updates` instead: every interval in order.
 */
export interface HistSessionData {
  scope: string;
  /** where the scope's one process or container ran (runtime, id, name, image); null: on the host */
  container?: TargetContainer | null;
  per: string;
  unit: HistUnit;
  state?: HistLiveState;
  updates?: HistUpdate[];
  ended?: EndedState;
}

export type SessionData = SessionShapes & { [T in HistogramTracer]: HistSessionData };

interface SessionShapes {
  /**
   * `state`: the figures over the whole session and the most recent events (what the view
   * draws, bounded however long the session ran). Files written before it have `updates`
   * instead: every update in order, each with the GCs since the previous one.
   */
  'java-gc': { target: string; /** where the target JVM ran; null: on the host */ container?: TargetContainer | null; state?: GcLiveState; updates?: JavaGcUpdate[]; ended?: EndedState };
  /** the last snapshot of outstanding allocations, with each stack's history */
  memleak: { totalBytes: number; totalAllocations: number; dropped: number; stacks: LeakViewStack[]; /** a sampled session: figures are estimates */ sampleBytes?: number; /** the workspace lines that had a CodeLens */ sites?: LeakLens[] };
  /** unwind: how user stacks were unwound, as the view's note says it */
  profile: { profile: FlameProfile; warnings: string[]; unwind?: string; /** the unwind line's tooltip */ unwindDetail?: string };
  /** the last live Java sites as the leak view shows them (Java frames, the allocated class, estimates) */
  'java-heap': JavaHeapViewData;
}

export interface SessionFile<T extends SessionTracer = SessionTracer> {
  format: typeof SESSION_FORMAT;
  version: typeof SESSION_VERSION;
  tracer: T;
  /** what the panel's tab and the Sessions view show, e.g. "CPU: pid 42 (java)" */
  title: string;
  /** ISO 8601 */
  startedAt: string;
  endedAt?: string;
  data: SessionData[T];
}

export type AnySessionFile = { [T in SessionTracer]: SessionFile<T> }[SessionTracer];

export function makeSession<T extends SessionTracer>(tracer: T, title: string, data: SessionData[T], startedAt: Date, endedAt?: Date): SessionFile<T> {
  return { format: SESSION_FORMAT, version: SESSION_VERSION, tracer, title, startedAt: startedAt.toISOString(), endedAt: endedAt?.toISOString(), data };
}

export function writeSession(file: SessionFile): string {
  return JSON.stringify(file);
}

function unchecked(tracer: never): never {
  bad(`sessions of ${String(tracer)} cannot be read yet`);
}

function bad(message: string): never {
  throw new StudioError('input', message);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A target's container as a session names it: runtime and id, and its names as strings. */
function checkContainer(v: unknown, where: string): void {
  if (v === undefined || v === null) return;
  const names = ['name', 'image', 'pod', 'namespace'] as const;
  if (!isObj(v) || typeof v.runtime !== 'string' || typeof v.id !== 'string' || names.some((k) => v[k] !== undefined && typeof v[k] !== 'string')) bad(`${where}.container must be null or {"runtime","id"} with "name", "image", "pod", "namespace" strings`);
}

function checkEnded(v: unknown, where: string): void {
  if (v === undefined) return;
  if (!isObj(v) || !['stopped', 'target-exited', 'error'].includes(v.reason as string)) bad(`${where}.ended must be {"reason":"stopped"|"target-exited"|"error"}`);
}

function checkUpdates(v: unknown, where: string, field: string): void {
  if (!Array.isArray(v)) bad(`${where}.updates must be an array`);
  v.forEach((u, i) => {
    if (!isObj(u) || !(field in u)) bad(`${where}.updates[${i}] has no "${field}"`);
  });
}

function checkProfile(p: unknown, where: string): void {
  if (!isObj(p)) bad(`${where}.profile must be an object`);
  if (!Array.isArray(p.frames)) bad(`${where}.profile.frames must be an array`);
  p.frames.forEach((f, i) => {
    if (!isObj(f) || typeof f.name !== 'string' || typeof f.kind !== 'string') bad(`${where}.profile.frames[${i}] needs a name and a kind`);
    if (f.javaType !== undefined && !(JAVA_FRAME_TYPES as unknown[]).includes(f.javaType)) bad(`${where}.profile.frames[${i}].javaType must be one of ${JAVA_FRAME_TYPES.join(', ')}`);
  });
  if (!Array.isArray(p.stacks)) bad(`${where}.profile.stacks must be an array`);
  const n = p.frames.length;
  p.stacks.forEach((s, i) => {
    if (!isObj(s) || !isNum(s.weight) || !Array.isArray(s.frames)) bad(`${where}.profile.stacks[${i}] needs frames and a weight`);
    for (const f of s.frames) if (!Number.isInteger(f) || (f as number) < 0 || (f as number) >= n) bad(`${where}.profile.stacks[${i}] refers to frame ${String(f)}, which does not exist (${n} frames)`);
  });
  if (!isNum(p.total)) bad(`${where}.profile.total must be a number`);
  // the JVM service-thread groups the view hides: frame ids like the stacks', each at most once
  const sf = p.serviceFrames;
  if (sf !== undefined && (!Array.isArray(sf) || sf.length > n || new Set(sf).size !== sf.length || sf.some((f) => !Number.isInteger(f) || (f as number) < 0 || (f as number) >= n))) bad(`${where}.profile.serviceFrames must list distinct frame ids below ${n}`);
}

/**
 * A session file's text as JSON, within SESSION_LIMITS (size, nesting, and the heap the parse
 * would build are checked first: a LimitError names the file and the limit).
 */
export function sessionJson(text: string, name = 'the file'): unknown {
  checkSessionJson(text, name);
  try {
    return JSON.parse(text);
  } catch (e) {
    bad(`${name} is not JSON (${(e as Error).message}); an eBPF Studio session file is written by "Export" in the Sessions view`);
  }
}

/**
 * Session files of other views share the envelope ({"format":"ebpf-studio-session","tracer":…});
 * the JVM timeline's (tracer "jvm", extension/model/jvmTimeline.ts) opens in its own view.
 * Returns the tracer of a session document (text, or already parsed) without validating the rest, or undefined.
 */
export function peekTracer(doc: string | { json: unknown }): string | undefined {
  try {
    const j = (typeof doc === 'string' ? sessionJson(doc) : doc.json) as { format?: unknown; tracer?: unknown } | null;
    return j && j.format === SESSION_FORMAT && typeof j.tracer === 'string' ? j.tracer : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads and validates a session document (text, or JSON from sessionJson). Errors name what is
 * wrong and what to do; a newer version says to update the extension rather than guessing at
 * fields it does not know.
 */
export function readSession(doc: string | { json: unknown }, name = 'the file'): AnySessionFile {
  const json = typeof doc === 'string' ? sessionJson(doc, name) : doc.json;
  if (!isObj(json) || json.format !== SESSION_FORMAT) bad(`${name} is not an eBPF Studio session (its "format" is not "${SESSION_FORMAT}"); open profiles with "Open CPU Profile" instead`);
  const v = json.version;
  if (!Number.isInteger(v) || (v as number) < 1) bad(`${name} has an invalid version ${JSON.stringify(v)}; session files have version ${SESSION_VERSION}`);
  if ((v as number) > SESSION_VERSION) bad(`${name} is a version ${String(v)} session, written by a newer eBPF Studio; this one reads version ${SESSION_VERSION}. Update the extension to open it.`);
  if (json.tracer === 'jvm') bad(`${name} is a JVM timeline session: open it with "eBPF: Open JVM Timeline" (double-click and the Sessions view do that for you)`);
  if (!SESSION_TRACERS.includes(json.tracer as SessionTracer)) bad(`${name} holds a session of an unknown tracer ${JSON.stringify(json.tracer)}; known: ${SESSION_TRACERS.join(', ')}`);
  if (typeof json.title !== 'string') bad(`${name} has no "title"`);
  if (typeof json.startedAt !== 'string' || Number.isNaN(Date.parse(json.startedAt))) bad(`${name} has no valid "startedAt" date`);
  const d = json.data;
  const where = `${name}: data`;
  if (!isObj(d)) bad(`${name} has no "data" object`);
  const tracer = json.tracer as SessionTracer;
  if (isHistogramTracer(tracer)) checkHistogram(tracer, d, where);
  else checkShape(tracer, d, where);
  return json as unknown as AnySessionFile;
}

function checkHistogram(tracer: HistogramTracer, d: Record<string, unknown>, where: string): void {
  const pers = Object.keys(histogramOf(tracer).keyLabels);
  if (typeof d.scope !== 'string' || !pers.includes(d.per as string) || !['us', 'ms'].includes(d.unit as string)) bad(`${where} needs a scope, per (${pers.map((p) => `"${p}"`).join('|')}) and unit ("us"|"ms")`);
  if (d.state !== undefined) {
    if (!isHistLiveState(d.state)) bad(`${where}.state is not the latency view's figures (version 1 with counts, intervals and keys)`);
  } else checkUpdates(d.updates, where, 'interval');
  checkContainer(d.container, where);
  checkEnded(d.ended, where);
}

/** The shape of every session that is not a histogram's: a tracer added to the catalog with a
 * session view and no case here fails the type check. */
function checkShape(tracer: Exclude<SessionTracer, HistogramTracer>, d: Record<string, unknown>, where: string): void {
  switch (tracer) {
    case 'java-gc':
      if (typeof d.target !== 'string') bad(`${where}.target must be a string`);
      if (d.state !== undefined) {
        if (!isGcLiveState(d.state)) bad(`${where}.state is not the Java GC view's figures (version 1 with collectors, recent events and a timeline)`);
      } else checkUpdates(d.updates, where, 'events');
      checkContainer(d.container, where);
      checkEnded(d.ended, where);
      break;
    case 'memleak':
      if (!isNum(d.totalBytes) || !isNum(d.totalAllocations) || !isNum(d.dropped) || !Array.isArray(d.stacks)) bad(`${where} needs totalBytes, totalAllocations, dropped and stacks`);
      break;
    case 'profile':
      checkProfile(d.profile, where);
      if (!Array.isArray(d.warnings)) bad(`${where}.warnings must be an array`);
      break;
    case 'java-heap':
      if (!isNum(d.pid) || !isNum(d.totalBytes) || !isNum(d.totalAllocations) || !isNum(d.sampleBytes) || !Array.isArray(d.stacks)) bad(`${where} needs pid, totalBytes, totalAllocations, sampleBytes and stacks`);
      d.stacks.forEach((s, i) => {
        if (!isObj(s) || !isNum(s.bytes) || !isNum(s.allocations) || typeof s.class !== 'string' || typeof s.key !== 'string' || !Array.isArray(s.frames) || !Array.isArray(s.history)) bad(`${where}.stacks[${i}] needs bytes, allocations, class, key, frames and history`);
      });
      break;
    default:
      unchecked(tracer);
  }
}

/** The bundled view that shows a tracer's sessions (dist/webview/<view>.js). */
export function viewOf(tracer: SessionTracer): SessionView {
  return CATALOG[tracer].sessionView;
}

/**
 * The messages that rebuild a finished session in its view, in order: the same ones the live
 * session sent, so a reopened view is the view the user had.
 */
export function replayMessages(f: AnySessionFile): unknown[] {
  if (isHistogramTracer(f.tracer)) {
    const d = f.data as HistSessionData;
    return [
      { type: 'init', tracer: f.tracer, scope: d.scope, per: d.per, unit: d.unit },
      ...(d.state ? [{ type: 'restore', state: d.state }] : []),
      ...(d.updates ?? []).map((update) => ({ type: 'update', update })),
      { type: 'ended', reason: d.ended?.reason ?? 'stopped', message: d.ended?.message },
    ];
  }
  switch (f.tracer) {
    case 'java-gc':
      return [
        { type: 'init', target: f.data.target },
        ...(f.data.state ? [{ type: 'restore', state: f.data.state }] : []),
        ...(f.data.updates ?? []).map((update) => ({ type: 'update', update })),
        { type: 'ended', reason: f.data.ended?.reason ?? 'stopped', message: f.data.ended?.message },
      ];
    case 'memleak':
      return [{ type: 'snapshot', title: f.title, running: false, ...f.data }];
    case 'profile':
      return [{ type: 'profile', profile: f.data.profile, title: f.title, warnings: f.data.warnings, unwind: f.data.unwind, unwindDetail: f.data.unwindDetail }];
    case 'java-heap':
      return [javaHeapSnapshot(f.title, false, f.data)];
  }
}

/** A file name for a session: tracer, then the start time, then the suffix. */
export function sessionFileName(f: { tracer: string; startedAt: string }): string {
  return `${f.tracer}-${f.startedAt.replace(/[:.]/g, '-').slice(0, 19)}${SESSION_SUFFIX}`;
}
