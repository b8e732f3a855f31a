// Small UI helpers shared by features: error display that names the cause and the fix.
import * as vscode from 'vscode';
import { StudioError } from '../../protocol/errors';

export function errorText(e: unknown): string {
  if (e instanceof StudioError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

export function showError(e: unknown, prefix = 'eBPF Studio'): void {
  const msg = `${prefix}: ${errorText(e)}`;
  if (e instanceof StudioError && e.kind === 'privilege') {
    void vscode.window.showErrorMessage(msg, 'Open Settings').then((c) => {
      if (c) void vscode.commands.executeCommand('workbench.action.openSettings', 'ebpfStudio.helper');
    });
  } else {
    void vscode.window.showErrorMessage(msg);
  }
}
