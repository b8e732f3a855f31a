// Command ebpfStudio.runBpfLoader ("Run BPF Loader"): for the project of the current X.bpf.c /
// X.c (a folder with a Makefile, as "New BPF Project" makes), builds both halves with make as
// the user (its output shown in the "eBPF Studio: BPF build" channel), asks for a modal
// confirmation (remembered for the session while the loader and its .bpf.o are unchanged), then
// runs ./X as root through the helper with its output in a terminal, and in the bpfmaps view the
// programs it loaded (sections, links) and its maps (globals, hashes, arrays; found through the
// loader's open fds, read in the helper without bpftool) refreshed every second. The view's Stop
// stops the loader (SIGINT, then SIGTERM/SIGKILL). Context keys: none.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { loaderFor } from '../../../authoring/newProject';
import { confirmRoot, runInTerminal } from '../../helperClient/privilegedRunClient';
import { showError } from '../../ui/errors';
import { runMaps, runPrograms, runStop } from '../../../protocol/privilegedRun';
import { createViewPanel } from '../../ui/webviewPanel';
import type { FromView, ToView } from '../../../../webview/bpfmaps/protocol';
import type { ProgramState } from '../../../protocol/bpfRun';

/** Loader + object hashes the user agreed to run as root in this session. */
const confirmedThisSession = new Set<string>();

function buildHash(files: string[]): string {
  const h = crypto.createHash('sha256');
  for (const f of files) h.update(f).update(fs.existsSync(f) ? fs.readFileSync(f) : Buffer.alloc(0));
  return h.digest('hex');
}

function make(dir: string, target: string, output: vscode.OutputChannel): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    output.appendLine(`$ make -C ${dir} ${target}`);
    const child = spawn('make', ['-C', dir, target], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    const add = (d: Buffer) => {
      text += d.toString();
      output.append(d.toString());
    };
    child.stdout.on('data', add);
    child.stderr.on('data', add);
    child.on('error', (e) => resolve({ code: null, output: `could not run make: ${e.message} (apt-get install make)` }));
    child.on('close', (code) => resolve({ code, output: text }));
  });
}

async function runLoader(context: vscode.ExtensionContext, file: string, output: vscode.OutputChannel): Promise<void> {
  const target = loaderFor(file);
  if (!target) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${path.basename(file)} is not part of a BPF project with a Makefile. Create one with "eBPF: New BPF Project".`);
    return;
  }
  for (const doc of vscode.workspace.textDocuments) if (doc.isDirty && path.dirname(doc.uri.fsPath) === target.dir) await doc.save();
  output.show(true);
  const built = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `make ${target.app}` }, () => make(target.dir, target.app, output));
  if (built.code !== 0) {
    void vscode.window.showErrorMessage(`eBPF Studio: building ${target.app} failed (make exit ${built.code}); see the eBPF Studio output.`);
    return;
  }
  const executable = path.join(target.dir, target.app);
  const hash = buildHash([executable, `${executable}.bpf.o`]);
  if (!confirmedThisSession.has(hash)) {
    if (!(await confirmRoot(`the loader ${executable}`))) return;
    confirmedThisSession.add(hash);
  }
  let timer: NodeJS.Timeout | undefined;
  let view: ReturnType<typeof createViewPanel<ToView, FromView>> | undefined;
  const t0 = Date.now();
  const r = await runInTerminal({ kind: 'loader', executable: path.join(target.dir, target.app), args: [], cwd: target.dir }, `BPF loader: ${target.app}`, (runId, conn) => {
    const v = createViewPanel<ToView, FromView>(context, 'bpfmaps', `BPF loader: ${target.app}`);
    view = v;
    let programs: ProgramState[] = [];
    let shown = '';
    const init = () => v.post({ type: 'init', object: target.app, programs, warnings: [] });
    const poll = async () => {
      try {
        // The programs change while the loader loads and attaches them; the view is re-inited when they do.
        const now = await conn.sendRequest(runPrograms, { runId });
        if (JSON.stringify(now) !== shown) {
          shown = JSON.stringify(now);
          programs = now;
          init();
        }
        const maps = await conn.sendRequest(runMaps, { runId });
        v.post({ type: 'update', update: { atMs: Date.now() - t0, maps } });
      } catch {
        /* the loader is exiting; the last contents stay */
      }
    };
    context.subscriptions.push(
      v.onReady(init),
      v.onMessage((m) => {
        if (m.type === 'stop') void conn.sendRequest(runStop, { runId }).catch(() => undefined);
      }),
      v.panel.onDidDispose(() => clearInterval(timer)),
    );
    void poll();
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
