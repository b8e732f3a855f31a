// Command ebpfStudio.runBpfProgram ("Run BPF Program"): builds the current .bpf.c, loads it
// through the helper as a "bpf-run" session that auto-attaches every program by section name,
// and shows its maps live in the bpfmaps webview (tables, log2 histograms honoring
// `/// @sample {...}`, ring-buffer records). Closing the view detaches. Context keys: none.
import path from 'node:path';
import * as vscode from 'vscode';
import { defaultOutput } from '../../../authoring/buildCommand';
import { startSession } from '../../sessions/liveSessions';
import { createViewPanel } from '../../ui/webviewPanel';
import { showError } from '../../ui/errors';
import type { FromView, ToView } from '../../../../webview/bpfmaps/protocol';
import { buildSource, targetSource } from './bpfBuild';
import { confirmObject } from '../../helperClient/objectConfirm';

async function run(context: vscode.ExtensionContext, source: vscode.Uri): Promise<void> {
  const object = defaultOutput(source.fsPath);
  const built = await buildSource(source.fsPath, object);
  if (!built.ok) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${path.basename(source.fsPath)} does not compile; see Problems.`);
    return;
  }
  const confirmedSha256 = await confirmObject(object, 'Run BPF Program');
  if (!confirmedSha256) return;
  const view = createViewPanel<ToView, FromView>(context, 'bpfmaps', `BPF: ${path.basename(source.fsPath)}`);
  let ended = false;
  const session = await startSession('bpf-run', { objectPath: object, sourcePath: source.fsPath, intervalMs: 1000, confirmedSha256 }, `run ${path.basename(source.fsPath)}`, {
    onUpdate: (update) => view.post({ type: 'update', update }),
    onEnded: (reason, result, message) => {
      ended = true;
      if (result) view.post({ type: 'update', update: { atMs: result.durationMs, maps: result.maps } });
      view.post({ type: 'ended', reason, message });
    },
  }).catch((e) => {
    view.panel.dispose();
    throw e;
  });
  const snapshot = await session.snapshot();
  const init = () => view.post({ type: 'init', object: path.basename(object), programs: snapshot?.programs ?? [], warnings: session.info.warnings });
  context.subscriptions.push(
    view.onReady(() => {
      init();
      if (snapshot) view.post({ type: 'update', update: { atMs: snapshot.durationMs, maps: snapshot.maps } });
    }),
    view.onMessage((m) => {
      if (m.type === 'stop') void session.stop();
    }),
    view.panel.onDidDispose(() => {
      if (!ended) void session.stop();
    }),
  );
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.runBpfProgram', async (arg?: unknown) => {
      const src = targetSource(arg);
      if (!src) {
        void vscode.window.showErrorMessage('eBPF Studio: open a .bpf.c file to run it.');
        return;
      }
      try {
        await run(context, src);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
