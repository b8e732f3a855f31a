// "Measure latency": a CodeLens on each C, C++, Rust and Go function definition of the workspace
// (and the palette command, at the cursor's function) asks for the running process, measures the
// function there (the latency tracer, by FILE:LINE through the program's DWARF line tables; a Java
// method of a running JVM by its package.Class.method, through JFR or eBPF Studio's agent) and,
// while the session runs, the lens reads "p50 0.8 ms · p99 41 ms · 1.2 k calls/s"; the panel shows
// the live histogram, heat map and the slow calls with their stacks. "Profile the slow calls" (a
// second lens, and a button on the panel) measures with the wall-clock profile of only the calls
// slower than the threshold, opened as our flame graph when the session ends. Context keys: none.
import * as vscode from 'vscode';
import type { LatencyOptions, LatencyStats, LatencyUpdate } from '../../protocol/latency';
import type { ProfileResult } from '../../protocol/profile';
import { fromProfileResult } from '../../model/flamegraph/profileData';
import { openPanel as openFlameGraph } from './profile/profile';
import { lensText } from '../../model/latencyFormat';
import { pickProcess } from '../ui/processPicker';
import { startSession, type ClientSession } from '../sessions/liveSessions';
import { createViewPanel, type TypedPanel } from '../ui/webviewPanel';
import { showError } from '../ui/errors';
import type { FromView, ToView } from '../../../webview/latency/protocol';
import { functionLines } from '../../model/functionLines';
import { isBpfAuthoringFile } from '../../authoring/bpfFiles';

const LANGUAGES = ['c', 'cpp', 'rust', 'go', 'java'];
/** A Java method is measured in a JVM by name; the others by FILE:LINE in a native process. */
const isJava = (file: string) => file.endsWith('.java');

interface Measured {
  file: string;
  line: number;
  name: string;
  stats?: LatencyStats;
  ended?: string;
  session?: ClientSession<'latency'>;
  panel?: TypedPanel<ToView, FromView>;
  pid?: number;
  thresholdMs?: number;
  profileSlow?: boolean;
  byCaller?: boolean;
}

const measured = new Map<string, Measured>();
const changed = new vscode.EventEmitter<void>();
const keyOf = (file: string, line: number) => `${file}:${line}`;

function lensTitle(m: Measured | undefined): string {
  if (!m) return '$(dashboard) Measure latency';
  if (m.ended) return `$(dashboard) ${m.stats ? lensText(m.stats) : 'no calls'} (${m.ended})`;
  return `$(pulse) ${m.stats ? lensText(m.stats) : 'measuring…'}${m.profileSlow ? ' · profiling slow calls' : ''}`;
}

function provideLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
  // A .bpf.c program runs in the kernel: no process to measure it in.
  if (!vscode.workspace.getWorkspaceFolder(doc.uri) || isBpfAuthoringFile(doc.fileName, doc.languageId)) return [];
  return functionLines(doc.getText(), doc.languageId).flatMap((f) => {
    const m = measured.get(keyOf(doc.uri.fsPath, f.line));
    const running = m && !m.ended;
    const range = doc.lineAt(f.line - 1).range;
    const args = [{ file: doc.uri.fsPath, line: f.line, name: f.name }];
    const lens = new vscode.CodeLens(range, {
      title: lensTitle(m),
      command: running ? 'ebpfStudio.showLatency' : 'ebpfStudio.measureLatency',
      arguments: args,
      tooltip: running ? `Show the latency of ${f.name}` : `Measure how long ${f.name} takes in a running process`,
    });
    if (running) return [lens];
    const profileLens = new vscode.CodeLens(range, { title: '$(flame) Profile the slow calls', command: 'ebpfStudio.profileSlowCalls', arguments: args, tooltip: `Where the slow calls of ${f.name} spend their time, on and off CPU: a flame graph of only the calls slower than a threshold` });
    return [lens, profileLens];
  });
}

async function onMessage(context: vscode.ExtensionContext, m: FromView, s: Measured): Promise<void> {
  if (m.type === 'stop') await s.session?.stop();
  else if (m.type === 'profileSlow') {
    const thresholdMs = s.thresholdMs || (await askThreshold(true));
    if (!thresholdMs) return;
    s.panel?.panel.dispose();
    await measure(context, { file: s.file, line: s.line, name: s.name, pid: s.pid, thresholdMs, profileSlow: true, byCaller: s.byCaller });
  } else if (m.type === 'byCaller') {
    s.panel?.panel.dispose();
    await measure(context, { file: s.file, line: s.line, name: s.name, pid: s.pid, thresholdMs: s.thresholdMs, profileSlow: s.profileSlow, byCaller: true });
  }
  else if (m.type === 'openFrame') {
    // a Java frame names its source under its package's directory (com/x/Foo.java): found in the workspace
    const file = m.file.startsWith('/') ? m.file : (await vscode.workspace.findFiles(`**/${m.file}`, '**/node_modules/**', 1))[0]?.fsPath;
    if (!file) return void vscode.window.showInformationMessage(`${m.file} is not in the workspace.`);
    const doc = await vscode.workspace.openTextDocument(file);
    const pos = new vscode.Position(Math.max(0, m.line - 1), 0);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.One });
  }
}

function openPanel(context: vscode.ExtensionContext, m: Measured, options: LatencyOptions): TypedPanel<ToView, FromView> {
  const title = `Latency: ${m.name}`;
  const view = createViewPanel<ToView, FromView>(context, 'latency', title);
  // beside the source, so its lens stays in sight
  view.panel.reveal(vscode.ViewColumn.Beside, true);
  view.onReady(() => [{ type: 'init', title: `${m.name} in pid ${options.pid}`, unit: options.unit, thresholdMs: options.thresholdMs, profiling: options.profileSlow, byCaller: options.byCaller }]);
  view.onMessage((msg) => onMessage(context, msg, m));
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
  profileSlow?: boolean;
  byCaller?: boolean;
}

/** The slow-call threshold; `profiling`: the calls to profile, so 0 is refused. */
async function askThreshold(profiling = false): Promise<number | undefined> {
  const prompt = profiling ? 'Only calls at least this many milliseconds long are profiled (on and off CPU)' : 'Calls at least this many milliseconds long are listed with their stacks (0: none)';
  const valid = (s: string) => (!/^\d+(\.\d+)?$/.test(s.trim()) ? 'a number of milliseconds' : profiling && !(Number(s) > 0) ? 'more than 0: the slow calls are the ones profiled' : undefined);
  const v = await vscode.window.showInputBox({ title: `${profiling ? 'Profile the slow calls' : 'Measure latency'}: slow-call threshold`, prompt, value: '10', validateInput: valid });
  return v === undefined ? undefined : Number(v);
}

/** The slow calls' profile as our flame graph (wall clock: on CPU and off it, by state). */
function showSlowProfile(context: vscode.ExtensionContext, m: Measured, result: ProfileResult): void {
  const title = `Slow calls of ${m.name} (≥ ${m.thresholdMs} ms, pid ${m.pid})`;
  const shown = openFlameGraph(context, title);
  const profile = fromProfileResult(result, { name: title, groupByProcess: false });
  shown.profile = profile;
  shown.result = result;
  const none = result.stacks.length ? [] : [`No call of ${m.name} took ${m.thresholdMs} ms or more while it was measured: nothing to profile.`];
  shown.post({ type: 'profile', profile, title, warnings: none });
}

/** Starts measuring; resolves with the session id (tests), undefined when cancelled. */
async function measure(context: vscode.ExtensionContext, t: Target): Promise<string | undefined> {
  let pid = t.pid;
  if (pid === undefined) {
    const picked = await pickProcess({ command: 'Measure latency', title: `Measure latency of ${t.name}: ${isJava(t.file) ? 'JVM' : 'process'}`, ...(isJava(t.file) ? { jvmOnly: true } : {}) });
    if (!picked || !('process' in picked)) return undefined;
    pid = picked.process.pid;
  }
  const thresholdMs = t.thresholdMs ?? (await askThreshold(t.profileSlow));
  if (thresholdMs === undefined || (t.profileSlow && !thresholdMs)) return undefined;
  const options: LatencyOptions = { pid, target: isJava(t.file) ? t.name : `${t.file}:${t.line}`, thresholdMs, per: 'none', unit: 'us', intervalS: 1, ...(t.profileSlow ? { profileSlow: true } : {}), ...(t.byCaller ? { byCaller: true } : {}) };
  const m: Measured = { file: t.file, line: t.line, name: t.name, pid, thresholdMs, profileSlow: t.profileSlow, byCaller: t.byCaller };
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
        if (result?.profile) showSlowProfile(context, m, result.profile);
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
          void vscode.window.showInformationMessage('Put the cursor in a C, C++, Rust or Go function or a Java method, or use the "Measure latency" lens above its definition.');
          return undefined;
        }
        return await measure(context, t);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.profileSlowCalls', async (given?: Target) => {
      try {
        const t = given ?? atCursor();
        if (!t) {
          void vscode.window.showInformationMessage('Put the cursor in a C, C++, Rust or Go function or a Java method, or use the "Profile the slow calls" lens above its definition.');
          return undefined;
        }
        return await measure(context, { ...t, profileSlow: true });
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
