// Commands: ebpfStudio.findMemoryLeaks ("Find Memory Leaks": pick a running process),
// ebpfStudio.runWithLeakTracing ("Run with Leak Tracing": a typed command line or a launch
// configuration, started under tracing), ebpfStudio.clearLeaks, ebpfStudio.showLeakSite (what a
// leak CodeLens runs: opens the leak view focused on that site). Context keys:
// ebpfStudio.leaksShown (lenses are on screen). CodeLenses, a gutter icon and an overview-ruler
// mark sit on every workspace line of a leaking stack — the allocation line and each caller, with
// inclusive figures (model/leakSites.ts); they follow live updates and stay after Stop as a
// snapshot until Clear. Each session keeps its own figures and panel ("Leaks of leaky (pid 1234)",
// with Stop); sessions run side by side, the newest one's lens wins a line both have.
import fs from 'node:fs';
import * as vscode from 'vscode';
import { saveExport } from '../../ui/exportFile';
import { MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES, MEMLEAK_DEFAULT_MAX_OUTSTANDING, type MemleakMode, type MemleakLaunch, type MemleakOptions, type MemleakResult, type MemleakStack, type MemleakUpdate } from '../../../protocol/memleak';
import { toFolded } from '../../../model/memleakFormat';
import { startSession, type ClientSession } from '../../sessions/liveSessions';
import { newSessionKey, recordSession } from '../../sessions/sessionStore';
import { makeSession } from '../../../model/sessionFile';
import { errorText, showError } from '../../ui/errors';
import { leakSites, placeLenses, type LeakLens } from '../../../model/leakSites';
import { readStat } from '../../../sys/proc/processes';
import { pickProcess } from '../../ui/processPicker';
import { CommandLineError, fromLaunchConfig, splitCommandLine, type LaunchConfigLike } from './leakLaunch';
import { isJvmTarget, traceJavaHeap } from './javaHeapLeaks';
import type { LeakViewStack } from '../../../../webview/memleak/protocol';
import { LeakPanel, pushHistory } from './leakPanel';

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

/** What the feature shares between its sessions: the lens provider, the decoration, the output channel. */
interface Shared {
  context: vscode.ExtensionContext;
  lensesChanged: vscode.EventEmitter<void>;
  decoration: vscode.TextEditorDecorationType;
  output(): vscode.OutputChannel;
  /** the sessions whose lenses are on screen, newest last */
  traces: Set<LeakTrace>;
}

const stackKey = (s: MemleakStack) => s.frames.map((f) => f.address).join(',') || `empty:${s.bytes}`;
const roots = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);

/** One leak-tracing session: its figures, its panel and its lenses, from start until Clear Leaks. */
interface LeakTrace {
  readonly state: State;
  lenses(): LeakLens[];
  openView(focusSite?: string): void;
  stop(): Promise<void>;
  /** stops tracing, removes its lenses and empties its panel */
  clear(): Promise<void>;
}

function newLeakTrace(shared: Shared, title: string, sampleBytes: number | undefined): LeakTrace & { start(options: MemleakOptions): Promise<ClientSession<'memleak'>>; retitle(t: string): void } {
  const { context } = shared;
  const state: State = { title, running: true, stacks: [], totalBytes: 0, totalAllocations: 0, dropped: 0, stackHistory: new Map(), siteHistory: new Map(), lenses: [], sampleBytes, key: newSessionKey(), startedAt: new Date() };
  let session: ClientSession<'memleak'> | undefined;
  let cleared = false;
  const panel = new LeakPanel(context, {
    title: () => state.title,
    sessionKey: () => state.key,
    snapshot: () => ({ type: 'snapshot', title: state.title, running: state.running, totalBytes: state.totalBytes, totalAllocations: state.totalAllocations, dropped: state.dropped, stacks: viewStacks(), sites: state.lenses, sampleBytes: state.sampleBytes, sessionKey: state.key }),
    onMessage: async (m) => {
      if (m.type === 'openFrame') {
        await openLocation(m.file, m.line, m.column);
      } else if (m.type === 'export') {
        await exportLeaks(currentDocument(), m.format);
      } else if (m.type === 'stop') {
        await self.stop();
      }
    },
  });

  function absorb(stacks: MemleakStack[], atMs: number, totals?: { bytes: number; allocations: number; dropped: number }): void {
    state.stacks = stacks;
    state.totalBytes = totals?.bytes ?? stacks.reduce((s, x) => s + x.bytes, 0);
    state.totalAllocations = totals?.allocations ?? stacks.reduce((s, x) => s + x.allocations, 0);
    state.dropped = totals?.dropped ?? state.dropped;
    for (const s of stacks) pushHistory(state.stackHistory, stackKey(s), s.bytes);
    for (const site of leakSites(stacks, roots())) pushHistory(state.siteHistory, site.key, { atMs, bytes: site.bytes });
    state.lenses = placeLenses(stacks, roots(), state.siteHistory);
    refresh();
  }

  function viewStacks(): LeakViewStack[] {
    const sites = leakSites(state.stacks, roots());
    const siteOfStack = new Map<number, string>();
    const linesOfStack = new Map<number, string[]>();
    for (const s of sites) {
      for (const i of s.stacks) {
        if (s.key === s.allocatedAt || (s.kind === 'allocation' && !siteOfStack.has(i))) siteOfStack.set(i, s.key);
        linesOfStack.set(i, [...(linesOfStack.get(i) ?? []), s.key]);
      }
    }
    return state.stacks.map((s, i) => ({ ...s, key: stackKey(s), history: state.stackHistory.get(stackKey(s)) ?? [s.bytes], site: siteOfStack.get(i), lines: linesOfStack.get(i) ?? [] }));
  }

  function refresh(): void {
    shared.lensesChanged.fire();
    decorateAll(shared);
    panel.postSnapshot();
  }

  function openView(focusSite?: string): void {
    panel.open(focusSite);
  }

  function currentDocument(): MemleakResult {
    return state.result ?? { tracer: 'memleak', pid: session?.info.targets[0] ?? 0, stacks: state.stacks, dropped: state.dropped, lost: 0 };
  }

  const self = {
    state,
    lenses: () => (cleared ? [] : state.lenses),
    openView,
    retitle(t: string): void {
      state.title = t;
      panel.title = t;
      panel.postSnapshot();
    },
    async stop(): Promise<void> {
      await session?.stop();
    },
    async clear(): Promise<void> {
      cleared = true;
      await session?.stop();
      state.lenses = [];
      shared.traces.delete(self);
      refresh();
      panel.post({ type: 'cleared' });
    },
    async start(options: MemleakOptions): Promise<ClientSession<'memleak'>> {
      const s = await startSession('memleak', options, state.title, {
        onUpdate: (u: MemleakUpdate) => {
          if (u.output) shared.output().append(u.output);
          if (!cleared) absorb(u.stacks, u.atMs, { bytes: u.totalBytes, allocations: u.totalAllocations, dropped: u.dropped });
        },
        onEnded: (reason, result, message) => {
          state.running = false;
          if (cleared) return;
          if (result) {
            state.result = result;
            absorb(result.stacks, Date.now(), { bytes: result.stacks.reduce((a, x) => a + x.bytes, 0), allocations: result.stacks.reduce((a, x) => a + x.allocations, 0), dropped: result.dropped });
          } else refresh();
          void recordSession(
            makeSession('memleak', state.title, { totalBytes: state.totalBytes, totalAllocations: state.totalAllocations, dropped: state.dropped, stacks: viewStacks(), sites: state.lenses, sampleBytes: state.sampleBytes }, state.startedAt, new Date()),
            state.key,
          );
          const n = state.lenses.filter((l) => l.kind === 'allocation').length;
          const callers = state.lenses.length - n;
          const why = reason === 'error' ? `ended: ${message ?? 'error'}` : reason === 'target-exited' ? (message ?? 'the program exited') : 'stopped';
          const how = result?.mode === 'preload' ? ' (preload mode)' : result?.mode === 'inject' ? ' (injected)' : result?.mode === 'uprobe' ? ' (uprobes)' : '';
          const where = n ? `${n} leak site${n === 1 ? '' : 's'}${callers ? ` and ${callers} calling line${callers === 1 ? '' : 's'}` : ''} in the workspace (CodeLenses on the lines).` : 'No leak sites in workspace files.';
          void vscode.window.showInformationMessage(`eBPF Studio: leak tracing${how} ${why}. ${where}`, 'Show Leaks').then((c) => {
            if (c) openView();
          });
        },
      });
      session = s;
      return s;
    },
  };
  return self;
}

function lensesOnScreen(shared: Shared): LeakLens[] {
  // The newest session with lenses wins a line, so two sessions never stack lenses on one line.
  const byLine = new Map<string, LeakLens>();
  for (const t of shared.traces) for (const l of t.lenses()) byLine.set(l.key, l);
  return [...byLine.values()];
}

function decorateAll(shared: Shared): void {
  const lenses = lensesOnScreen(shared);
  for (const editor of vscode.window.visibleTextEditors) {
    const file = editor.document.uri.fsPath;
    const ranges = lenses
      .filter((l) => l.file === file && l.line <= editor.document.lineCount)
      .map((l) => ({ range: editor.document.lineAt(l.line - 1).range, hoverMessage: `${l.text}\n\n${l.tooltip}` }));
    editor.setDecorations(shared.decoration, ranges);
  }
  void vscode.commands.executeCommand('setContext', 'ebpfStudio.leaksShown', lenses.length > 0);
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

async function exportLeaks(doc: MemleakResult, format: 'json' | 'folded'): Promise<void> {
  const outcome = await saveExport({
    title: format === 'json' ? 'Export leaks as JSON' : 'Export folded stacks (flamegraph.pl input, weighted by bytes)',
    baseName: `memleak-${doc.pid}`,
    extension: format,
    filters: format === 'json' ? { JSON: ['json'] } : { 'Folded stacks': ['folded', 'txt'] },
    content: () => (format === 'json' ? JSON.stringify(doc, null, 2) : toFolded(doc) + '\n'),
  });
  if (outcome?.error) void vscode.window.showErrorMessage(`eBPF Studio: export failed: ${outcome.error}`);
}

/** "Leaks of leaky (pid 1234)": the panel's tab, the Sessions view's label, the saved session's title. */
export function leakTitle(name: string, pid?: number): string {
  return pid ? `Leaks of ${name} (pid ${pid})` : `Leaks of ${name}`;
}

async function trace(shared: Shared, options: MemleakOptions, name: string, pid?: number): Promise<ClientSession<'memleak'>> {
  const t = newLeakTrace(shared, leakTitle(name, pid), options.sampleBytes || undefined);
  const s = await t.start(options);
  // a launched program's pid is known once it runs
  if (!pid && s.info.targets[0]) t.retitle(leakTitle(name, s.info.targets[0]));
  shared.traces.add(t);
  for (const w of s.info.warnings) shared.output().appendLine(`warning: ${w}`);
  if (s.info.warnings.length) void vscode.window.showWarningMessage(`eBPF Studio: ${s.info.warnings.join(' ')}`);
  t.openView();
  return s;
}

async function pickTarget(): Promise<{ pid: number; name: string } | undefined> {
  const picked = await pickProcess({ command: 'Find Memory Leaks', placeHolder: 'Pick a process to trace its allocations, or type its pid' });
  return picked && 'process' in picked ? { pid: picked.process.pid, name: picked.process.jvm?.main ?? picked.process.comm } : undefined;
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
    unwind: (['auto', 'dwarf', 'fp', 'cfi'] as const).find((u) => u === c.get<string>('unwind', 'auto')) ?? 'auto',
    mode: c.get<MemleakMode>('mode', 'auto'),
    sampleBytes: 0,
  };
}

export function activate(context: vscode.ExtensionContext): void {
  let output: vscode.OutputChannel | undefined;
  const shared: Shared = {
    context,
    lensesChanged: new vscode.EventEmitter<void>(),
    decoration: vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(context.extensionUri, 'media', 'memleak-gutter.svg'),
      gutterIconSize: 'contain',
      overviewRulerColor: new vscode.ThemeColor('editorWarning.foreground'),
      overviewRulerLane: vscode.OverviewRulerLane.Right,
      isWholeLine: true,
    }),
    output: () => (output ??= vscode.window.createOutputChannel('eBPF Studio: Leak Tracing')),
    traces: new Set(),
  };
  context.subscriptions.push(
    shared.decoration,
    shared.lensesChanged,
    vscode.languages.registerCodeLensProvider(
      { scheme: 'file' },
      {
        onDidChangeCodeLenses: shared.lensesChanged.event,
        provideCodeLenses(doc) {
          const file = doc.uri.fsPath;
          return lensesOnScreen(shared)
            .filter((l) => l.file === file && l.line <= doc.lineCount)
            .map((l) => new vscode.CodeLens(doc.lineAt(l.line - 1).range, { title: l.text, command: 'ebpfStudio.showLeakSite', arguments: [l.key], tooltip: l.tooltip }));
        },
      },
    ),
    vscode.window.onDidChangeVisibleTextEditors(() => decorateAll(shared)),
    vscode.commands.registerCommand('ebpfStudio.findMemoryLeaks', async (pidArg?: number) => {
      try {
        const target = typeof pidArg === 'number' ? { pid: pidArg, name: readStat(pidArg)?.comm ?? `pid ${pidArg}` } : await pickTarget();
        if (!target) return undefined;
        if (await isJvmTarget(target.pid)) return await traceJavaHeap(context, target.pid); // a JVM: Java heap leaks
        // a running process cannot be preloaded: the preload setting means uprobes here
        const base = baseOptions();
        const sampleBytes = vscode.workspace.getConfiguration('ebpfStudio.memleak').get<number>('attachSampleBytes', MEMLEAK_DEFAULT_ATTACH_SAMPLE_BYTES);
        return await trace(shared, { ...base, mode: base.mode === 'preload' ? 'uprobe' : base.mode, pid: target.pid, sampleBytes }, target.name, target.pid);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.runWithLeakTracing', async () => {
      try {
        const target = await pickLaunch();
        if (!target) return undefined;
        // the setting's inject names how a running process is traced; a launch is preloaded then
        const base = baseOptions();
        return await trace(shared, { ...base, mode: base.mode === 'inject' ? 'auto' : base.mode, launch: target.launch }, target.title);
      } catch (e) {
        showError(e instanceof CommandLineError ? new Error(`${e.message}`) : e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.clearLeaks', async () => {
      await Promise.all([...shared.traces].map((t) => t.clear()));
      decorateAll(shared);
    }),
    vscode.commands.registerCommand('ebpfStudio.showLeakSite', (key?: string) => {
      const all = [...shared.traces];
      const owner = [...all].reverse().find((t) => key !== undefined && t.lenses().some((l) => l.key === key)) ?? all[all.length - 1];
      owner?.openView(key);
    }),
    { dispose: () => void Promise.all([...shared.traces].map((t) => t.stop())) },
  );
}
