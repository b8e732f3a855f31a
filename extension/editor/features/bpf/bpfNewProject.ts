// Command ebpfStudio.newBpfProject ("New BPF Project"): asks for a template (minimal tracepoint
// counter or ring-buffer exec watcher), a parent folder and a name, writes the libbpf-style
// project there (authoring/newProject.ts) and opens its X.bpf.c, or the folder when it is outside
// the workspace. Build both halves with the project's tasks or "Run BPF Loader". Context keys: none.
import path from 'node:path';
import * as vscode from 'vscode';
import { createProject } from '../../../authoring/newProject';
import { TEMPLATE_INFO, TEMPLATES, type TemplateName } from '../../../authoring/projectTemplates';
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

export function activate(_context: vscode.ExtensionContext): void {
  _context.subscriptions.push(
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
