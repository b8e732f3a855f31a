// Command ebpfStudio.runBpftrace ("Run bpftrace Script"): runs the current .bt file with
// bpftrace as root through the helper (after a modal confirmation), output in a terminal; when
// bpftrace exits (Ctrl-C in the terminal, or exit() in the script), the @ maps it printed are
// shown in the bpfmaps view, hist() as histograms. Context keys: none.
import path from 'node:path';
import * as vscode from 'vscode';
import { confirmRoot, runInTerminal } from '../../helperClient/privilegedRunClient';
import { parseBpftraceMaps } from '../../../model/bpftraceMaps';
import { createViewPanel } from '../../ui/webviewPanel';
import { showError } from '../../ui/errors';
import type { FromView, ToView } from '../../../../webview/bpfmaps/protocol';

async function runScript(context: vscode.ExtensionContext, doc: vscode.TextDocument): Promise<void> {
  if (doc.isDirty) await doc.save();
  const script = doc.uri.fsPath;
  if (!(await confirmRoot(`bpftrace on ${path.basename(script)}`))) return;
  const t0 = Date.now();
  const r = await runInTerminal({ kind: 'bpftrace', script, cwd: path.dirname(script) }, `bpftrace: ${path.basename(script)}`);
  const maps = parseBpftraceMaps(r.stdout);
  if (!maps.length) return;
  const view = createViewPanel<ToView, FromView>(context, 'bpfmaps', `bpftrace: ${path.basename(script)}`);
  const show = () => {
    view.post({ type: 'init', object: path.basename(script), programs: [], warnings: [] });
    view.post({ type: 'update', update: { atMs: Date.now() - t0, maps } });
    view.post({ type: 'ended', reason: 'stopped', message: `bpftrace ${r.signal ? `stopped by ${r.signal}` : `exited with code ${r.code}`}` });
  };
  context.subscriptions.push(view.onReady(show));
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.runBpftrace', async (arg?: unknown) => {
      const doc = arg instanceof vscode.Uri ? await vscode.workspace.openTextDocument(arg) : vscode.window.activeTextEditor?.document;
      if (!doc || !(doc.languageId === 'bpftrace' || /\.bt$/.test(doc.fileName)) || doc.uri.scheme !== 'file') {
        void vscode.window.showErrorMessage('eBPF Studio: open a saved .bt bpftrace script to run it.');
        return;
      }
      try {
        await runScript(context, doc);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
