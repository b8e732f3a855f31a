// Command ebpfStudio.newBpfProject ("New BPF Project"): asks for a template (minimal tracepoint
// counter or ring-buffer exec watcher), a parent folder and a name, writes the libbpf-style
// project there (authoring/newProject.ts) and opens its X.bpf.c, or the folder when it is outside
// the workspace. Build both halves with the project's tasks or "Run BPF Loader". VS Code reads
// .vscode/tasks.json only at a workspace folder's root, so the task provider "ebpf-make" offers
// the same make tasks for every project below a root. Context keys: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { createProject, loaderFor } from '../../../authoring/newProject';
import { PROJECT_TASKS, TEMPLATE_INFO, TEMPLATES, type TemplateName } from '../../../authoring/projectTemplates';
import { showError } from '../../ui/errors';
import { vmlinuxFolder } from './bpfBuild';

/** The command's answers, passed as an argument by tests and scripts to skip the prompts. */
export interface NewProjectArgs {
  template: TemplateName;
  dir: string;
}

async function ask(): Promise<NewProjectArgs | undefined> {
  const pick = await vscode.window.showQuickPick(
    TEMPLATES.map((t) => ({ label: t, description: TEMPLATE_INFO[t].summary, template: t })),
    { title: 'New BPF Project: template' },
  );
  if (!pick) return undefined;
  const parent = await vscode.window.showOpenDialog({
    // without a title the dialog shows a bare path: say what the folder is for
    title: `New BPF Project (${pick.template}): the folder to create it in`,
    canSelectFolders: true,
    canSelectFiles: false,
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    openLabel: 'Create the project in this folder',
  });
  if (!parent?.[0]) return undefined;
  const name = await vscode.window.showInputBox({
    title: 'New BPF Project: folder name',
    value: TEMPLATE_INFO[pick.template].app,
    validateInput: (v) => (/^[\w.-]+$/.test(v) ? undefined : 'letters, digits, ".", "-" and "_" only'),
  });
  if (!name) return undefined;
  return { template: pick.template, dir: path.join(parent[0].fsPath, name) };
}

interface MakeTaskDefinition extends vscode.TaskDefinition {
  type: 'ebpf-make';
  dir: string;
  target: string;
}

function makeTask(def: MakeTaskDefinition, app: string, scope: vscode.WorkspaceFolder | vscode.TaskScope): vscode.Task {
  const spec = PROJECT_TASKS.find((t) => t.target === def.target);
  const task = new vscode.Task(def, scope, `${app}: ${spec?.suffix ?? `make ${def.target}`}`, 'ebpf', new vscode.ShellExecution('make', [def.target], { cwd: def.dir }), ['$gcc']);
  task.group = vscode.TaskGroup.Build;
  task.detail = `make ${def.target} in ${def.dir}`;
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always };
  return task;
}

/** Make tasks for every BPF project (X.bpf.c + X.c + Makefile) below a workspace folder's root. */
async function projectTasks(): Promise<vscode.Task[]> {
  const out: vscode.Task[] = [];
  const seen = new Set<string>();
  for (const uri of await vscode.workspace.findFiles('**/*.bpf.c', '**/node_modules/**', 200)) {
    const p = loaderFor(uri.fsPath);
    const folder = vscode.workspace.getWorkspaceFolder(uri);
    if (!p || !folder || seen.has(p.dir) || !fs.existsSync(path.join(p.dir, `${p.app}.c`))) continue;
    seen.add(p.dir);
    // At the root, the project's own .vscode/tasks.json already gives these tasks.
    if (path.resolve(p.dir) === path.resolve(folder.uri.fsPath)) continue;
    for (const t of PROJECT_TASKS) out.push(makeTask({ type: 'ebpf-make', dir: p.dir, target: t.target }, p.app, folder));
  }
  return out;
}

export function activate(_context: vscode.ExtensionContext): void {
  _context.subscriptions.push(
    vscode.tasks.registerTaskProvider('ebpf-make', {
      provideTasks: () => projectTasks(),
      resolveTask(task) {
        const def = task.definition as MakeTaskDefinition;
        if (!def.dir || !def.target) return undefined;
        let app = path.basename(def.dir);
        try {
          app = fs.readdirSync(def.dir).find((f) => f.endsWith('.bpf.c'))?.slice(0, -'.bpf.c'.length) ?? app;
        } catch {
          /* the folder is gone: make says so when the task runs */
        }
        return makeTask(def, app, task.scope ?? vscode.TaskScope.Workspace);
      },
    }),
    vscode.commands.registerCommand('ebpfStudio.newBpfProject', async (given?: NewProjectArgs) => {
      try {
        const args = given && typeof given.dir === 'string' ? given : await ask();
        if (!args) return undefined;
        const p = createProject(args.dir, args.template, await vmlinuxFolder());
        const main = vscode.Uri.file(path.join(p.dir, `${p.app}.bpf.c`));
        if (vscode.workspace.getWorkspaceFolder(main)) {
          await vscode.window.showTextDocument(main);
          void vscode.window.showInformationMessage(`eBPF Studio: created ${p.dir}. Build with the "${p.app}: build both halves" task, run with "eBPF: Run BPF Loader".`);
        } else {
          const open = await vscode.window.showInformationMessage(`eBPF Studio: created ${p.dir}.`, 'Open Folder');
          if (open) await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(p.dir));
        }
        return p;
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
  );
}
