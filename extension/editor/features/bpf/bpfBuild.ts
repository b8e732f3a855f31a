// The "ebpf: build" task (task type "ebpf", problem matcher $ebpf-clang) and command
// ebpfStudio.buildBpf: compiles the current .bpf.c with clang -target bpf, the arch define, the
// multiarch include folder and a vmlinux.h generated for the running kernel into the extension's
// global storage; optionally generates a libbpf skeleton. Each build records its exact clang
// command in the project's compile_commands.json (the folder that already has one, else the
// workspace folder) so clangd sees the BPF flags. Build errors go to Problems only when the
// clangd extension is absent (clangd reports the same ones live), and never twice: one already
// listed by a task's problem matcher is not added again. Without clangd, saving a .bpf.c runs a
// debounced background build into a scratch object, so errors show without a manual build.
// Also exports buildSource() for Load and Verify and Run. Context keys: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { defaultOutput } from '../../../authoring/buildCommand';
import { entryFor, updateCompileCommands } from '../../../authoring/compileCommands';
import { compileBpf, ensureVmlinux, generateSkeleton, type CompileResult } from '../../../authoring/toolchain';
import { compileCommandsDir } from '../../../authoring/compileCommands';
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
export function recordCompileCommand(r: CompileResult, source: string): { file?: string; warning?: string; skipped?: string } {
  const workspaceRoot = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(source))?.uri.fsPath ?? path.dirname(source);
  const target = compileCommandsDir(source, workspaceRoot);
  // A project's own database (New BPF Project writes one) describes what its Makefile runs; our
  // build uses the editor's vmlinux.h, so it does not replace that entry.
  if (target.projectEntry) return { skipped: `${target.dir}/compile_commands.json already describes ${path.basename(source)} (the project's Makefile)` };
  const root = target.dir;
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
  showBuildDiagnostics(r);
  return r;
}

export function clangdServes(): boolean {
  return !!vscode.extensions?.getExtension(CLANGD_EXTENSION);
}

/** clang's findings in Problems, once each: not when clangd serves them, not when a task's matcher already lists one. */
function showBuildDiagnostics(r: CompileResult): void {
  buildDiagnostics?.clear();
  // clangd shows these same errors live from compile_commands.json; do not list them twice.
  if (clangdServes()) return;
  const byFile = new Map<string, vscode.Diagnostic[]>();
  const seen = new Set<string>();
  for (const d of r.diagnostics) {
    if (d.severity === 'note') continue;
    const key = `${d.file}:${d.line}:${d.column}:${d.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const uri = vscode.Uri.file(d.file);
    const listed = vscode.languages.getDiagnostics(uri).some((x) => x.range.start.line === d.line - 1 && x.message === d.message);
    if (listed) continue;
    const pos = new vscode.Position(Math.max(0, d.line - 1), Math.max(0, d.column - 1));
    const diag = new vscode.Diagnostic(new vscode.Range(pos, pos), d.message, d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning);
    diag.source = 'clang';
    byFile.set(d.file, [...(byFile.get(d.file) ?? []), diag]);
  }
  for (const [file, diags] of byFile) buildDiagnostics?.set(vscode.Uri.file(file), diags);
}

const SAVE_DEBOUNCE_MS = 400;
const pendingChecks = new Map<string, NodeJS.Timeout>();

/** Without clangd: compile a saved .bpf.c into a scratch object (the project's own files stay untouched) and list clang's findings. */
function checkOnSave(doc: vscode.TextDocument): void {
  if (!isBpfSource(doc.uri) || clangdServes() || !storageDir) return;
  if (!vscode.workspace.getConfiguration('ebpfStudio.bpf').get<boolean>('buildOnSave', true)) return;
  const source = doc.uri.fsPath;
  clearTimeout(pendingChecks.get(source));
  pendingChecks.set(
    source,
    setTimeout(() => {
      pendingChecks.delete(source);
      const scratch = path.join(storageDir, 'check', `${Buffer.from(source).toString('base64url').slice(-60)}.o`);
      void (async () => {
        try {
          showBuildDiagnostics(await compileBpf(source, scratch, await vmlinuxFolder(), { includeDirs: configuredIncludes(source) }));
        } catch {
          /* no clang or no BTF: the explicit build says why */
        }
      })();
    }, SAVE_DEBOUNCE_MS),
  );
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
            say(rec.file ? `clangd: ${rec.file} updated\n` : rec.skipped ? `clangd: ${rec.skipped}\n` : `warning: ${rec.warning}\n`);
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
  // The build's command and clang's output are shown: a silent build hides why it failed.
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
  return task;
}

export function activate(context: vscode.ExtensionContext): void {
  storageDir = context.globalStorageUri.fsPath;
  buildDiagnostics = vscode.languages.createDiagnosticCollection('ebpf-build');
  context.subscriptions.push(
    buildDiagnostics,
    vscode.workspace.onDidSaveTextDocument(checkOnSave),
    // A build task reports clang's findings through its problem matcher: ours would list them twice.
    vscode.tasks.onDidStartTask((e) => {
      const t = e.execution.task;
      const exec = t.execution;
      const command = exec instanceof vscode.ShellExecution ? (exec.commandLine ?? (typeof exec.command === 'string' ? exec.command : exec.command?.value) ?? '') : '';
      const make = /^\s*make\b/.test(command);
      if (t.definition.type === 'ebpf' || t.definition.type === 'ebpf-make' || make) buildDiagnostics?.clear();
    }),
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
