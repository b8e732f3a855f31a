// Entry point: creates the helper client and wires the features. Each feature lives in its own
// file under features/ and exports activate(context); the one other thing here is the first-run
// walkthrough, awaited so it opens before the command that activated the extension runs.
import * as vscode from 'vscode';
import { HelperClient, setHelper } from './editor/helperClient/helperClient';
import * as sessions from './editor/sessions/liveSessions';
import * as sessionStore from './editor/sessions/sessionStore';
import { features } from './editor/features';
import { firstRunWalkthrough } from './editor/features/welcome';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('eBPF Studio');
  const client = new HelperClient(context.extensionPath, output);
  setHelper(client);
  context.subscriptions.push(output, client);
  sessions.activate(context);
  sessionStore.activate(context);
  for (const f of features) f.activate(context);
  await firstRunWalkthrough(context);
}

export function deactivate(): void {
  /* subscriptions close the helper (stdin end → it detaches and exits) */
}
