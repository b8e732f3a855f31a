// Shows a finished session (a session document) in its view: the Sessions view's Open, the
// panel serializers after a reload, and the custom editors all come here. The view gets the
// same messages the live session sent; its Export buttons keep working.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import { createViewPanel, fillViewPanel, type TypedPanel } from '../ui/webviewPanel';
import { replayMessages, viewOf, type AnySessionFile } from '../../model/sessionFile';
import { toFolded as leaksFolded } from '../../model/memleakFormat';
import { toFolded, toSpeedscope } from '../../model/flamegraph/formats';

type AnyMessage = { type: string; [k: string]: unknown };

/**
 * Opens `file` in a new panel, or in `panel` when VS Code made one (restore, custom editor).
 * sessionKey ties the panel to its stored document for the serializer.
 */
export function showSession(context: vscode.ExtensionContext, file: AnySessionFile, sessionKey?: string, panel?: vscode.WebviewPanel): TypedPanel<AnyMessage, AnyMessage> {
  const view = viewOf(file.tracer);
  const typed = panel ? fillViewPanel<AnyMessage, AnyMessage>(context, panel, view, file.title, sessionKey) : createViewPanel<AnyMessage, AnyMessage>(context, view, file.title, undefined, sessionKey);
  typed.panel.title = file.title;
  typed.onReady(() => replayMessages(file) as AnyMessage[]);
  typed.onMessage(async (m) => {
    switch (m.type) {
      case 'export':
        await exportFrom(file, m, typed);
        break;
      case 'openSource':
      case 'openFrame':
        await openSource(String(m.file), Number(m.line));
        break;
      case 'open':
        await vscode.commands.executeCommand('ebpfStudio.openProfile');
        break;
    }
  });
  return typed;
}

/**
 * Opens a frame's source. Java frames name their file relative to a source root
 * ("com/x/Foo.java"): those are looked up in the workspace.
 */
async function openSource(file: string, line: number): Promise<void> {
  const abs = path.isAbsolute(file) ? (fs.existsSync(file) ? file : undefined) : (await vscode.workspace.findFiles(`**/${file}`, '**/node_modules/**', 1))[0]?.fsPath;
  if (!abs) {
    void vscode.window.showWarningMessage(path.isAbsolute(file) ? `eBPF Studio: ${file} does not exist here (was the session recorded on another machine?)` : `eBPF Studio: ${file} is not in this workspace (a JDK or library class?)`);
    return;
  }
  const pos = new vscode.Position(Math.max(0, line - 1), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(abs), { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
}

async function exportFrom(file: AnySessionFile, m: AnyMessage, typed: TypedPanel<AnyMessage, AnyMessage>): Promise<void> {
  const format = String(m.format ?? 'json');
  let content: () => string;
  let extension = format;
  switch (file.tracer) {
    case 'profile':
      extension = format === 'folded' ? 'folded' : 'speedscope.json';
      content = () => (format === 'folded' ? toFolded(file.data.profile) : JSON.stringify(toSpeedscope(file.data.profile)));
      break;
    case 'memleak':
    case 'java-heap':
      content = () => (format === 'folded' ? leaksFolded(file.data) + '\n' : JSON.stringify(file.data, null, 2));
      break;
    default:
      // The GC and run-queue views render their own export content.
      content = () => String(m.content ?? '');
  }
  const outcome = await saveExport({ title: `Export ${file.title}`, baseName: file.tracer, extension, filters: { [extension]: [extension.split('.').pop()!] }, content });
  if (!outcome) return;
  if (file.tracer === 'profile') typed.post(outcome.file ? { type: 'status', text: `Exported to ${outcome.file}` } : { type: 'status', text: `Export failed: ${outcome.error}`, error: true });
  else if (file.tracer !== 'memleak' && file.tracer !== 'java-heap') typed.post({ type: 'exported', ...outcome });
  else if (outcome.error) void vscode.window.showErrorMessage(`eBPF Studio: export failed: ${outcome.error}`);
}
