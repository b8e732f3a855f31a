// Creates a webview panel for one of the bundled views (dist/webview/<view>.js): strict CSP
// with a nonce, theme through --vscode-* variables, and typed messages in both directions.
import crypto from 'node:crypto';
import * as vscode from 'vscode';

export interface TypedPanel<ToView, FromView> {
  readonly panel: vscode.WebviewPanel;
  post(message: ToView): void;
  onMessage(handler: (message: FromView) => void): vscode.Disposable;
}

export function createViewPanel<ToView, FromView>(
  context: vscode.ExtensionContext,
  view: string,
  title: string,
  viewType = `ebpfStudio.${view}`,
  sessionKey?: string,
): TypedPanel<ToView, FromView> {
  const root = vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview');
  const panel = vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Active, {
    enableScripts: true,
    retainContextWhenHidden: true,
    localResourceRoots: [root],
  });
  return fillViewPanel(context, panel, view, title, sessionKey);
}

/**
 * Loads a bundled view into a panel VS Code created (a restored panel or a custom editor).
 * sessionKey lands in <body data-session-key>; the view keeps it in its webview state so the
 * panel serializer finds the session's data after a reload.
 */
export function fillViewPanel<ToView, FromView>(context: vscode.ExtensionContext, panel: vscode.WebviewPanel, view: string, title: string, sessionKey?: string): TypedPanel<ToView, FromView> {
  const root = vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview');
  panel.webview.options = { enableScripts: true, localResourceRoots: [root] };
  const nonce = crypto.randomBytes(16).toString('base64');
  const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(root, `${view}.js`));
  const style = panel.webview.asWebviewUri(vscode.Uri.joinPath(root, 'common.css'));
  const csp = [
    "default-src 'none'",
    `img-src ${panel.webview.cspSource} data:`,
    `style-src ${panel.webview.cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `font-src ${panel.webview.cspSource}`,
  ].join('; ');
  panel.webview.html = `<!DOCTYPE html>
<html lang="en"><head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}" nonce="${nonce}">
<title>${escapeHtml(title)}</title>
</head><body data-view="${view}"${sessionKey ? ` data-session-key="${escapeHtml(sessionKey)}"` : ''}>
<div id="app"></div>
<script nonce="${nonce}" src="${script}"></script>
</body></html>`;
  return {
    panel,
    post: (m) => void panel.webview.postMessage(m),
    onMessage: (h) => panel.webview.onDidReceiveMessage(h as (m: unknown) => void),
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
