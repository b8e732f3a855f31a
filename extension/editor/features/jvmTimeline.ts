// Commands: ebpfStudio.openJvmTimeline ("Open JVM Timeline": pick a running JVM, or a saved
// session file, then the timeline of GC, heap and allocation rate, safepoints, run-queue waits and
// CPU samples in a webview; select a range to see its statistics and flame graph). Its panel comes
// back after a window reload (stopped, with the figures it had: checkpointed while it runs), and a
// finished session is listed in the Sessions view, which reopens it by key. Context
// keys: none of its own (sessions.ts sets ebpfStudio.sessionRunning while the session runs).
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import * as proto from '../../protocol/protocol';
import { fromSessionFile, JvmTimeline, toSessionFile, type JvmOptions, type JvmResult, type JvmSessionFile } from '../../model/jvmTimeline';
import { pickProcess } from '../ui/processPicker';
import { noUsdtMessage } from '../../sys/proc/processes';
import { startSession } from '../sessions/liveSessions';
import { createViewPanel, fillViewPanel, type TypedPanel } from '../ui/webviewPanel';
import { LiveViewHost, RELOADED } from '../sessions/livePanel';
import { loadStoredText, recordText, windowClosing } from '../sessions/sessionStore';
import { readSessionUri } from '../sessions/readSessionUri';
import { errorText, showError } from '../ui/errors';
import type { FromView, ToView } from '../../../webview/jvmTimeline/protocol';

interface OpenItem extends vscode.QuickPickItem {
  open: true;
}

/** The choice below the JVMs: a session saved from this view instead of a running JVM. */
export const OPEN_SAVED: OpenItem = { label: '$(folder-opened) Open a saved session…', detail: 'A file exported from this view (or written by "ebpf-studio jvm --json")', open: true };

/** Reads a session file chosen by the user; undefined when cancelled. Throws with the reason. */
async function readSessionFile(uri?: vscode.Uri): Promise<{ result: JvmResult; name: string } | undefined> {
  const file = uri ?? (await vscode.window.showOpenDialog({ title: 'Open a JVM timeline session', canSelectMany: false, filters: { 'Sessions (JSON)': ['json'], 'All files': ['*'] } }))?.[0];
  if (!file) return undefined;
  try {
    const text = await readSessionUri(file);
    return { result: fromSessionFile(text, file.path.split('/').pop()), name: file.path.split('/').pop() ?? file.fsPath };
  } catch (e) {
    throw new Error(`${file.fsPath} cannot be opened: ${(e as Error).message}`);
  }
}

/**
 * The timeline's panel and its Export/Import buttons. `restore`: a panel VS Code brought back
 * after a reload, filled instead of a new one. `key` ties the panel to its stored document.
 */
function openPanel(context: vscode.ExtensionContext, title: string, onMessage: (m: FromView, view: TypedPanel<ToView, FromView>) => void | Promise<void>, key?: string, restore?: vscode.WebviewPanel) {
  const view = restore ? fillViewPanel<ToView, FromView>(context, restore, 'jvmTimeline', title, key) : createViewPanel<ToView, FromView>(context, 'jvmTimeline', title, undefined, key);
  const send = (m: ToView) => view.post(m);
  view.onMessage(async (m) => {
    if (m.type === 'export') {
      const outcome = await saveExport({ title: 'Export the JVM timeline session', baseName: 'jvm-timeline', extension: 'json', filters: { JSON: ['json'] }, content: () => m.content });
      if (outcome) send({ type: 'note', text: outcome.error ? `export failed: ${outcome.error}` : `exported to ${outcome.file}`, error: Boolean(outcome.error) });
    }
    if (m.type === 'import') {
      try {
        const s = await readSessionFile();
        if (s) send({ type: 'load', ...s });
      } catch (e) {
        send({ type: 'note', text: errorText(e), error: true });
      }
    }
    await onMessage(m, view);
  });
  return { view, send };
}

/** Raw events a reloaded panel gets back: the last two minutes. */
const CHECKPOINT_RAW_NS = 2 * 60e9;

async function trace(context: vscode.ExtensionContext, options: JvmOptions): Promise<string> {
  const target = `pid ${options.pid}`;
  const title = `JVM timeline: ${target}`;
  const host = new LiveViewHost<ToView, FromView>();
  let panelGone = false;
  // The host keeps its own (bounded) model of the session: what a reload brings back.
  const live = new JvmTimeline();
  live.pid = options.pid;
  live.frequency = options.frequency;
  live.sliceMs = options.sliceMs;
  // The stored document keeps the last CHECKPOINT_RAW_NS of raw events (the lanes cover the whole
  // session): small enough to write every 15 s and within the store's size bound after hours.
  const document = (ended: NonNullable<JvmSessionFile['ended']>) => JSON.stringify({ ...toSessionFile(live.toResult({ withTimeline: true, rawFromNs: live.endNs - CHECKPOINT_RAW_NS }), new Date(), ended), title });
  const session = await startSession('jvm', options, `JVM timeline ${target}`, {
    onUpdate: (u) => {
      // Once the window is closing, what the helper sends while it winds down is not counted: the
      // checkpoint written then is what a reload shows.
      if (!host.accepting) return;
      live.apply(u);
      host.send({ type: 'update', update: u });
    },
    onEnded: (reason, result, message) =>
      host.finish(() => {
        const meta = { title, tracer: 'jvm' as const, startedAt: host.startedAt.toISOString(), endedAt: new Date().toISOString() };
        // Once the window is closing, the checkpoint written then is what comes back (the panel
        // VS Code restores, and the Sessions view's entry): it is listed as it is.
        if (windowClosing()) return void recordText(host.key, undefined, meta);
        if (result) live.replaceStacks(result.stacks);
        host.send({ type: 'ended', reason, message, result });
        // Kept under the panel's key (a reload shows the finished session as it ended) and listed
        // in the Sessions view. A session that ends after its panel went (the window reloading
        // disposes the panel, which stops the session) ended because of that: the panel VS Code
        // brings back says so.
        void recordText(host.key, document(panelGone ? { reason: 'stopped', message: RELOADED } : { reason, message }), meta);
      }),
  });
  host.checkpointWith(() => document({ reason: 'stopped', message: RELOADED }));
  const p = openPanel(
    context,
    title,
    async (m) => {
      if (m.type === 'stop') await session.stop();
    },
    host.key,
  );
  p.view.onReady(() => [{ type: 'init', target }]);
  host.attach(p.view);
  for (const w of session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  p.view.panel.onDidDispose(() => {
    panelGone = true;
    void session.stop();
  });
  return session.id;
}

/** A finished timeline document (a Flight Recording's) in a new panel, or in `panel` (a custom editor's). */
export function showJvmResult(context: vscode.ExtensionContext, title: string, result: JvmResult, ended: JvmSessionFile['ended'], panel?: vscode.WebviewPanel): void {
  const p = openPanel(context, title, () => undefined, undefined, panel);
  p.send({ type: 'load', result, name: title, ended: ended ?? { reason: 'stopped' } });
}

/** The JVM timeline stored under a key (a finished or reloaded session), or undefined. */
function storedTimeline(key: string | undefined): (JvmSessionFile & { title?: string }) | undefined {
  const text = key ? loadStoredText(key) : undefined;
  try {
    // fromSessionFile checks the text against SESSION_LIMITS before anything parses it
    const result = text ? fromSessionFile(text, 'the stored session') : undefined;
    return text && result ? { ...(JSON.parse(text) as JvmSessionFile & { title?: string }), result } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Shows a stored timeline, stopped and saying why it ended: in `restore` (a panel VS Code brought
 * back after a reload) or in a new panel (the Sessions view's Open). The panel keeps the key.
 */
function showStored(context: vscode.ExtensionContext, key: string, doc: JvmSessionFile & { title?: string }, fallbackTitle: string, restore?: vscode.WebviewPanel): void {
  const title = doc.title ?? fallbackTitle;
  const p = openPanel(context, title, () => undefined, key, restore);
  p.view.panel.title = title;
  p.send({ type: 'load', result: doc.result, name: title.replace(/^JVM timeline: /, ''), ended: doc.ended ?? { reason: 'stopped' } });
}

/** A panel VS Code brings back after a reload: the stored document under its key, shown stopped and saying why. */
function restorePanel(context: vscode.ExtensionContext, panel: vscode.WebviewPanel, state: unknown): void {
  const key = (state as { sessionKey?: string } | undefined)?.sessionKey;
  const doc = storedTimeline(key);
  if (!key || !doc) {
    panel.webview.options = { enableScripts: false };
    panel.webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"></head><body style="font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 1em"><p role="alert">${
      key ? 'This JVM timeline was not saved before the window reloaded (or its data left the bounded storage): nothing to show. Export a session to keep it.' : 'This panel has no saved data to restore.'
    }</p></body></html>`;
    return;
  }
  showStored(context, key, doc, panel.title, panel);
}

/** Why a JVM cannot be traced here: its libjvm.so has no USDT probes (shown on its row and said when it is picked). */
function noUsdtRefusal(p: proto.ProcessInfo): string | undefined {
  return p.jvm && !p.jvm.usdt ? noUsdtMessage(p.jvm.libjvm) : undefined;
}

async function pickPid(): Promise<number | 'open' | undefined> {
  const picked = await pickProcess<OpenItem>({
    command: 'Open JVM Timeline',
    jvmOnly: true,
    placeHolder: 'Pick a JVM, type its pid, or open a saved session',
    bottom: [OPEN_SAVED],
    refuse: noUsdtRefusal,
  });
  if (!picked) return undefined;
  return 'extra' in picked ? 'open' : picked.process.pid;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer('ebpfStudio.jvmTimeline', {
      deserializeWebviewPanel: async (panel: vscode.WebviewPanel, state: unknown) => restorePanel(context, panel, state),
    }),
    vscode.commands.registerCommand('ebpfStudio.openJvmTimeline', async (given?: { pid?: number; file?: string; key?: string; frequency?: number; sliceMs?: number }) => {
      try {
        // A finished session of this window (the Sessions view's Open), by its key.
        if (given?.key) {
          const doc = storedTimeline(given.key);
          if (!doc) throw new Error('the data of this JVM timeline is no longer stored (storage is bounded; the oldest sessions go first). Delete the entry; export sessions you want to keep.');
          showStored(context, given.key, doc, 'JVM timeline');
          return given.key;
        }
        // Tests and other commands may pass the target (or a session file) directly.
        const choice = given?.file ? 'open' : given?.pid ? given.pid : await pickPid();
        if (choice === undefined) return undefined;
        if (choice === 'open') {
          const s = await readSessionFile(given?.file ? vscode.Uri.file(given.file) : undefined);
          if (!s) return undefined;
          openPanel(context, `JVM timeline: ${s.name}`, () => undefined).send({ type: 'load', ...s });
          return s.name;
        }
        return await trace(context, { pid: choice, frequency: given?.frequency ?? 99, sliceMs: given?.sliceMs ?? 250 });
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
  );
}
