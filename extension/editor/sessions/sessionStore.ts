// Finished sessions of this window: each is kept as a session document in the extension's
// global storage (sessions/<key>.ebpf-session.json) so its panel comes back after a reload and
// the Sessions view can reopen it. Storage is bounded: a session over MAX_ONE_BYTES is listed
// but not stored (the user can still Export it while the window lives), and the oldest files
// go once the folder passes MAX_TOTAL_BYTES. The list itself is per workspace and holds at most
// MAX_LISTED entries; Delete removes an entry and its file. The list is written to a file next to
// the documents (session-lists/<workspace hash>.json) as well as to workspaceState: workspaceState
// writes travel to the window (the renderer) and are lost when it hangs or reloads before they
// land — a session finished in a frozen window had its document stored and its entry lost.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { readSessionTextSync } from '../../sys/sessionText';
import { readSession, writeSession, SESSION_SUFFIX, type AnySessionFile, type SessionTracer } from '../../model/sessionFile';

export const MAX_ONE_BYTES = 32 * 1024 * 1024;
export const MAX_TOTAL_BYTES = 128 * 1024 * 1024;
export const MAX_LISTED = 50;

/** The tracers of listed sessions: those with session documents, and the JVM timeline (its own format). */
export type FinishedTracer = SessionTracer | 'jvm';

export interface FinishedEntry {
  key: string;
  title: string;
  tracer: FinishedTracer;
  startedAt: string;
  endedAt?: string;
  /** false when the session was too large for storage (kept in memory only) */
  stored: boolean;
}

const LIST_KEY = 'ebpfStudio.finishedSessions';
let ctx: Pick<vscode.ExtensionContext, 'globalStorageUri' | 'workspaceState' | 'subscriptions'> | undefined;
let limits = { one: MAX_ONE_BYTES, total: MAX_TOTAL_BYTES };
/** sessions of this window, including those too big to store */
const inMemory = new Map<string, AnySessionFile>();
/** the same for views with a format of their own (the JVM timeline): the document's text */
const inMemoryText = new Map<string, string>();
const changed = new vscode.EventEmitter<void>();
export const onDidChangeFinished = changed.event;

export function newSessionKey(): string {
  return crypto.randomBytes(8).toString('hex');
}

function dir(): string {
  if (!ctx) throw new Error('session store used before activation');
  return path.join(ctx.globalStorageUri.fsPath, 'sessions');
}

const fileOf = (key: string) => path.join(dir(), `${key}${SESSION_SUFFIX}`);

/** This workspace's list file: one per workspace (or folder-less window), beside the documents. */
function listFile(): string {
  if (!ctx) throw new Error('session store used before activation');
  const id = vscode.workspace.workspaceFile?.toString() ?? (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()).join('\n');
  const hash = crypto.createHash('sha256').update(id || 'no-workspace').digest('hex').slice(0, 16);
  return path.join(ctx.globalStorageUri.fsPath, 'session-lists', `${hash}.json`);
}

function readListFile(): FinishedEntry[] {
  try {
    const v = JSON.parse(fs.readFileSync(listFile(), 'utf8')) as unknown;
    return Array.isArray(v) ? (v as FinishedEntry[]).filter((e) => e && typeof e.key === 'string' && typeof e.title === 'string') : [];
  } catch {
    return [];
  }
}

function writeListFile(list: FinishedEntry[]): void {
  try {
    const f = listFile();
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(`${f}.tmp`, JSON.stringify(list));
    fs.renameSync(`${f}.tmp`, f);
  } catch {
    /* read-only storage: workspaceState still has the list */
  }
}

let list: FinishedEntry[] = [];

export function finishedSessions(): FinishedEntry[] {
  return list;
}

async function setList(next: FinishedEntry[]): Promise<void> {
  list = next;
  writeListFile(next);
  changed.fire();
  await ctx?.workspaceState.update(LIST_KEY, next);
}

/** Removes the oldest stored documents until the folder fits MAX_TOTAL_BYTES. */
function prune(): void {
  let files: { f: string; size: number; mtime: number }[];
  try {
    files = fs.readdirSync(dir()).map((n) => {
      const f = path.join(dir(), n);
      const st = fs.statSync(f);
      return { f, size: st.size, mtime: st.mtimeMs };
    });
  } catch {
    return;
  }
  let total = files.reduce((s, x) => s + x.size, 0);
  files.sort((a, b) => a.mtime - b.mtime);
  for (const x of files) {
    if (total <= limits.total) break;
    fs.rmSync(x.f, { force: true });
    total -= x.size;
  }
}

/** Keeps a finished session (under the key its panel was opened with) and lists it. */
export async function recordSession(file: AnySessionFile, key = newSessionKey()): Promise<string> {
  inMemory.set(key, file);
  const text = writeSession(file);
  let stored = false;
  if (Buffer.byteLength(text) <= limits.one) {
    try {
      fs.mkdirSync(dir(), { recursive: true });
      fs.writeFileSync(fileOf(key), text);
      stored = true;
      prune();
    } catch {
      /* storage full or read-only: the session stays in memory for this window */
    }
  }
  const entry: FinishedEntry = { key, title: file.title, tracer: file.tracer, startedAt: file.startedAt, endedAt: file.endedAt, stored };
  await setList([entry, ...finishedSessions().filter((e) => e.key !== key)].slice(0, MAX_LISTED));
  return key;
}

/**
 * Lists a finished session of a view with its own document format (the JVM timeline) and keeps
 * its text under `key`, as recordSession does for session documents. `text` undefined: the
 * document already stored under the key (the checkpoint written as the window closed) is the one
 * to keep, unchanged.
 */
export async function recordText(key: string, text: string | undefined, meta: Omit<FinishedEntry, 'key' | 'stored'>): Promise<void> {
  if (text !== undefined) inMemoryText.set(key, text);
  const stored = text === undefined ? Boolean(ctx) && fs.existsSync(fileOf(key)) : storeText(key, text);
  const entry: FinishedEntry = { key, ...meta, stored };
  await setList([entry, ...finishedSessions().filter((e) => e.key !== key)].slice(0, MAX_LISTED));
}

let closing = false;
/**
 * True once the window is closing or reloading (a running session's last checkpoint was written):
 * sessions end then because the helper goes away, and what a panel comes back with is that
 * checkpoint, not an "ended with an error" written after it.
 */
export function windowClosing(): boolean {
  return closing;
}

/** How often a running session's document is written for a window reload to find. */
export const CHECKPOINT_MS = 15_000;

/**
 * While a session runs, writes its document as it stands (not listed in the Sessions view)
 * every CHECKPOINT_MS and once more, synchronously, when the window closes or reloads. The
 * helper's sessions end with the window, so the panel serializer then brings the panel back as
 * a stopped session with the figures it had, saying why it stopped (the `snapshot`'s ended).
 * done() once the session is recorded the ordinary way.
 */
export function checkpointWhileRunning(key: string, snapshot: () => AnySessionFile | string): { done(): void } {
  let finished = false;
  const write = () => {
    if (finished || !ctx) return;
    try {
      const doc = snapshot();
      storeText(key, typeof doc === 'string' ? doc : writeSession(doc));
    } catch {
      /* storage full or read-only: a reload then shows the panel without data, as before */
    }
  };
  const timer = setInterval(write, CHECKPOINT_MS);
  timer.unref?.();
  const onClose = {
    dispose: () => {
      closing = true;
      write();
    },
  };
  ctx?.subscriptions.push(onClose);
  return {
    done() {
      finished = true;
      clearInterval(timer);
    },
  };
}

/**
 * Stores a document under a key without listing it (a view with its own session format, such as
 * the JVM timeline, keeps its panel's data here for a reload). False when it is over the size
 * bound or storage failed.
 */
export function storeText(key: string, text: string): boolean {
  if (!ctx || Buffer.byteLength(text) > limits.one) return false;
  try {
    fs.mkdirSync(dir(), { recursive: true });
    fs.writeFileSync(fileOf(key), text);
    prune();
    return true;
  } catch {
    return false;
  }
}

/** The stored document under a key as text (whatever its format; this window's memory first), or undefined. */
export function loadStoredText(key: string): string | undefined {
  const m = inMemoryText.get(key);
  if (m !== undefined) return m;
  try {
    return fs.readFileSync(fileOf(key), 'utf8');
  } catch {
    return undefined;
  }
}

/** The session under a key: from this window's memory, else from storage. */
export function loadSession(key: string): AnySessionFile | undefined {
  const m = inMemory.get(key);
  if (m) return m;
  try {
    const f = readSession(readSessionTextSync(fileOf(key)), 'the stored session');
    inMemory.set(key, f);
    return f;
  } catch {
    return undefined;
  }
}

export async function forgetSession(key: string): Promise<void> {
  inMemory.delete(key);
  inMemoryText.delete(key);
  try {
    fs.rmSync(fileOf(key), { force: true });
  } catch {
    /* already gone */
  }
  await setList(finishedSessions().filter((e) => e.key !== key));
}

/** Once per extension host (window); tests pass smaller limits. */
export function activate(context: Pick<vscode.ExtensionContext, 'globalStorageUri' | 'workspaceState' | 'subscriptions'>, bounds = { one: MAX_ONE_BYTES, total: MAX_TOTAL_BYTES }): void {
  ctx = context;
  limits = bounds;
  closing = false;
  inMemory.clear();
  inMemoryText.clear();
  context.subscriptions.push(changed);
  // Both copies of the list, newest first; entries whose document left storage (pruned, or too big
  // for it in an earlier window) cannot reopen: drop them.
  const seen = new Set<string>();
  const merged = [...readListFile(), ...(context.workspaceState.get<FinishedEntry[]>(LIST_KEY, []) ?? [])]
    .filter((e) => !seen.has(e.key) && Boolean(seen.add(e.key)))
    .sort((a, b) => (b.endedAt ?? b.startedAt).localeCompare(a.endedAt ?? a.startedAt));
  list = merged.filter((e) => e.stored && fs.existsSync(fileOf(e.key))).slice(0, MAX_LISTED);
  writeListFile(list);
  void context.workspaceState.update(LIST_KEY, list);
}
