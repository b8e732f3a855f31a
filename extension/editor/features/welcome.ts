// Opens our walkthrough (package.json walkthroughs: ebpfStudio.getStarted) on the extension's
// first activation, once: remembered in globalState, so neither a reload nor a second window
// opens it again. The extension activates for BPF work, its view and its commands only (no
// startup activation), so the first activation may be a command whose process picker is about to
// open: the walkthrough opens without taking focus (inactive; shown at once in an empty editor
// area, and it replaces the page of a walkthrough already showing, such as VS Code's own). VS Code's own setting workbench.welcomePage.walkthroughs.openOnInstall = false
// (the user's "no walkthroughs on install") is respected. The walkthrough stays reachable from
// Help › Welcome and the command "eBPF: Get Started".
import * as vscode from 'vscode';

export const SHOWN_KEY = 'ebpfStudio.walkthroughShown';
export const WALKTHROUGH = 'ebpfStudio.getStarted';

/** True when it opened the walkthrough now. */
export async function openWalkthroughOnce(context: Pick<vscode.ExtensionContext, 'globalState' | 'extension'>): Promise<boolean> {
  if (context.globalState.get<boolean>(SHOWN_KEY)) return false;
  await context.globalState.update(SHOWN_KEY, true);
  if (!vscode.workspace.getConfiguration('workbench').get<boolean>('welcomePage.walkthroughs.openOnInstall', true)) return false;
  await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, { toSide: false, inactive: true });
  return true;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(vscode.commands.registerCommand('ebpfStudio.getStarted', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, false)));
  // after the workbench has restored its editors, so ours opens on top of them
  void openWalkthroughOnce(context).catch(() => undefined);
}
