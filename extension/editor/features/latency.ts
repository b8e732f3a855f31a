// "Measure latency": a CodeLens on each C, C++, Rust and Go function definition of the workspace
// (and the palette command, at the cursor's function) asks for the running process, measures the
// function there (the latency tracer, by FILE:LINE through the program's DWARF line tables) and,
// while the session runs, the lens reads "p50 0.8 ms · p99 41 ms · 1.2 k calls/s"; the panel shows
// the live histogram, heat map and the slow calls with their stacks. Context keys: none.
import * as vscode from 'vscode';
import type { LatencyOptions, LatencyStats, LatencyUpdate } from '../../protocol/latency';
import { lensText } from '../../model/latencyFormat';
import { pickProcess } from '../ui/processPicker';
import { startSession, type ClientSession } from '../sessions/liveSessions';
import { createViewPanel, type TypedPanel } from '../ui/webviewPanel';
import { showError } from '../ui/errors';
import type { FromView, ToView } from '../../../webview/latency/protocol';
import { functionLines } from '../../model/functionLines';
import { isBpfAuthoringFile } from '../../authoring/bpfFiles';

const LANGUAGES = ['c', 'cpp', 'rust', 'go'];

interface Measured {
  file: string;
  line: number;
  name: string;
  stats?: LatencyStats;
  ended?: string;
  session?: ClientSession<'latency'>;
  panel?: TypedPanel<ToView, FromView>;
}

const measured = new Map<string, Measured>();
const changed = new vscode.EventEmitter<void>();
const keyOf = (file: string, line: number) => `${file}:${line}`;

function lensTitle(m: Measured | undefined): string {
  if (!m) return '$(dashboard) Measure latency';
  if (m.ended) return `$(dashboard) ${m.stats ? lensText(m.stats) : 'no calls'} (${m.ended})`;
  return `$(pulse) ${m.stats ? lensText(m.stats) : 'measuring…'}`;
}

function provideLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
  // A .bpf.c program runs in the kernel: no process to measure it in.
  if (!vscode.workspace.getWorkspaceFolder(doc.uri) || isBpfAuthoringFile(doc.fileName, doc.languageId)) return [];
  return functionLines(doc.getText(), doc.languageId).map((f) => {
    const m = measured.get(keyOf(doc.uri.fsPath, f.line));
    const running = m && !m.ended;
    return new vscode.CodeLens(doc.lineAt(f.line - 1).range, {
      title: lensTitle(m),
      command: running ? 'ebpfStudio.showLatency' : 'ebpfStudio.measureLatency',
      arguments: [{ file: doc.uri.fsPath, line: f.line, name: f.name }],
      tooltip: running ? `Show the latency of ${f.name}` : `Measure how long ${f.name} takes in a running process`,
    });
  });
}

async function onMessage(m: FromView, s: Measured): Promise<void> {
  if (m.type === 'stop') await s.session?.stop();
  else if (m.type === 'openFrame') {
    const doc = await vscode.workspace.openTextDocument(m.file);
    const pos = new vscode.Position(Math.max(0, m.line - 1), 0);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.One });
  }
}

function openPanel(context: vscode.ExtensionContext, m: Measured, options: LatencyOptions): TypedPanel<ToView, FromView> {
  const title = `Latency: ${m.name}`;
  const view = createViewPanel<ToView, FromView>(context, 'latency', title);
  // beside the source, so its lens stays in sight
  view.panel.reveal(vscode.ViewColumn.Beside, true);
  view.onReady(() => [{ type: 'init', title: `${m.name} in pid ${options.pid}`, unit: options.unit, thresholdMs: options.thresholdMs }]);
  view.onMessage((msg) => onMessage(msg, m));
  view.panel.onDidDispose(() => {
    m.panel = undefined;
    void m.session?.stop();
  });
  return view;
}

interface Target {
  file: string;
  line: number;
  name: string;
  /** tests: skip the pickers */
  pid?: number;
  thresholdMs?: number;
}

async function askThreshold(): Promise<number | undefined> {
  const v = await vscode.window.showInputBox({ title: 'Measure latency: slow-call threshold', prompt: 'Calls at least this many milliseconds long are listed with their stacks (0: none)', value: '10', validateInput: (s) => (/^\d+(\.\d+)?$/.test(s.trim()) ? undefined : 'a number of milliseconds') });
  return v === undefined ? undefined : Number(v);
}

/** Starts measuring; resolves with the session id (tests), undefined when cancelled. */
async function measure(context: vscode.ExtensionContext, t: Target): Promise<string | undefined> {
  let pid = t.pid;
  if (pid === undefined) {
    const picked = await pickProcess({ command: 'Measure latency', title: `Measure latency of ${t.name}: process` });
    if (!picked || !('process' in picked)) return undefined;
    pid = picked.process.pid;
  }
  const thresholdMs = t.thresholdMs ?? (await askThreshold());
  if (thresholdMs === undefined) return undefined;
  const options: LatencyOptions = { pid, target: `${t.file}:${t.line}`, thresholdMs, per: 'none', unit: 'us', intervalS: 1 };
  const m: Measured = { file: t.file, line: t.line, name: t.name };
  const key = keyOf(t.file, t.line);
  await measured.get(key)?.session?.stop();
  measured.set(key, m);
  changed.fire();
  m.panel = openPanel(context, m, options);
  const post = (msg: ToView) => m.panel?.post(msg);
  try {
    m.session = await startSession('latency', options, `Latency of ${t.name} (pid ${pid})`, {
      onUpdate: (u: LatencyUpdate) => {
        m.stats = u.stats;
        post({ type: 'update', update: u });
        changed.fire();
      },
      onEnded: (reason, result, message) => {
        if (result) m.stats = result.stats;
        m.ended = reason === 'target-exited' ? 'process exited' : reason === 'error' ? 'failed' : 'stopped';
        post({ type: 'ended', reason, message });
        changed.fire();
      },
    });
  } catch (e) {
    measured.delete(key);
    m.panel?.panel.dispose();
    changed.fire();
    throw e;
  }
  for (const w of m.session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  return m.session.id;
}

/** The function at the active editor's cursor: the nearest definition at or above it. */
function atCursor(): Target | undefined {
  const ed = vscode.window.activeTextEditor;
  if (!ed || !LANGUAGES.includes(ed.document.languageId)) return undefined;
  const here = ed.selection.active.line + 1;
  const defs = functionLines(ed.document.getText(), ed.document.languageId).filter((f) => f.line <= here);
  const f = defs[defs.length - 1];
  return f ? { file: ed.document.uri.fsPath, line: f.line, name: f.name } : undefined;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    changed,
    vscode.languages.registerCodeLensProvider(LANGUAGES.map((language) => ({ language, scheme: 'file' })), { onDidChangeCodeLenses: changed.event, provideCodeLenses: provideLenses }),
    vscode.commands.registerCommand('ebpfStudio.measureLatency', async (given?: Target) => {
      try {
        const t = given ?? atCursor();
        if (!t) {
          void vscode.window.showInformationMessage('Put the cursor in a C, C++, Rust or Go function, or use the "Measure latency" lens above its definition.');
          return undefined;
        }
        return await measure(context, t);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.showLatency', (t: Target) => measured.get(keyOf(t.file, t.line))?.panel?.panel.reveal()),
    // tests read the lens titles
    vscode.commands.registerCommand('ebpfStudio.latencyLensTitle', (file: string, line: number) => lensTitle(measured.get(keyOf(file, line)))),
  );
}
