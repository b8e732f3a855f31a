// Commands: ebpfStudio.findMemoryLeaks ("Find Memory Leaks": pick a running process),
// ebpfStudio.runWithLeakTracing ("Run with Leak Tracing": a typed command line or a launch
// configuration, started under tracing), ebpfStudio.clearLeaks, ebpfStudio.showLeakSite (what a
// leak CodeLens runs: opens the leak view focused on that site). Context keys:
// ebpfStudio.leaksShown (lenses are on screen). CodeLenses, a gutter icon and an overview-ruler
// mark sit on each leak site (see leakLenses.ts); they follow live updates and stay after Stop
// as a snapshot until Clear.
import fs from 'node:fs';
import * as vscode from 'vscode';
import { saveExport } from '../../ui/exportFile';
import * as proto from '../../../protocol/protocol';
import { MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES, MEMLEAK_DEFAULT_MAX_OUTSTANDING, type MemleakMode, type MemleakLaunch, type MemleakOptions, type MemleakResult, type MemleakStack, type MemleakUpdate } from '../../../protocol/memleak';
import { toFolded } from '../../../model/memleakFormat';
import { helper } from '../../helperClient/helperClient';
import { startSession, type ClientSession } from '../../sessions/liveSessions';
import { newSessionKey, recordSession } from '../../sessions/sessionStore';
import { makeSession } from '../../../model/sessionFile';
import { createViewPanel, type TypedPanel } from '../../ui/webviewPanel';
import { errorText, showError } from '../../ui/errors';
import { leakSites, placeLenses, type LeakLens } from '../../../model/leakSites';
import { CommandLineError, fromLaunchConfig, splitCommandLine, type LaunchConfigLike } from './leakLaunch';
import type { FromView, LeakViewStack, ToView } from '../../../../webview/memleak/protocol';

const HISTORY = 60;

interface State {
  title: string;
  running: boolean;
  stacks: MemleakStack[];
  totalBytes: number;
  totalAllocations: number;
  dropped: number;
  stackHistory: Map<string, number[]>;
  siteHistory: Map<string, { atMs: number; bytes: number }[]>;
  lenses: LeakLens[];
  result?: MemleakResult;
  /** the key the Sessions view and the panel serializer know this session by */
  key: string;
  startedAt: Date;
  /** sampled session: figures are estimates */
  sampleBytes?: number;
}

let state: State | undefined;
let session: ClientSession<'memleak'> | undefined;
let view: TypedPanel<ToView, FromView> | undefined;
let viewReady = false;
const lensesChanged = new vscode.EventEmitter<void>();
let decoration: vscode.TextEditorDecorationType | undefined;
let output: vscode.OutputChannel | undefined;

const stackKey = (s: MemleakStack) => s.frames.map((f) => f.address).join(',') || `empty:${s.bytes}`;
const roots = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);

function push<T>(map: Map<string, T[]>, key: string, v: T): void {
  const list = map.get(key) ?? [];
  list.push(v);
  if (list.length > HISTORY) list.shift();
  map.set(key, list);
}

function absorb(stacks: MemleakStack[], atMs: number, totals?: { bytes: number; allocations: number; dropped: number }): void {
  if (!state) return;
  state.stacks = stacks;
  state.totalBytes = totals?.bytes ?? stacks.reduce((s, x) => s + x.bytes, 0);
  state.totalAllocations = totals?.allocations ?? stacks.reduce((s, x) => s + x.allocations, 0);
  state.dropped = totals?.dropped ?? state.dropped;
  for (const s of stacks) push(state.stackHistory, stackKey(s), s.bytes);
  for (const site of leakSites(stacks, roots())) push(state.siteHistory, site.key, { atMs, bytes: site.bytes });
  state.lenses = placeLenses(stacks, roots(), state.siteHistory);
  refresh();
}

function viewStacks(): LeakViewStack[] {
  if (!state) return [];
  const sites = leakSites(state.stacks, roots());
  const siteOfStack = new Map<number, string>();
  for (const s of sites) for (const i of s.stacks) siteOfStack.set(i, s.key);
  return state.stacks.map((s, i) => ({ ...s, key: stackKey(s), history: state!.stackHistory.get(stackKey(s)) ?? [s.bytes], site: siteOfStack.get(i) }));
}

function postSnapshot(): void {
  if (!view || !viewReady || !state) return;
  view.post({ type: 'snapshot', title: state.title, running: state.running, totalBytes: state.totalBytes, totalAllocations: state.totalAllocations, dropped: state.dropped, stacks: viewStacks(), sampleBytes: state.sampleBytes, sessionKey: state.key });
}

function refresh(): void {
  lensesChanged.fire();
  decorate();
  postSnapshot();
  void vscode.commands.executeCommand('setContext', 'ebpfStudio.leaksShown', Boolean(state?.lenses.length));
}

function decorate(): void {
  if (!decoration) return;
  for (const editor of vscode.window.visibleTextEditors) {
    const file = editor.document.uri.fsPath;
    const ranges = (state?.lenses ?? [])
      .filter((l) => l.file === file && l.line <= editor.document.lineCount)
      .map((l) => ({ range: editor.document.lineAt(l.line - 1).range, hoverMessage: l.text }));
    editor.setDecorations(decoration, ranges);
  }
}

function openView(context: vscode.ExtensionContext, focusSite?: string): void {
  if (!view) {
    viewReady = false;
    view = createViewPanel<ToView, FromView>(context, 'memleak', 'Memory Leaks', undefined, state?.key);
    view.panel.onDidDispose(() => {
      view = undefined;
      viewReady = false;
    });
    let pendingFocus = focusSite;
    view.onReady(() => {
      viewReady = true;
      if (pendingFocus) view?.post({ type: 'focus', site: pendingFocus });
      pendingFocus = undefined;
      postSnapshot();
    });
    view.onMessage(async (m) => {
      if (m.type === 'openFrame') {
        await openLocation(m.file, m.line, m.column);
      } else if (m.type === 'export') {
        await exportLeaks(m.format);
      }
    });
    return;
  }
  view.panel.reveal();
  if (focusSite && viewReady) view.post({ type: 'focus', site: focusSite });
  postSnapshot();
}

async function openLocation(file: string, line: number, column?: number): Promise<void> {
  if (!fs.existsSync(file)) {
    void vscode.window.showWarningMessage(`eBPF Studio: ${file} is not on this machine (the binary was built elsewhere).`);
    return;
  }
  const doc = await vscode.workspace.openTextDocument(file);
  const pos = new vscode.Position(Math.max(0, line - 1), Math.max(0, (column ?? 1) - 1));
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.One });
}

function currentDocument(): MemleakResult | undefined {
  if (!state) return undefined;
  return state.result ?? { tracer: 'memleak', pid: 0, stacks: state.stacks, dropped: state.dropped, lost: 0 };
}

async function exportLeaks(format: 'json' | 'folded'): Promise<void> {
  const doc = currentDocument();
  if (!doc) return;
  const outcome = await saveExport({
    title: format === 'json' ? 'Export leaks as JSON' : 'Export folded stacks (flamegraph.pl input, weighted by bytes)',
    baseName: `memleak-${doc.pid}`,
    extension: format,
    filters: format === 'json' ? { JSON: ['json'] } : { 'Folded stacks': ['folded', 'txt'] },
    content: () => (format === 'json' ? JSON.stringify(doc, null, 2) : toFolded(doc) + '\n'),
  });
  if (outcome?.error) void vscode.window.showErrorMessage(`eBPF Studio: export failed: ${outcome.error}`);
}

async function trace(context: vscode.ExtensionContext, options: MemleakOptions, title: string): Promise<ClientSession<'memleak'> | undefined> {
  if (session) await session.stop();
  const fresh: State = { title, running: true, stacks: [], totalBytes: 0, totalAllocations: 0, dropped: 0, stackHistory: new Map(), siteHistory: new Map(), lenses: [], sampleBytes: options.sampleBytes || undefined, key: newSessionKey(), startedAt: new Date() };
  state = fresh;
  const s = await startSession('memleak', options, title, {
    onUpdate: (u: MemleakUpdate) => {
      if (u.output) {
        output ??= vscode.window.createOutputChannel('eBPF Studio: Leak Tracing');
        output.append(u.output);
      }
      if (state === fresh) absorb(u.stacks, u.atMs, { bytes: u.totalBytes, allocations: u.totalAllocations, dropped: u.dropped });
    },
    onEnded: (reason, result, message) => {
      if (session === s) session = undefined;
      if (state !== fresh) return;
      fresh.running = false;
      if (result) {
        fresh.result = result;
        absorb(result.stacks, Date.now(), { bytes: result.stacks.reduce((a, x) => a + x.bytes, 0), allocations: result.stacks.reduce((a, x) => a + x.allocations, 0), dropped: result.dropped });
      } else refresh();
      if (state === fresh) {
        void recordSession(
          makeSession('memleak', fresh.title, { totalBytes: fresh.totalBytes, totalAllocations: fresh.totalAllocations, dropped: fresh.dropped, stacks: viewStacks(), sampleBytes: fresh.sampleBytes }, fresh.startedAt, new Date()),
          fresh.key,
        );
      }
      const n = fresh.lenses.length;
      const why = reason === 'error' ? `ended: ${message ?? 'error'}` : reason === 'target-exited' ? (message ?? 'the program exited') : 'stopped';
      const how = result?.mode === 'preload' ? ' (preload mode)' : result?.mode === 'uprobe' ? ' (uprobes)' : '';
      void vscode.window.showInformationMessage(`eBPF Studio: leak tracing${how} ${why}. ${n ? `${n} leak site${n === 1 ? '' : 's'} in the workspace (CodeLenses on the lines).` : 'No leak sites in workspace files.'}`, 'Show Leaks').then((c) => {
        if (c) openView(context);
      });
    },
  });
  session = s;
  for (const w of s.info.warnings) output?.appendLine(`warning: ${w}`);
  if (s.info.warnings.length) void vscode.window.showWarningMessage(`eBPF Studio: ${s.info.warnings.join(' ')}`);
  openView(context);
  return s;
}

async function pickProcess(): Promise<number | undefined> {
  const procs = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Listing processes…' }, () => helper().request(proto.listProcesses, {}));
  const items = procs
    .filter((p) => !p.kernelThread && p.pid !== process.pid)
    .map((p) => ({ label: `${p.pid}  ${p.comm}`, description: p.user, detail: p.cmdline.join(' ').slice(0, 200), pid: p.pid }));
  const pick = await vscode.window.showQuickPick(items, { title: 'Find Memory Leaks', placeHolder: 'Pick a process to trace its allocations', matchOnDescription: true, matchOnDetail: true });
  return pick?.pid;
}

/** The extension's environment minus what belongs to the editor itself. */
function userEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(VSCODE_|ELECTRON_)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

async function pickLaunch(): Promise<{ launch: MemleakLaunch; title: string } | undefined> {
  type Item = vscode.QuickPickItem & { cfg?: LaunchConfigLike; folder?: vscode.WorkspaceFolder; type?: 'typed' };
  const items: Item[] = [{ label: '$(terminal) Type a command line…', type: 'typed' }];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const cfgs = vscode.workspace.getConfiguration('launch', folder.uri).get<LaunchConfigLike[]>('configurations') ?? [];
    for (const cfg of cfgs) if (typeof cfg.program === 'string') items.push({ label: `$(debug-alt) ${cfg.name ?? cfg.program}`, description: folder.name, detail: String(cfg.program), cfg, folder });
  }
  const pick = await vscode.window.showQuickPick(items, { title: 'Run with Leak Tracing', placeHolder: 'A command line, or a launch configuration (program, args, cwd, env)' });
  if (!pick) return undefined;
  const ids = { uid: process.getuid?.(), gid: process.getgid?.() };
  const folder = pick.folder ?? vscode.workspace.workspaceFolders?.[0];
  if (pick.type === 'typed') {
    const text = await vscode.window.showInputBox({
      title: 'Run with Leak Tracing',
      prompt: 'Command line (no shell: quotes and backslashes work as in sh, pipes and redirections do not)',
      placeHolder: './build/myprog --input data.txt',
      validateInput: (v) => {
        try {
          return splitCommandLine(v).length ? undefined : 'Type a program to run';
        } catch (e) {
          return errorText(e);
        }
      },
    });
    if (!text) return undefined;
    const command = splitCommandLine(text);
    return { title: command[0], launch: { command, cwd: folder?.uri.fsPath, env: userEnv({}), output: 'capture', ...ids } };
  }
  const r = fromLaunchConfig(pick.cfg!, { workspaceFolder: folder?.uri.fsPath, file: vscode.window.activeTextEditor?.document.uri.fsPath, env: process.env });
  return { title: pick.cfg!.name ?? r.command[0], launch: { command: r.command, cwd: r.cwd, env: userEnv(r.env), output: 'capture', ...ids } };
}

function baseOptions(): Omit<MemleakOptions, 'pid' | 'launch'> {
  const c = vscode.workspace.getConfiguration('ebpfStudio.memleak');
  return {
    kernel: false,
    minAgeMs: c.get<number>('minAgeMs', 0),
    sampleRate: 1,
    minSize: 0,
    maxSize: 0,
    top: 200,
    intervalS: c.get<number>('intervalSeconds', 2),
    maxOutstanding: c.get<number>('maxOutstanding', MEMLEAK_DEFAULT_MAX_OUTSTANDING),
    unwind: (['auto', 'dwarf', 'fp'] as const).find((u) => u === c.get<string>('unwind', 'auto')) ?? 'auto',
    mode: c.get<MemleakMode>('mode', 'auto'),
    sampleBytes: 0,
  };
}

export function activate(context: vscode.ExtensionContext): void {
  decoration = vscode.window.createTextEditorDecorationType({
    gutterIconPath: vscode.Uri.joinPath(context.extensionUri, 'media', 'memleak-gutter.svg'),
    gutterIconSize: 'contain',
    overviewRulerColor: new vscode.ThemeColor('editorWarning.foreground'),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
    isWholeLine: true,
  });
  context.subscriptions.push(
    decoration,
    lensesChanged,
    vscode.languages.registerCodeLensProvider(
      { scheme: 'file' },
      {
        onDidChangeCodeLenses: lensesChanged.event,
        provideCodeLenses(doc) {
          const file = doc.uri.fsPath;
          return (state?.lenses ?? [])
            .filter((l) => l.file === file && l.line <= doc.lineCount)
            .map((l) => new vscode.CodeLens(doc.lineAt(l.line - 1).range, { title: l.text, command: 'ebpfStudio.showLeakSite', arguments: [l.key], tooltip: 'Show this leak site in the leak view' }));
        },
      },
    ),
    vscode.window.onDidChangeVisibleTextEditors(() => decorate()),
    vscode.commands.registerCommand('ebpfStudio.findMemoryLeaks', async (pidArg?: number) => {
      try {
        const pid = typeof pidArg === 'number' ? pidArg : await pickProcess();
        if (!pid) return undefined;
        // a running process cannot be preloaded: the preload setting means uprobes here
        const base = baseOptions();
        const sampleBytes = vscode.workspace.getConfiguration('ebpfStudio.memleak').get<number>('attachSampleBytes', MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES);
        return await trace(context, { ...base, mode: base.mode === 'preload' ? 'auto' : base.mode, pid, sampleBytes }, `Leaks of pid ${pid}`);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.runWithLeakTracing', async () => {
      try {
        const target = await pickLaunch();
        if (!target) return undefined;
        return await trace(context, { ...baseOptions(), launch: target.launch }, `Leaks of ${target.title}`);
      } catch (e) {
        showError(e instanceof CommandLineError ? new Error(`${e.message}`) : e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.clearLeaks', async () => {
      if (session) await session.stop();
      session = undefined;
      state = undefined;
      refresh();
      view?.post({ type: 'cleared' });
    }),
    vscode.commands.registerCommand('ebpfStudio.showLeakSite', (key?: string) => openView(context, key)),
    { dispose: () => void session?.stop() },
  );
}
