// Command ebpfStudio.runBpfLoader ("Run BPF Loader"): for the project of the current X.bpf.c /
// X.c (a folder with a Makefile, as "New BPF Project" makes), builds both halves with make as
// the user, asks for a modal confirmation, then runs ./X as root through the helper with its
// output in a terminal, and its maps (globals, hashes, arrays; found through the loader's open
// map fds) refreshed every second in the bpfmaps view. Context keys: none.
import { spawn } from 'node:child_process';
import path from 'node:path';
import * as vscode from 'vscode';
import { loaderFor } from '../../../authoring/newProject';
import { confirmRoot, runInTerminal } from '../../helperClient/privilegedRunClient';
import { showError } from '../../ui/errors';
import { runMaps } from '../../../protocol/privilegedRun';
import { createViewPanel } from '../../ui/webviewPanel';
import type { FromView, ToView } from '../../../../webview/bpfmaps/protocol';

function make(dir: string, target: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('make', ['-C', dir, target], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (e) => resolve({ code: null, output: `could not run make: ${e.message} (apt-get install make)` }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function runLoader(context: vscode.ExtensionContext, file: string, output: vscode.OutputChannel): Promise<void> {
  const target = loaderFor(file);
  if (!target) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${path.basename(file)} is not part of a BPF project with a Makefile. Create one with "eBPF: New BPF Project".`);
    return;
  }
  for (const doc of vscode.workspace.textDocuments) if (doc.isDirty && path.dirname(doc.uri.fsPath) === target.dir) await doc.save();
  const built = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `make ${target.app}` }, () => make(target.dir, target.app));
  output.appendLine(built.output);
  if (built.code !== 0) {
    output.show(true);
    void vscode.window.showErrorMessage(`eBPF Studio: building ${target.app} failed (make exit ${built.code}); see the eBPF Studio output.`);
    return;
  }
  if (!(await confirmRoot(`the loader ${path.join(target.dir, target.app)}`))) return;
  let timer: NodeJS.Timeout | undefined;
  let view: ReturnType<typeof createViewPanel<ToView, FromView>> | undefined;
  const t0 = Date.now();
  const r = await runInTerminal({ kind: 'loader', executable: path.join(target.dir, target.app), args: [], cwd: target.dir }, `BPF loader: ${target.app}`, (runId, conn) => {
    const v = createViewPanel<ToView, FromView>(context, 'bpfmaps', `BPF loader: ${target.app}`);
    view = v;
    const init = () => v.post({ type: 'init', object: target.app, programs: [], warnings: [] });
    const poll = async () => {
      try {
        const maps = await conn.sendRequest(runMaps, { runId });
        v.post({ type: 'update', update: { atMs: Date.now() - t0, maps } });
      } catch {
        /* the loader is exiting; the last contents stay */
      }
    };
    context.subscriptions.push(
      v.onReady(init),
      v.panel.onDidDispose(() => clearInterval(timer)),
    );
    timer = setInterval(() => void poll(), 1000);
  });
  clearInterval(timer);
  view?.post({ type: 'ended', reason: 'stopped', message: `the loader ${r.signal ? `was stopped by ${r.signal}` : `exited with code ${r.code}`}` });
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('eBPF Studio: BPF build');
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('ebpfStudio.runBpfLoader', async (arg?: unknown) => {
      const file = arg instanceof vscode.Uri ? arg.fsPath : vscode.window.activeTextEditor?.document.uri.fsPath;
      if (!file) {
        void vscode.window.showErrorMessage('eBPF Studio: open the X.bpf.c or X.c of a BPF project to run its loader.');
        return;
      }
      try {
        await runLoader(context, file, output);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
