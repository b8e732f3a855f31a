// The BPF language client: starts dist/server.js for *.bpf.c / *.bpf.h (language "c", so
// clangd or cpptools keep serving C) and bpftrace files. The server adds only BPF-specific
// completion, hover and SEC() diagnostics. Setting: ebpfStudio.bpf.languageServer. Commands: none.
// The extension activates early only for workspaces holding *.bpf.c / *.bt and for bpftrace
// documents (package.json); the server process itself starts when the first such file is open.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { startWhenBpfFileOpens } from '../../../authoring/bpfFiles';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';

let client: LanguageClient | undefined;

export function activate(context: vscode.ExtensionContext): void {
  if (!vscode.workspace.getConfiguration('ebpfStudio.bpf').get<boolean>('languageServer', true)) return;
  const module = path.join(context.extensionPath, 'dist', 'server.js');
  if (!fs.existsSync(module)) return;
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.ipc },
    debug: { module, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'c', pattern: '**/*.bpf.c' },
      { scheme: 'file', language: 'c', pattern: '**/*.bpf.h' },
      { scheme: 'file', language: 'bpftrace' },
      { scheme: 'untitled', language: 'bpftrace' },
    ],
    // vmlinux.h is generated into global storage by the build task; the server shares that cache.
    initializationOptions: { cacheDir: context.globalStorageUri.fsPath },
    diagnosticCollectionName: 'ebpf-lsp',
  };
  const start = () => {
    if (client) return;
    client = new LanguageClient('ebpfStudio.bpf', 'eBPF Studio: BPF language server', serverOptions, clientOptions);
    void client.start();
  };
  const waiting = startWhenBpfFileOpens(vscode.workspace, start);
  if (waiting) context.subscriptions.push(waiting);
  context.subscriptions.push({ dispose: () => void client?.stop() });
}

/** True once a BPF or bpftrace document has started the language server (tests read it). */
export function languageServerStarted(): boolean {
  return client !== undefined;
}
