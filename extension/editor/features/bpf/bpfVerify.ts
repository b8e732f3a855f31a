// Command ebpfStudio.loadAndVerify ("Load and Verify"): builds the current .bpf.c, has the
// helper load it without attaching, and shows verifier rejections on their source lines in
// Problems (collection "ebpf-verifier") with the log excerpt in the message; the full log is one
// click away (the diagnostic's code links to it; command ebpfStudio.showVerifierLog opens it).
// Context keys: none.
import { confirmObject } from '../../helperClient/objectConfirm';
import path from 'node:path';
import os from 'node:os';
import * as vscode from 'vscode';
import { bpfVerify, type VerifyResponse } from '../../../protocol/authoring';
import { defaultOutput } from '../../../authoring/buildCommand';
import { withRunner } from '../../helperClient/helperClient';
import { showError } from '../../ui/errors';
import { buildSource, targetSource } from './bpfBuild';

const SCHEME = 'ebpf-verifier-log';
const logs = new Map<string, string>();
const changed = new vscode.EventEmitter<vscode.Uri>();

function logUri(source: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SCHEME, path: `/${path.basename(source)}.log`, query: source });
}

export function toDiagnostics(r: VerifyResponse, link: vscode.Uri): Map<string, vscode.Diagnostic[]> {
  const out = new Map<string, vscode.Diagnostic[]>();
  for (const d of r.diagnostics) {
    const pos = new vscode.Position(Math.max(0, d.line - 1), Math.max(0, d.column - 1));
    const line = new vscode.Range(pos, pos.translate(0, 0));
    const diag = new vscode.Diagnostic(line, `${d.message}${d.program ? ` (program ${d.program})` : ''}${d.hint ? `\n→ ${d.hint}` : ''}${d.excerpt ? `\n\n${d.excerpt}` : ''}`, vscode.DiagnosticSeverity.Error);
    diag.source = 'BPF verifier';
    diag.code = { value: 'full log', target: link };
    out.set(d.file, [...(out.get(d.file) ?? []), diag]);
  }
  return out;
}

export async function loadAndVerify(source: vscode.Uri, collection: vscode.DiagnosticCollection): Promise<VerifyResponse | undefined> {
  collection.clear();
  const object = defaultOutput(source.fsPath);
  const built = await buildSource(source.fsPath, object);
  if (!built.ok) {
    void vscode.window.showErrorMessage(`eBPF Studio: ${path.basename(source.fsPath)} does not compile, so it was not loaded. See Problems.`);
    return undefined;
  }
  const confirmedSha256 = await confirmObject(object, 'Load and Verify');
  if (!confirmedSha256) return undefined;
  const r = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Loading ${path.basename(object)} into the kernel…` }, () =>
    withRunner((runner) => runner.request(bpfVerify, { objectPath: object, sourcePaths: [source.fsPath], confirmedSha256 })),
  );
  const link = logUri(source.fsPath);
  logs.set(link.toString(), r.log || '(the kernel returned no log)');
  changed.fire(link);
  for (const [file, diags] of toDiagnostics(r, link)) collection.set(path.isAbsolute(file) ? vscode.Uri.file(file) : source, diags);
  if (r.ok) {
    const stats = (r.stats ?? []).map((s) => `${s.program ?? 'program'}: ${s.insns} instructions${s.timeUs !== undefined ? `, ${s.timeUs} µs` : ''}`).join('; ');
    void vscode.window.showInformationMessage(`eBPF Studio: the verifier accepted ${path.basename(source.fsPath)}${stats ? ` (${stats})` : ''}.`);
  }
  else {
    const first = r.diagnostics[0];
    const pick = await vscode.window.showErrorMessage(
      `eBPF Studio: the verifier rejected ${path.basename(source.fsPath)}${first ? ` at line ${first.line}: ${first.message.split('\n')[0]}` : ''}`,
      'Show Full Log',
    );
    if (pick) await vscode.window.showTextDocument(link, { preview: true, viewColumn: vscode.ViewColumn.Beside });
  }
  return r;
}

export function activate(context: vscode.ExtensionContext): void {
  const collection = vscode.languages.createDiagnosticCollection('ebpf-verifier');
  context.subscriptions.push(
    collection,
    changed,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, {
      onDidChange: changed.event,
      provideTextDocumentContent: (uri) => logs.get(uri.toString()) ?? 'No verifier log yet: run "eBPF: Load and Verify".',
    }),
    // A fresh edit makes old verifier findings stale.
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.contentChanges.length && collection.has(e.document.uri)) collection.delete(e.document.uri);
    }),
    vscode.commands.registerCommand('ebpfStudio.loadAndVerify', async (arg?: unknown) => {
      const src = targetSource(arg);
      if (!src) {
        void vscode.window.showErrorMessage('eBPF Studio: open a .bpf.c file to load and verify it.');
        return undefined;
      }
      try {
        return await loadAndVerify(src, collection);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.showVerifierLog', async () => {
      const src = targetSource();
      const uri = src ? logUri(src.fsPath) : [...logs.keys()].map((k) => vscode.Uri.parse(k))[0];
      if (!uri) {
        void vscode.window.showInformationMessage(`eBPF Studio: no verifier log yet${os.EOL}run "eBPF: Load and Verify" first.`);
        return;
      }
      await vscode.window.showTextDocument(uri, { preview: true });
    }),
  );
}
