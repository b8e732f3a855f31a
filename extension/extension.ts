// Entry point: creates the helper client and wires the features. Each feature lives in its own
// file under features/ and exports activate(context); nothing else happens here.
import * as vscode from 'vscode';
import { HelperClient, setHelper } from './editor/helperClient/helperClient';
import * as sessions from './editor/sessions/liveSessions';
import * as sessionStore from './editor/sessions/sessionStore';
import { features } from './editor/features';

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('eBPF Studio');
  const client = new HelperClient(context.extensionPath, output);
  setHelper(client);
  context.subscriptions.push(output, client);
  sessions.activate(context);
  sessionStore.activate(context);
  for (const f of features) f.activate(context);
}

export function deactivate(): void {
  /* subscriptions close the helper (stdin end → it detaches and exits) */
}
