// Opening sessions without a command: read-only custom editors (double-click a file) for saved
// sessions (*.ebpf-session.json → its tracer's view) and CPU profiles (*.folded,
// *.speedscope.json, *.cpuprofile, *.pb.gz → the flame graph), and a webview panel serializer
// per view so open panels come back after a window reload. Commands: none. Context keys: none.
// View types: ebpfStudio.sessionFile, ebpfStudio.profileFile (editors); ebpfStudio.javaGc,
// ebpfStudio.latencyKit (every histogram tracer's), ebpfStudio.memleak, ebpfStudio.flamegraph
// (serializers).
import path from 'node:path';
import * as vscode from 'vscode';
import { loadSession } from './sessionStore';
import { showSession } from './sessionViews';
import { makeSession, peekTracer, readSession, sessionJson, SESSION_VIEW_NAMES, type AnySessionFile } from '../../model/sessionFile';
import { readSessionUri } from './readSessionUri';
import { errorText, showFailure } from '../ui/errors';
import type { FlameProfile } from '../../model/flamegraph/profileData';
import { readProfileUri } from '../features/profile/readProfileUri';

/** Any profile file we read (pprof, .cpuprofile, speedscope, folded, --json: told by content), off this thread. */
export async function profileFromFile(uri: vscode.Uri): Promise<FlameProfile> {
  return (await readProfileUri(uri)).flame;
}

async function documentFor(uri: vscode.Uri, session?: { json: unknown }): Promise<AnySessionFile> {
  const name = path.basename(uri.fsPath);
  if (session) return readSession(session, name);
  const p = await profileFromFile(uri);
  return makeSession('profile', `CPU: ${name}`, { profile: p, warnings: [] }, new Date());
}

class ReadonlyEditor implements vscode.CustomReadonlyEditorProvider {
  constructor(private readonly context: vscode.ExtensionContext) {}
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => {} };
  }
  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    try {
      const session = document.uri.fsPath.endsWith('.ebpf-session.json') ? { json: sessionJson(await readSessionUri(document.uri), path.basename(document.uri.fsPath)) } : undefined;
      if (session && peekTracer(session) === 'jvm') {
        // The JVM timeline has its own view and reader: hand the file over, close this tab.
        await vscode.commands.executeCommand('ebpfStudio.openJvmTimeline', { file: document.uri.fsPath });
        panel.dispose();
        return;
      }
      showSession(this.context, await documentFor(document.uri, session), undefined, panel);
    } catch (e) {
      showFailure(panel, `Cannot open ${path.basename(document.uri.fsPath)}`, errorText(e));
    }
  }
}

export function activate(context: vscode.ExtensionContext): void {
  const editor = new ReadonlyEditor(context);
  const options = { webviewOptions: { retainContextWhenHidden: true }, supportsMultipleEditorsPerDocument: true };
  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider('ebpfStudio.sessionFile', editor, options),
    vscode.window.registerCustomEditorProvider('ebpfStudio.profileFile', editor, options),
    ...SESSION_VIEW_NAMES.map((view) =>
      vscode.window.registerWebviewPanelSerializer(`ebpfStudio.${view}`, {
        async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown) {
          const key = (state as { sessionKey?: string } | undefined)?.sessionKey;
          const file = key ? loadSession(key) : undefined;
          if (file) showSession(context, file, key, panel);
          else showFailure(panel, panel.title, key ? 'This session was still running when the window reloaded, or its data left the bounded storage: nothing to show. Sessions that finished are kept in the Sessions view.' : 'This panel has no saved data to restore. Finished sessions are listed in the Sessions view (eBPF in the activity bar).');
        },
      }),
    ),
  );
}
