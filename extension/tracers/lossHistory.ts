// Sessions that ended with events lost in the kernel (a ring buffer full) or dropped (a map
// full), remembered so that `doctor` can say when that happens often; each session's own loss is
// reported when it ends (cli/lossHint.ts, the webviews). One JSON line per such session, the last
// MAX_RECORDS kept, in the state folder of the user the tracer runs as: that user's passwd home,
// not $HOME, which sudo and pkexec may leave pointing at the caller's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { catalogEntry } from '../protocol/catalog';

export interface LossRecord {
  tracer: string;
  atMs: number;
  lost: number;
  dropped: number;
}

/** The advice for a tracer named in a result or a loss record (undefined for one without advice). */
export function adviceFor(tracer: string): string | undefined {
  // What makes each tracer lose less, in the CLI's words (the editor's pickers offer the same).
  return catalogEntry(tracer)?.lossAdvice;
}

/** What a tracer's `lost` counts and why: ring-buffer events, but samples for the profiler. */
export function lostWhat(tracer: string, result?: unknown): { noun: string; cause: string } {
  if (tracer === 'jvm') return { noun: 'events or CPU samples', cause: 'a kernel buffer, the stack-copy ring buffer or the stack map was full' };
  if (tracer !== 'profile') return { noun: 'events', cause: 'kernel buffer full' };
  const dwarf = (result as { unwind?: { mode?: string } } | undefined)?.unwind?.mode === 'dwarf';
  return dwarf
    ? { noun: 'samples', cause: 'the ring buffer of stack copies was full, or kernel stacks found no room in the stack map' }
    : { noun: 'samples', cause: 'their stacks found no room in the kernel stack map' };
}

const MAX_RECORDS = 200;
/** "often": at least this many sessions of one tracer with losses within the window */
export const OFTEN_SESSIONS = 2;
export const OFTEN_WINDOW_MS = 7 * 24 * 3600 * 1000;

export function lossHistoryFile(): string {
  const dir = process.env.EBPF_STUDIO_STATE_DIR || path.join(os.userInfo().homedir, '.local', 'state', 'ebpf-studio');
  return path.join(dir, 'losses.jsonl');
}

/** The counts of a tracer result that lost something, or undefined. */
export function lossOf(result: unknown): LossRecord | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const r = result as { tracer?: unknown; lost?: unknown; dropped?: unknown };
  const lost = typeof r.lost === 'number' && r.lost > 0 ? r.lost : 0;
  const dropped = typeof r.dropped === 'number' && r.dropped > 0 ? r.dropped : 0;
  if (typeof r.tracer !== 'string' || (lost === 0 && dropped === 0)) return undefined;
  return { tracer: r.tracer, atMs: Date.now(), lost, dropped };
}

export function readLossHistory(file = lossHistoryFile()): LossRecord[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: LossRecord[] = [];
  for (const line of text.split('\n')) {
    try {
      const r = JSON.parse(line) as LossRecord;
      if (typeof r.tracer === 'string' && Number.isFinite(r.atMs) && Number.isFinite(r.lost) && Number.isFinite(r.dropped)) out.push(r);
    } catch {
      /* a torn or foreign line: skipped */
    }
  }
  return out;
}

/**
 * Appends the session's losses, if any. Never throws: a read-only home or a full disk must not
 * turn a finished trace into a failure.
 */
export function recordLosses(result: unknown, file = lossHistoryFile()): void {
  const rec = lossOf(result);
  if (!rec) return;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const kept = readLossHistory(file).slice(-(MAX_RECORDS - 1));
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, [...kept, rec].map((r) => JSON.stringify(r)).join('\n') + '\n', { mode: 0o600 });
    fs.renameSync(tmp, file);
  } catch {
    /* remembering is best effort */
  }
}

/** Per tracer that lost data in OFTEN_SESSIONS or more recent sessions: one line of advice. */
export function lossAdvice(records: LossRecord[], nowMs = Date.now()): string[] {
  const recent = new Map<string, LossRecord[]>();
  for (const r of records) {
    if (nowMs - r.atMs > OFTEN_WINDOW_MS || r.atMs > nowMs + 60_000) continue;
    const list = recent.get(r.tracer);
    if (list) list.push(r);
    else recent.set(r.tracer, [r]);
  }
  const out: string[] = [];
  for (const [tracer, rs] of [...recent].sort(([a], [b]) => a.localeCompare(b))) {
    if (rs.length < OFTEN_SESSIONS) continue;
    const lost = rs.reduce((n, r) => n + r.lost, 0);
    const dropped = rs.reduce((n, r) => n + r.dropped, 0);
    const what = [lost ? `${lost} ${lostWhat(tracer).noun} lost` : '', dropped ? `${dropped} dropped` : ''].filter(Boolean).join(', ');
    const fix = adviceFor(tracer);
    out.push(`${tracer} lost data in ${rs.length} sessions in the last 7 days (${what})${fix ? `: ${fix}` : ''}.`);
  }
  return out;
}
