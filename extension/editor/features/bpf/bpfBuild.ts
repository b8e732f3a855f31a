// The "ebpf: build" task (task type "ebpf", problem matcher $ebpf-clang) and command
// ebpfStudio.buildBpf: compiles the current .bpf.c with clang -target bpf, the arch define, the
// multiarch include folder and a vmlinux.h generated for the running kernel into the extension's
// global storage; optionally generates a libbpf skeleton. Each build records its exact clang
// command in the workspace folder's compile_commands.json so clangd sees the BPF flags. Build
// errors go to Problems only when the clangd extension is absent (clangd reports the same ones
// live). Also exports buildSource() for Load and Verify and Run. Context keys: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { defaultOutput } from '../../../authoring/buildCommand';
import { entryFor, updateCompileCommands } from '../../../authoring/compileCommands';
import { compileBpf, ensureVmlinux, generateSkeleton, type CompileResult } from '../../../authoring/toolchain';
import { showError } from '../../ui/errors';

export interface EbpfTaskDefinition extends vscode.TaskDefinition {
  type: 'ebpf';
  file: string;
  output?: string;
  skeleton?: boolean;
  includeDirs?: string[];
}

let storageDir = '';
let buildDiagnostics: vscode.DiagnosticCollection | undefined;

export function isBpfSource(uri: vscode.Uri | undefined): uri is vscode.Uri {
  return !!uri && uri.scheme === 'file' && /\.bpf\.c$/.test(uri.fsPath);
}

/** The .bpf.c to act on: the argument (explorer/title menus), else the active editor. */
export function targetSource(arg?: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri && isBpfSource(arg)) return arg;
  const active = vscode.window.activeTextEditor?.document.uri;
  return isBpfSource(active) ? active : undefined;
}

export function vmlinuxFolder(): Promise<string> {
  return ensureVmlinux(storageDir);
}

const CLANGD_EXTENSION = 'llvm-vs-code-extensions.vscode-clangd';

/** Records the build's clang command for clangd; returns a warning to show when that failed. */
export function recordCompileCommand(r: CompileResult, source: string): { file?: string; warning?: string } {
  const root = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(source))?.uri.fsPath ?? path.dirname(source);
  try {
    return { file: updateCompileCommands(root, [entryFor(r.command, source, r.output, root)]) };
  } catch (e) {
    return { warning: `compile_commands.json not updated: ${(e as Error).message}` };
  }
}

function configuredIncludes(source: string): string[] {
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(source))?.uri.fsPath ?? path.dirname(source);
  return vscode.workspace
    .getConfiguration('ebpfStudio.bpf')
    .get<string[]>('includeDirs', [])
    .map((d) => (path.isAbsolute(d) ? d : path.join(folder, d)));
}

/**
 * Saves and compiles a .bpf.c (object next to it unless `output`), showing clang's errors in
 * Problems when it fails. Used by Load and Verify and Run.
 */
export async function buildSource(source: string, output?: string): Promise<CompileResult> {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === source);
  if (doc?.isDirty) await doc.save();
  const out = output ?? defaultOutput(source);
  const r = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Building ${path.basename(source)}` }, async () =>
    compileBpf(source, out, await vmlinuxFolder(), { includeDirs: configuredIncludes(source) }),
  );
  const recorded = recordCompileCommand(r, source);
  if (recorded.warning) void vscode.window.showWarningMessage(`eBPF Studio: ${recorded.warning}`);
  const byFile = new Map<string, vscode.Diagnostic[]>();
  // clangd shows these same errors live from compile_commands.json; do not list them twice.
  const clangdServes = !!vscode.extensions?.getExtension(CLANGD_EXTENSION);
  for (const d of clangdServes ? [] : r.diagnostics) {
    if (d.severity === 'note') continue;
    const pos = new vscode.Position(Math.max(0, d.line - 1), Math.max(0, d.column - 1));
    const diag = new vscode.Diagnostic(new vscode.Range(pos, pos), d.message, d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning);
    diag.source = 'clang';
    byFile.set(d.file, [...(byFile.get(d.file) ?? []), diag]);
  }
  buildDiagnostics?.clear();
  for (const [file, diags] of byFile) buildDiagnostics?.set(vscode.Uri.file(file), diags);
  return r;
}

/** A task that builds `def.file`; the pseudo-terminal prints clang's output for $ebpf-clang. */
export function buildTask(def: EbpfTaskDefinition, scope: vscode.TaskScope | vscode.WorkspaceFolder = vscode.TaskScope.Workspace): vscode.Task {
  const exec = new vscode.CustomExecution(async (resolved) => {
    const d = resolved as EbpfTaskDefinition;
    const write = new vscode.EventEmitter<string>();
    const close = new vscode.EventEmitter<number>();
    const say = (s: string) => write.fire(s.replace(/\r?\n/g, '\r\n'));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      onDidClose: close.event,
      close: () => undefined,
      open: () => {
        void (async () => {
          try {
            const file = d.file;
            if (!file || !fs.existsSync(file)) throw new Error(`no BPF source to build: "${file ?? ''}" does not exist (open a .bpf.c, or set "file" in tasks.json)`);
            say('Generating vmlinux.h for this kernel if needed…\n');
            const vm = await vmlinuxFolder();
            const out = d.output || defaultOutput(file);
            const includes = [...configuredIncludes(file), ...(d.includeDirs ?? [])];
            const r = await compileBpf(file, out, vm, { includeDirs: includes });
            say(`${r.command.join(' ')}\n`);
            const rec = recordCompileCommand(r, file);
            say(rec.file ? `clangd: ${rec.file} updated\n` : `warning: ${rec.warning}\n`);
            if (r.stderr) say(r.stderr);
            if (!r.ok) {
              say(`\nclang failed: ${r.diagnostics.filter((x) => x.severity === 'error').length} error(s)\n`);
              close.fire(1);
              return;
            }
            say(`built ${out}\n`);
            if (d.skeleton) say(`skeleton ${generateSkeleton(out)}\n`);
            close.fire(0);
          } catch (e) {
            say(`error: ${(e as Error).message}\n`);
            close.fire(1);
          }
        })();
      },
    };
    return pty;
  });
  const task = new vscode.Task(def, scope, 'build', 'ebpf', exec, ['$ebpf-clang']);
  task.group = vscode.TaskGroup.Build;
  task.detail = `clang -target bpf ${path.basename(def.file)}`;
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Silent, clear: true };
  return task;
}

export function activate(context: vscode.ExtensionContext): void {
  storageDir = context.globalStorageUri.fsPath;
  buildDiagnostics = vscode.languages.createDiagnosticCollection('ebpf-build');
  context.subscriptions.push(
    buildDiagnostics,
    vscode.tasks.registerTaskProvider('ebpf', {
      provideTasks() {
        const src = targetSource();
        return src ? [buildTask({ type: 'ebpf', file: src.fsPath })] : [buildTask({ type: 'ebpf', file: '${file}' })];
      },
      resolveTask(task) {
        const def = task.definition as EbpfTaskDefinition;
        return def.file ? buildTask(def, task.scope ?? vscode.TaskScope.Workspace) : undefined;
      },
    }),
    vscode.commands.registerCommand('ebpfStudio.buildBpf', async (arg?: unknown) => {
      const src = targetSource(arg);
      if (!src) {
        void vscode.window.showErrorMessage('eBPF Studio: open a .bpf.c file to build it.');
        return undefined;
      }
      try {
        const r = await buildSource(src.fsPath);
        if (r.ok) void vscode.window.setStatusBarMessage(`eBPF: built ${path.basename(r.output)}`, 5000);
        else void vscode.window.showErrorMessage(`eBPF Studio: ${path.basename(src.fsPath)} does not compile; see Problems.`);
        return r;
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
  );
}
