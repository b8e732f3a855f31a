// Commands: ebpfStudio.profileCpu ("Profile CPU": one process — JVMs labeled — or the whole
// system, a frequency, a duration or until Stop; opens the flame graph), ebpfStudio.openProfile
// (opens a folded-stacks, speedscope or `profile --json` file in the flame graph),
// ebpfStudio.hideProfileAnnotations (removes the CodeLens and line heat). Context keys: none of
// its own (sessions.ts sets ebpfStudio.sessionRunning). The last profile annotates workspace
// source files: a CodeLens with self/total CPU share on each sampled function, heat on hot lines.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { saveExport } from '../exportFile';
import * as proto from '../shared/protocol';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, UNWIND_CHOICES, type ProfileOptions, type ProfileResult, type UnwindChoice } from '../shared/profile';
import { unwindSummary } from '../shared/unwindText';
import { helper } from '../helperClient';
import { startSession } from '../sessions';
import { newSessionKey, recordSession } from '../sessionStore';
import { makeSession } from '../shared/sessionFile';
import { createViewPanel, type TypedPanel } from '../webviewPanel';
import { errorText, showError } from '../ui';
import type { FromView, ToView } from '../../webview/flamegraph/protocol';
import { fromProfileResult, type FlameProfile } from '../../webview/flamegraph/profileData';
import { importProfile, toFolded, toSpeedscope } from '../../webview/flamegraph/formats';
import { annotationsFromFlame, annotationsFromResult, definitionLine, type SourceAnnotations } from '../shared/profileSource';

interface Target {
  pid: number;
  label: string;
}

interface TargetItem extends vscode.QuickPickItem {
  target?: Target;
  askPid?: boolean;
}

export function targetItems(processes: proto.ProcessInfo[]): TargetItem[] {
  const items: TargetItem[] = [{ label: '$(globe) Whole system', detail: 'Every process on every CPU (the idle task excluded)', target: { pid: 0, label: 'whole system' } }];
  const jvms = processes.filter((p) => p.jvm);
  const others = processes.filter((p) => !p.jvm && !p.kernelThread);
  if (jvms.length) items.push({ label: 'JVMs', kind: vscode.QuickPickItemKind.Separator });
  for (const p of jvms) {
    items.push({
      label: `$(coffee) ${p.pid}  ${p.jvm!.main}`,
      description: `JVM · ${p.user}`,
      detail: p.jvm!.preserveFramePointer ? p.jvm!.javaHome : `${p.jvm!.javaHome} · no -XX:+PreserveFramePointer: Java stacks will be truncated`,
      target: { pid: p.pid, label: `pid ${p.pid} (${p.jvm!.main})` },
    });
  }
  items.push({ label: 'Processes', kind: vscode.QuickPickItemKind.Separator });
  for (const p of others) {
    items.push({ label: `${p.pid}  ${p.comm}`, description: p.user, detail: p.cmdline.join(' ').slice(0, 200), target: { pid: p.pid, label: `pid ${p.pid} (${p.comm})` } });
  }
  items.push({ label: '$(edit) Enter a pid…', askPid: true });
  return items;
}

async function pickTarget(): Promise<Target | undefined> {
  const procs = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Listing processes…' }, () => helper().request(proto.listProcesses, {}));
  const pick = await vscode.window.showQuickPick(targetItems(procs), { title: 'Profile CPU: what to sample', matchOnDescription: true, matchOnDetail: true });
  if (!pick) return undefined;
  if (pick.askPid) {
    const text = await vscode.window.showInputBox({ title: 'Profile CPU', prompt: 'Process id', validateInput: (v) => (/^\s*\d+\s*$/.test(v) && Number(v) > 0 ? undefined : 'A pid is a positive whole number') });
    return text ? { pid: Number(text.trim()), label: `pid ${text.trim()}` } : undefined;
  }
  return pick.target;
}

async function pickFrequency(): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title: 'Profile CPU: samples per second per CPU',
    value: String(PROFILE_DEFAULT_FREQUENCY),
    validateInput: (v) => (/^\s*\d+\s*$/.test(v) && Number(v) >= 1 && Number(v) <= PROFILE_MAX_FREQUENCY ? undefined : `A whole number from 1 to ${PROFILE_MAX_FREQUENCY} (99 avoids lockstep with timers)`),
  });
  return text ? Number(text.trim()) : undefined;
}

async function pickDuration(): Promise<number | null | undefined> {
  const items = [
    { label: 'Until I press Stop', seconds: null },
    { label: '10 seconds', seconds: 10 },
    { label: '30 seconds', seconds: 30 },
    { label: '60 seconds', seconds: 60 },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: 'Profile CPU: for how long' });
  return pick ? pick.seconds : undefined;
}

// ---- source annotations -------------------------------------------------------------------

let annotations: SourceAnnotations | undefined;
const lensChanged = new vscode.EventEmitter<void>();
/** Line heat, four levels of CPU share; created in activate(). */
let HEAT: vscode.TextEditorDecorationType[] = [];

function pct(n: number, d: number): string {
  return d > 0 ? `${((100 * n) / d).toFixed(1)}%` : '0%';
}

function decorate(editor: vscode.TextEditor): void {
  const perLine = annotations?.lines.get(editor.document.uri.fsPath);
  const buckets: vscode.DecorationOptions[][] = HEAT.map(() => []);
  if (annotations && perLine) {
    for (const [line, s] of perLine) {
      if (line < 1 || line > editor.document.lineCount) continue;
      const share = s.total / annotations.samples;
      const level = share >= 0.25 ? 3 : share >= 0.1 ? 2 : share >= 0.02 ? 1 : 0;
      buckets[level].push({ range: new vscode.Range(line - 1, 0, line - 1, 0), hoverMessage: `CPU: ${pct(s.self, annotations.samples)} self, ${pct(s.total, annotations.samples)} total (${s.total} samples on this line)` });
    }
  }
  HEAT.forEach((d, i) => editor.setDecorations(d, buckets[i]));
}

function setAnnotations(a: SourceAnnotations | undefined): void {
  annotations = a;
  lensChanged.fire();
  for (const e of vscode.window.visibleTextEditors) decorate(e);
}

const lensProvider: vscode.CodeLensProvider = {
  onDidChangeCodeLenses: lensChanged.event,
  provideCodeLenses(doc) {
    const fns = annotations?.functions.get(doc.uri.fsPath);
    if (!annotations || !fns) return [];
    const text = doc.getText().split(/\r?\n/);
    return fns
      .filter((f) => f.total > 0)
      .map((f) => {
        const line = definitionLine(text, f.name, f.line) - 1;
        return new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
          title: `CPU ${pct(f.total, annotations!.samples)} total · ${pct(f.self, annotations!.samples)} self (${f.name})`,
          command: 'ebpfStudio.hideProfileAnnotations',
          tooltip: `${f.total} of ${annotations!.samples} samples had ${f.name} on the stack; ${f.self} were in it. Click to hide.`,
        });
      });
  },
};

// ---- the flame graph panel ------------------------------------------------------------------

interface Shown {
  panel: TypedPanel<ToView, FromView>;
  /** posts now, or once the view said it is ready */
  post(m: ToView): void;
  profile?: FlameProfile;
}

function openPanel(context: vscode.ExtensionContext, title: string, onStop?: () => void, sessionKey?: string): Shown {
  const panel = createViewPanel<ToView, FromView>(context, 'flamegraph', title, undefined, sessionKey);
  let ready = false;
  const queue: ToView[] = [];
  const shown: Shown = { panel, post: (m) => (ready ? panel.post(m) : queue.push(m)) };
  panel.onMessage(async (m) => {
    switch (m.type) {
      case 'ready':
        ready = true;
        for (const q of queue.splice(0)) panel.post(q);
        break;
      case 'stop':
        onStop?.();
        break;
      case 'openSource':
        await openSource(m.file, m.line);
        break;
      case 'open':
        await vscode.commands.executeCommand('ebpfStudio.openProfile');
        break;
      case 'export':
        if (shown.profile) await exportProfile(shown.profile, m.format, shown);
        break;
    }
  });
  return shown;
}

async function openSource(file: string, line: number): Promise<void> {
  if (!fs.existsSync(file)) {
    void vscode.window.showWarningMessage(`eBPF Studio: ${file} does not exist here (was the binary built on another machine or in a container?)`);
    return;
  }
  const pos = new vscode.Position(Math.max(0, line - 1), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
}

async function exportProfile(p: FlameProfile, format: 'folded' | 'speedscope', panel: Shown): Promise<void> {
  const outcome = await saveExport({
    title: format === 'folded' ? 'Export folded stacks (flamegraph.pl, inferno)' : 'Export speedscope JSON',
    baseName: 'cpu-profile',
    extension: format === 'folded' ? 'folded' : 'speedscope.json',
    filters: format === 'folded' ? { 'Folded stacks': ['folded', 'txt'] } : { Speedscope: ['json'] },
    content: () => (format === 'folded' ? toFolded(p) : JSON.stringify(toSpeedscope(p))),
  });
  if (outcome?.file) panel.post({ type: 'status', text: `Exported to ${outcome.file}` });
  if (outcome?.error) panel.post({ type: 'status', text: `Export failed: ${outcome.error}`, error: true });
}

function showProfile(shown: Shown, p: FlameProfile, title: string, warnings: string[], ann: SourceAnnotations, unwind?: string): void {
  shown.profile = p;
  shown.post({ type: 'profile', profile: p, title, warnings, unwind });
  setAnnotations(ann);
}

async function profile(context: vscode.ExtensionContext, target: Target, frequency: number, durationS: number | null): Promise<string> {
  const stackStorageSize = vscode.workspace.getConfiguration('ebpfStudio.profile').get<number>('stackStorageSize', PROFILE_DEFAULT_STACK_STORAGE);
  const unwind = vscode.workspace.getConfiguration('ebpfStudio.profile').get<UnwindChoice>('unwind', 'auto');
  const options: ProfileOptions = { pid: target.pid, frequency, includeIdle: false, javaPerfMap: true, stackStorageSize, unwind: UNWIND_CHOICES.includes(unwind) ? unwind : 'auto' };
  let shown: Shown | undefined;
  const warnings: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let live: ReturnType<typeof setInterval> | undefined;
  const title = `CPU: ${target.label}`;
  const key = newSessionKey();
  const startedAt = new Date();
  const finish = (result: ProfileResult | undefined, message?: string) => {
    if (timer) clearTimeout(timer);
    if (live) clearInterval(live);
    live = undefined;
    if (!shown) return;
    if (!result) {
      shown.post({ type: 'status', text: `The session ended without a result${message ? `: ${message}` : ''}`, error: true });
      return;
    }
    if (result.samples === 0) warnings.push(`No samples: ${target.pid ? `pid ${target.pid} did not run on a CPU while sampled` : 'nothing ran'}.`);
    // A whole-system profile is rooted by process even when only one process ran.
    const p = fromProfileResult(result, { name: title, groupByProcess: target.pid === 0 });
    const unwind = unwindSummary(result.unwind);
    showProfile(shown, p, title, warnings, annotationsFromResult(result), unwind);
    void recordSession(makeSession('profile', title, { profile: p, warnings: [...warnings], unwind }, startedAt, new Date()), key);
  };
  const session = await startSession('profile', options, `CPU profile ${target.label}`, {
    onUpdate: (u) => {
      if (u.warnings) warnings.push(...u.warnings);
      shown?.post({ type: 'progress', samples: u.samples, lost: u.lost, elapsedMs: u.elapsedMs, warnings: u.warnings ? [...warnings] : undefined });
    },
    onEnded: (_reason, result, message) => finish(result, message),
  });
  warnings.push(...session.info.warnings);
  shown = openPanel(context, title, () => void session.stop(), key);
  // The graph grows while sampling: a snapshot at most once a second, never two in flight.
  let inFlight = false;
  live = setInterval(() => {
    if (inFlight || !shown) return;
    inFlight = true;
    session
      .snapshot()
      .then((r) => {
        if (r && live && shown && r.samples > 0) shown.post({ type: 'profile', profile: fromProfileResult(r, { name: title, groupByProcess: target.pid === 0 }), title, warnings: [...warnings], unwind: unwindSummary(r.unwind), live: true });
      })
      .catch(() => {
        /* the session is ending: the final profile follows */
      })
      .finally(() => (inFlight = false));
  }, 1000);
  shown.post({ type: 'progress', samples: 0, lost: 0, elapsedMs: 0, warnings: [...warnings] });
  for (const w of session.info.warnings) if (/PreserveFramePointer/.test(w)) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  if (durationS) timer = setTimeout(() => void session.stop(), durationS * 1000);
  shown.panel.panel.onDidDispose(() => void session.stop());
  return session.id;
}

export function activate(context: vscode.ExtensionContext): void {
  HEAT = [0.08, 0.16, 0.28, 0.42].map((alpha) =>
    vscode.window.createTextEditorDecorationType({ isWholeLine: true, backgroundColor: `rgba(255, 90, 30, ${alpha})`, overviewRulerColor: `rgba(255, 90, 30, ${alpha + 0.3})`, overviewRulerLane: vscode.OverviewRulerLane.Right }),
  );
  context.subscriptions.push(
    lensChanged,
    ...HEAT,
    vscode.languages.registerCodeLensProvider({ scheme: 'file' }, lensProvider),
    vscode.window.onDidChangeVisibleTextEditors((eds) => eds.forEach(decorate)),
    vscode.commands.registerCommand('ebpfStudio.profileCpu', async (given?: { pid?: number; all?: boolean; frequency?: number; durationS?: number }) => {
      try {
        // Tests and other commands may pass everything directly.
        const target = given && (given.pid || given.all) ? { pid: given.pid ?? 0, label: given.pid ? `pid ${given.pid}` : 'whole system' } : await pickTarget();
        if (!target) return undefined;
        const frequency = given?.frequency ?? (given ? PROFILE_DEFAULT_FREQUENCY : await pickFrequency());
        if (!frequency) return undefined;
        const duration = given ? (given.durationS ?? null) : await pickDuration();
        if (duration === undefined) return undefined;
        return await profile(context, target, frequency, duration);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.openProfile', async (given?: vscode.Uri) => {
      const uri =
        given ??
        (await vscode.window.showOpenDialog({ title: 'Open a CPU profile', canSelectMany: false, filters: { 'Profiles (folded, speedscope, profile --json)': ['folded', 'txt', 'json', 'collapsed'], 'All files': ['*'] } }))?.[0];
      if (!uri) return;
      try {
        const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
        const p = importProfile(text, path.basename(uri.fsPath));
        const title = `CPU: ${path.basename(uri.fsPath)}`;
        showProfile(openPanel(context, title), p, title, [], annotationsFromFlame(p));
      } catch (e) {
        showError(new Error(`cannot open ${uri.fsPath} as a profile: ${errorText(e)}`));
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.hideProfileAnnotations', () => setAnnotations(undefined)),
  );
}
