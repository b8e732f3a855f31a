// Small UI helpers shared by features: error display that names the cause and the fix.
import * as vscode from 'vscode';
import { StudioError } from '../../protocol/errors';

export function errorText(e: unknown): string {
  if (e instanceof StudioError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function showError(e: unknown, prefix = 'eBPF Studio'): void {
  const msg = `${prefix}: ${errorText(e)}`;
  if (e instanceof StudioError && e.kind === 'privilege') {
    void vscode.window.showErrorMessage(msg, 'Open Settings').then((c) => {
      if (c) void vscode.commands.executeCommand('workbench.action.openSettings', 'ebpfStudio.helper');
    });
  } else {
    void vscode.window.showErrorMessage(msg);
  }
}

/** A custom editor that could not open its file: the reason in a page that runs no script. */
export function showFailure(panel: vscode.WebviewPanel, what: string, why: string): void {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  panel.webview.options = { enableScripts: false };
  panel.webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"></head>
<body style="font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 1em">
<h3>${esc(what)}</h3><p role="alert">${esc(why)}</p></body></html>`;
}
