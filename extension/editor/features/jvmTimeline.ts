// Commands: ebpfStudio.openJvmTimeline ("Open JVM Timeline": pick a running JVM, or a saved
// session file, then the timeline of GC, safepoints, run-queue waits and CPU samples in a
// webview; select a range to see its statistics and flame graph). Context keys: none of its own
// (sessions.ts sets ebpfStudio.sessionRunning while the session runs).
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import * as proto from '../../protocol/protocol';
import { fromSessionFile, type JvmOptions, type JvmResult } from '../../model/jvmTimeline';
import { pickProcess } from '../ui/processPicker';
import { noUsdtMessage } from '../../sys/proc/processes';
import { startSession } from '../sessions/liveSessions';
import { createViewPanel, type TypedPanel } from '../ui/webviewPanel';
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
  const text = Buffer.from(await vscode.workspace.fs.readFile(file)).toString('utf8');
  try {
    return { result: fromSessionFile(text), name: file.path.split('/').pop() ?? file.fsPath };
  } catch (e) {
    throw new Error(`${file.fsPath} cannot be opened: ${(e as Error).message}`);
  }
}

function openPanel(context: vscode.ExtensionContext, title: string, onMessage: (m: FromView, view: TypedPanel<ToView, FromView>) => void | Promise<void>) {
  const view = createViewPanel<ToView, FromView>(context, 'jvmTimeline', title);
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

async function trace(context: vscode.ExtensionContext, options: JvmOptions): Promise<string> {
  const target = `pid ${options.pid}`;
  // The session starts before the panel opens, so a refused target shows an error, not an empty view.
  let post: ((m: ToView) => void) | undefined;
  const early: ToView[] = [];
  const deliver = (m: ToView) => (post ? post(m) : early.push(m));
  const session = await startSession('jvm', options, `JVM timeline ${target}`, {
    onUpdate: (u) => deliver({ type: 'update', update: u }),
    onEnded: (reason, result, message) => deliver({ type: 'ended', reason, message, result }),
  });
  const p = openPanel(context, `JVM timeline: ${target}`, async (m) => {
    if (m.type === 'stop') await session.stop();
  });
  p.send({ type: 'init', target });
  for (const e of early.splice(0)) p.send(e);
  post = p.send;
  for (const w of session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  p.view.panel.onDidDispose(() => void session.stop());
  return session.id;
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
    vscode.commands.registerCommand('ebpfStudio.openJvmTimeline', async (given?: { pid?: number; file?: string; frequency?: number; sliceMs?: number }) => {
      try {
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
