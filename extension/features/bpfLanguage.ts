// The BPF language client: starts dist/server.js for *.bpf.c / *.bpf.h (language "c", so
// clangd or cpptools keep serving C) and bpftrace files. The server adds only BPF-specific
// completion, hover and SEC() diagnostics. Setting: ebpfStudio.bpf.languageServer. Commands: none.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
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
  client = new LanguageClient('ebpfStudio.bpf', 'eBPF Studio: BPF language server', serverOptions, clientOptions);
  void client.start();
  context.subscriptions.push({ dispose: () => void client?.stop() });
}
