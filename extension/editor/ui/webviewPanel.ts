// Creates a webview panel for one of the bundled views (dist/webview/<view>.js): strict CSP
// with a nonce, theme through --vscode-* variables, and typed messages in both directions.
// The panel owns the handshake every view follows: the page loads, says {type:'ready'}, and only
// then can it receive messages (a message posted earlier is lost). So posts wait in a queue until
// the view is ready; what a view needs first (its init message) comes from onReady.
import crypto from 'node:crypto';
import * as vscode from 'vscode';
import { showError } from './errors';

export interface TypedPanel<ToView, FromView> {
  readonly panel: vscode.WebviewPanel;
  /** true once the view said it is ready (and until the panel is disposed) */
  readonly ready: boolean;
  /** delivers now when the view is ready, else once it is (in order); dropped after dispose */
  post(message: ToView): void;
  /**
   * Runs each time the view says ready (its page loaded), before the queued messages go out:
   * the place for the message that sets the view up. Messages it returns are posted first.
   */
  onReady(first: () => ToView[] | void): vscode.Disposable;
  /** Every message but the handshake's 'ready'; a handler's error is shown, not lost. */
  onMessage(handler: (message: FromView) => void | Promise<void>): vscode.Disposable;
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
  return hostView<ToView, FromView>(panel);
}

/** The ready/queue handshake and message dispatch of one panel (see the file's header). */
function hostView<ToView, FromView>(panel: vscode.WebviewPanel): TypedPanel<ToView, FromView> {
  let ready = false;
  let disposed = false;
  const queue: ToView[] = [];
  const readyHooks = new Set<() => ToView[] | void>();
  const handlers = new Set<(m: FromView) => void | Promise<void>>();
  const deliver = (m: ToView) => void panel.webview.postMessage(m);
  const sub = panel.webview.onDidReceiveMessage(async (m: unknown) => {
    if ((m as { type?: unknown } | null)?.type === 'ready') {
      ready = true;
      for (const hook of readyHooks) for (const first of hook() ?? []) deliver(first);
      for (const q of queue.splice(0)) deliver(q);
      return;
    }
    for (const h of handlers) {
      try {
        await h(m as FromView);
      } catch (e) {
        showError(e);
      }
    }
  });
  panel.onDidDispose(() => {
    disposed = true;
    ready = false;
    queue.length = 0;
    readyHooks.clear();
    handlers.clear();
    sub.dispose();
  });
  const remove = <T>(set: Set<T>, x: T) => new vscode.Disposable(() => set.delete(x));
  return {
    panel,
    get ready() {
      return ready;
    },
    post: (m) => {
      if (disposed) return;
      if (ready) deliver(m);
      else queue.push(m);
    },
    onReady: (hook) => {
      readyHooks.add(hook);
      return remove(readyHooks, hook);
    },
    onMessage: (h) => {
      handlers.add(h);
      return remove(handlers, h);
    },
  };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
