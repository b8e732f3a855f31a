// The BPF language client: starts dist/server.js for *.bpf.c / *.bpf.h (language "c", so
// clangd or cpptools keep serving C) and bpftrace files. The server adds only BPF-specific
// completion, hover and SEC() diagnostics. Setting: ebpfStudio.bpf.languageServer. Commands: none.
// The extension activates early only for workspaces holding *.bpf.c / *.bt and for bpftrace
// documents (package.json); the server process itself starts when the first such file is open.
// It also looks for clangd (binary and extension): where one is missing a status bar item says
// what C features are missing and how to get them (sudo apt-get install clangd).
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { startWhenBpfFileOpens } from '../../../authoring/bpfFiles';
import { findTool } from '../../../authoring/toolchain';
import { clangdServes } from './bpfBuild';
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
    adviseClangd(context);
    client = new LanguageClient('ebpfStudio.bpf', 'eBPF Studio: BPF language server', serverOptions, clientOptions);
    void client.start();
  };
  const waiting = startWhenBpfFileOpens(vscode.workspace, start);
  if (waiting) context.subscriptions.push(waiting);
  context.subscriptions.push({ dispose: () => void client?.stop() });
}

/** What is missing for C diagnostics, completion and go-to-definition, with the fix; undefined when clangd serves. */
export function clangdAdvice(binary: string | undefined, extension: boolean): string | undefined {
  if (binary && extension) return undefined;
  const ext = 'the clangd extension (llvm-vs-code-extensions.vscode-clangd)';
  if (!binary) return `clangd is not installed: C errors show only after a build (eBPF Studio builds on save). Install it with "sudo apt-get install clangd"${extension ? '' : ` and add ${ext}`}; it reads the compile_commands.json eBPF Studio writes.`;
  return `clangd is installed (${binary}) but ${ext} is not: add it for live C errors, completion and go-to-definition; eBPF Studio builds on save until then.`;
}

function adviseClangd(context: vscode.ExtensionContext): void {
  const advice = clangdAdvice(findTool('clangd'), clangdServes());
  if (!advice) return;
  const item = vscode.window.createStatusBarItem('ebpfStudio.clangd', vscode.StatusBarAlignment.Right, 10);
  item.name = 'eBPF Studio: clangd';
  item.text = '$(info) clangd';
  item.tooltip = advice;
  item.command = { title: 'clangd', command: 'ebpfStudio.clangdAdvice' };
  item.show();
  context.subscriptions.push(item, vscode.commands.registerCommand('ebpfStudio.clangdAdvice', () => void vscode.window.showInformationMessage(`eBPF Studio: ${advice}`)));
}

/** True once a BPF or bpftrace document has started the language server (tests read it). */
export function languageServerStarted(): boolean {
  return client !== undefined;
}
