// Command ebpfStudio.runBpfLoader ("Run BPF Loader"): for the project of the current X.bpf.c /
// X.c (a folder with a Makefile, as "New BPF Project" makes), builds both halves with make as
// the user, asks for a modal confirmation, then runs ./X as root through the helper with its
// output in a terminal. Context keys: none.
import { spawn } from 'node:child_process';
import path from 'node:path';
import * as vscode from 'vscode';
import { loaderFor } from '../authoring/newProject';
import { confirmRoot, runInTerminal } from '../privilegedRunClient';
import { showError } from '../ui';

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

async function runLoader(file: string, output: vscode.OutputChannel): Promise<void> {
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
  await runInTerminal({ kind: 'loader', executable: path.join(target.dir, target.app), args: [], cwd: target.dir }, `BPF loader: ${target.app}`);
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
        await runLoader(file, output);
      } catch (e) {
        showError(e);
      }
    }),
  );
}
