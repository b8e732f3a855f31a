// Opens our walkthrough (package.json walkthroughs: ebpfStudio.getStarted) on the extension's
// first activation, once: remembered in globalState, so neither a reload nor a second window
// opens it again. Off with ebpfStudio.openWalkthroughOnFirstRun = false, or with VS Code's own
// workbench.welcomePage.walkthroughs.openOnInstall = false where the extension host can read it
// (code-server does not pass that one on). The extension activates for BPF work, its view and its
// commands only (no startup activation), so the first activation may be a command whose picker is
// about to open: extension.ts awaits the walkthrough before VS Code runs that command, so the
// picker opens on top of it and keeps the focus. Command: ebpfStudio.getStarted (opens it again).
import * as vscode from 'vscode';

export const SHOWN_KEY = 'ebpfStudio.walkthroughShown';
export const WALKTHROUGH = 'ebpfStudio.getStarted';

/** True when it opened the walkthrough now. */
export async function openWalkthroughOnce(context: Pick<vscode.ExtensionContext, 'globalState' | 'extension'>): Promise<boolean> {
  if (context.globalState.get<boolean>(SHOWN_KEY)) return false;
  await context.globalState.update(SHOWN_KEY, true);
  const ours = vscode.workspace.getConfiguration('ebpfStudio').get<boolean>('openWalkthroughOnFirstRun', true);
  const vscodes = vscode.workspace.getConfiguration('workbench').get<boolean>('welcomePage.walkthroughs.openOnInstall', true);
  if (!ours || !vscodes) return false;
  await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, false);
  return true;
}

/** openWalkthroughOnce for activate(): never fails, never holds activation up for more than 3 s. */
export function firstRunWalkthrough(context: Pick<vscode.ExtensionContext, 'globalState' | 'extension'>): Promise<unknown> {
  return Promise.race([openWalkthroughOnce(context).catch(() => false), new Promise((r) => setTimeout(r, 3000))]);
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(vscode.commands.registerCommand('ebpfStudio.getStarted', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, false)));
}
