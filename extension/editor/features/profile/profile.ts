// Commands: ebpfStudio.profileCpu ("Profile CPU": one process — JVMs labeled — or the whole
// system, a frequency, a duration or until Stop, remembered per workspace (../profileChoices.ts);
// opens the flame graph), ebpfStudio.openProfile (opens a folded-stacks, speedscope, pprof or
// `profile --json` file in the flame graph; the view exports all but JSON),
// ebpfStudio.hideProfileAnnotations (removes the CodeLens and line heat). Context keys: none of
// its own (sessions.ts sets ebpfStudio.sessionRunning). The last profile annotates workspace
// source files: a CodeLens with self/total CPU share on each sampled function, heat on hot lines.
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { saveExport } from '../../ui/exportFile';
import * as proto from '../../../protocol/protocol';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_DEFAULT_STACK_STORAGE, PROFILE_MAX_FREQUENCY, UNWIND_CHOICES, type ProfileEvent, type ProfileOptions, type ProfileResult, type ProfileUpdate, type UnwindChoice } from '../../../protocol/profile';
import { OFFCPU_DEFAULT_MIN_BLOCK_US } from '../../../protocol/offcpu';
import { EVENT_LABEL, EVENT_TITLE, eventChangeItem, eventRefusal, isJavaEvent, pickEvent } from './profileEvent';
import { helper } from '../../helperClient/helperClient';
import { unwindDetails, unwindSummary } from '../../../model/unwindText';
import { startSession } from '../../sessions/liveSessions';
import { newSessionKey, recordSession } from '../../sessions/sessionStore';
import { makeSession } from '../../../model/sessionFile';
import { createViewPanel, type TypedPanel } from '../../ui/webviewPanel';
import { errorText, showError } from '../../ui/errors';
import type { FromView, ToView } from '../../../../webview/flamegraph/protocol';
import { fromProfileResult, type FlameProfile } from '../../../model/flamegraph/profileData';
import { toFolded, toSpeedscope } from '../../../model/flamegraph/formats';
import { pickJavaMode, type JavaMode } from './profileJavaMode';
import { profileAllocations } from './profileAlloc';
import { annotationsFromFlame, annotationsFromResult, definitionLine, waitDuration, waitLensTitle, waitsForFile, type SourceAnnotations } from '../../../model/profileSource';
import { encodePprofGz } from '../../../sys/profileFile';
import { readProfileUri } from './readProfileUri';
import { resultFromFlame } from '../../../model/pprof';
import { pickProcess } from '../../ui/processPicker';
import { describeSampling, loadLast, samplingPlan, saveLast, type LastTarget, type SamplingPlan, type TargetKind } from './profileChoices';

/** The file kinds the open dialogs offer (the content decides the format). */
export const PROFILE_FILTER_NAME = 'Profiles (folded, speedscope, pprof, profile --json)';
export const PROFILE_EXTENSIONS = ['folded', 'txt', 'json', 'collapsed', 'gz', 'pb', 'pprof'];

interface Target {
  pid: number;
  label: string;
  kind?: TargetKind;
  /** JVM main class or comm, so a restarted program is found again */
  name?: string;
  /** JVM targets: whether it runs with -XX:+PreserveFramePointer (decides the Java step's default) */
  preserveFramePointer?: boolean;
}

interface TargetItem extends vscode.QuickPickItem {
  target?: Target;
  /** change the remembered frequency and duration */
  changeSampling?: boolean;
  /** change what is measured (CPU, off-CPU, wall clock) */
  changeEvent?: boolean;
}

function targetOf(p: proto.ProcessInfo): Target {
  // a process in a container is named with it (runtime, name, image) in titles and sessions
  const where = p.container ? `; ${p.container}` : '';
  if (p.jvm) return { pid: p.pid, label: `pid ${p.pid} (${p.jvm.main}${where})`, kind: 'jvm', name: p.jvm.main, preserveFramePointer: p.jvm.preserveFramePointer };
  return { pid: p.pid, label: `pid ${p.pid} (${p.comm}${where})`, kind: 'process', name: p.comm };
}

/** A JVM row says whether Java stacks need the agent (no -XX:+PreserveFramePointer). */
function describeTarget(p: proto.ProcessInfo): Pick<vscode.QuickPickItem, 'label' | 'description' | 'detail'> {
  if (!p.jvm) return { label: `${p.pid}  ${p.comm}`, description: p.user, detail: p.cmdline.join(' ').slice(0, 200) || undefined };
  return {
    label: `$(coffee) ${p.pid}  ${p.jvm.main}`,
    description: `JVM · ${p.user}`,
    detail: p.jvm.preserveFramePointer ? p.jvm.javaHome : `${p.jvm.javaHome} · no -XX:+PreserveFramePointer: whole Java stacks through the agent`,
  };
}

/** The one place the sampling options live: what the run will use, a click away from changing. */
function samplingItem(plan: SamplingPlan): TargetItem {
  const fixed = plan.frequencyFrom === 'setting' && plan.durationFrom === 'setting';
  const from = fixed ? 'from settings (ebpfStudio.profile.frequency, .duration)' : plan.frequencyFrom === 'default' && plan.durationFrom === 'default' ? 'defaults — change…' : 'remembered for this workspace — change…';
  return { label: `$(settings-gear) Sampling: ${describeSampling(plan.frequency, plan.durationS)}`, description: from, changeSampling: !fixed, alwaysShow: true };
}

async function pickTarget(last: LastTarget | undefined, plan: SamplingPlan, offerChange: boolean, event: ProfileEvent = 'cpu'): Promise<Target | 'change' | 'event' | undefined> {
  const whole: TargetItem = { label: '$(globe) Whole system', detail: 'Every process on every CPU (the idle task excluded)', target: { pid: 0, label: 'whole system', kind: 'system', name: '' } };
  const bottom: TargetItem[] = [];
  if (offerChange) bottom.push(samplingItem(plan));
  bottom.push(eventChangeItem(event));
  // the Java measures read one JVM: only JVMs are listed, a JDK too old for the measure refused with why
  const java = isJavaEvent(event);
  // the last target first: the same pid under the same name, else a restarted program of that name
  const lastKind = last?.kind;
  const samePid = (p: proto.ProcessInfo) => targetOf(p).kind === lastKind && p.pid === last?.pid && targetOf(p).name === last?.name;
  const sameName = (p: proto.ProcessInfo) => targetOf(p).kind === lastKind && targetOf(p).name === last?.name;
  const picked = await pickProcess<TargetItem>({
    command: 'Profile CPU',
    title: 'Profile CPU: what to sample',
    placeHolder: 'What to sample: the whole system, a process or a JVM (or type a pid)',
    top: java ? [] : [lastKind === 'system' ? { ...whole, description: 'last used' } : whole],
    jvmOnly: java,
    refuse: java ? (p) => eventRefusal(event, p) : undefined,
    bottom,
    describe: describeTarget,
    preferred: last && lastKind !== 'system' ? (p) => samePid(p) || sameName(p) : undefined,
  });
  if (!picked) return undefined;
  if ('process' in picked) return targetOf(picked.process);
  const pick = picked.extra;
  if (pick.changeEvent) return 'event';
  if (pick.changeSampling) return 'change';
  if (pick.label.startsWith('$(settings-gear)')) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'ebpfStudio.profile');
    return undefined;
  }
  return pick.target;
}

/** Common rates first (99 avoids lockstep with timers); any other through "Other…". */
async function pickFrequency(initial: number): Promise<number | undefined> {
  const notes: Record<number, string> = { 49: 'lighter', 99: 'the default: low overhead, off the timer tick', 499: 'finer, for short runs', 997: 'finest of these, more overhead' };
  const items: (vscode.QuickPickItem & { hz?: number })[] = [49, 99, 499, 997].map((hz) => ({ label: `${hz} Hz`, description: notes[hz], hz }));
  if (!items.some((i) => i.hz === initial)) items.push({ label: `${initial} Hz`, description: 'current', hz: initial });
  items.sort((a, b) => (a.hz === initial ? -1 : b.hz === initial ? 1 : 0));
  items.push({ label: 'Other…', description: `a whole number from 1 to ${PROFILE_MAX_FREQUENCY}` });
  const pick = await vscode.window.showQuickPick(items, { title: 'Profile CPU: samples per second per CPU' });
  if (!pick) return undefined;
  if (pick.hz) return pick.hz;
  const text = await vscode.window.showInputBox({
    title: 'Profile CPU: samples per second per CPU',
    value: String(initial),
    validateInput: (v) => (/^\s*\d+\s*$/.test(v) && Number(v) >= 1 && Number(v) <= PROFILE_MAX_FREQUENCY ? undefined : `A whole number from 1 to ${PROFILE_MAX_FREQUENCY} (99 avoids lockstep with timers)`),
  });
  return text ? Number(text.trim()) : undefined;
}

/** Seconds, 0 = until Stop; undefined = cancelled. */
async function pickDuration(initial: number): Promise<number | undefined> {
  const items = [
    { label: 'Until I press Stop', seconds: 0 },
    { label: '10 seconds', seconds: 10 },
    { label: '30 seconds', seconds: 30 },
    { label: '60 seconds', seconds: 60 },
  ];
  if (!items.some((i) => i.seconds === initial)) items.push({ label: `${initial} seconds`, seconds: initial });
  const first = items.find((i) => i.seconds === initial)!;
  const pick = await vscode.window.showQuickPick([first, ...items.filter((i) => i !== first)], { title: 'Profile CPU: for how long' });
  return pick ? pick.seconds : undefined;
}

/** The JDK feature release of each running JVM (undefined where unknown), for the measure step. */
async function runningJdks(): Promise<(number | undefined)[]> {
  try {
    return (await helper().request(proto.listProcesses, { jvmOnly: true })).filter((p) => p.jvm).map((p) => p.jvm!.feature);
  } catch {
    return [];
  }
}

/** Target, frequency and duration: asks the target only; frequency and duration when "Sampling: … change…" is picked. */
export async function askProfile(state: vscode.Memento): Promise<{ target: Target; frequency: number; durationS: number; event: ProfileEvent } | undefined> {
  const last = loadLast(state);
  const plan = samplingPlan(vscode.workspace.getConfiguration('ebpfStudio.profile'), last);
  let event: ProfileEvent = 'cpu';
  let picked = await pickTarget(last.target, plan, true, event);
  while (picked === 'event') {
    const e = await pickEvent(event, await runningJdks());
    if (!e) return undefined;
    event = e;
    picked = await pickTarget(last.target, plan, true, event);
  }
  let frequency: number | undefined = plan.frequency;
  let durationS: number | undefined = plan.durationS;
  const change = picked === 'change';
  if (change) picked = await pickTarget(last.target, plan, false, event);
  if (!picked || picked === 'change' || picked === 'event') return undefined;
  // the Java measures time each wait: no sampling frequency to ask (the remembered one is kept for CPU)
  if (change && !isJavaEvent(event) && plan.frequencyFrom !== 'setting') frequency = await pickFrequency(frequency);
  if (!frequency) return undefined;
  if (change && plan.durationFrom !== 'setting') durationS = await pickDuration(durationS);
  if (durationS === undefined) return undefined;
  // only answers the user gave are remembered: untouched defaults keep following the settings' defaults
  const keepF = change && !isJavaEvent(event) && plan.frequencyFrom !== 'setting' ? frequency : last.frequency;
  const keepD = change && plan.durationFrom !== 'setting' ? durationS : last.durationS;
  await saveLast(state, { target: { kind: picked.kind ?? (picked.pid ? 'process' : 'system'), pid: picked.pid, name: picked.name ?? '' }, ...(keepF !== undefined ? { frequency: keepF } : {}), ...(keepD !== undefined ? { durationS: keepD } : {}) });
  return { target: picked, frequency, durationS, event };
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

export function setAnnotations(a: SourceAnnotations | undefined): void {
  annotations = a;
  lensChanged.fire();
  for (const e of vscode.window.visibleTextEditors) decorate(e);
}

const lensProvider: vscode.CodeLensProvider = {
  onDidChangeCodeLenses: lensChanged.event,
  provideCodeLenses(doc) {
    return annotations ? [...functionLenses(annotations, doc), ...waitLenses(annotations, doc)] : [];
  },
};

/** What a profile's µs are, in the lenses' tooltips. */
const WAIT_WORDS: Record<ProfileEvent, string> = { cpu: 'CPU time', offcpu: 'off-CPU time', wall: 'wall-clock time', lock: 'Java lock wait time', vthread: "virtual threads' wait time" };

/** Off-CPU, wall, Java lock and virtual-thread profiles: on each Java line where threads waited (their innermost Java frame), the time and its states. */
export function waitLenses(a: SourceAnnotations, doc: Pick<vscode.TextDocument, 'uri' | 'lineCount'>): vscode.CodeLens[] {
  const waits = waitsForFile(a, doc.uri.fsPath);
  if (!waits) return [];
  return [...waits]
    .filter(([line, w]) => w.total > 0 && line >= 1 && line <= doc.lineCount)
    .sort((x, y) => x[0] - y[0])
    .map(([line, w]) => {
      const states = (Object.entries(w.states) as [string, number][]).map(([st, v]) => `${st} ${waitDuration(v)}`).join(', ');
      return new vscode.CodeLens(new vscode.Range(line - 1, 0, line - 1, 0), {
        title: waitLensTitle(w, a.waitTotal ?? 0),
        command: 'ebpfStudio.hideProfileAnnotations',
        tooltip: `Threads waited ${waitDuration(w.total)} with this line as their innermost Java frame (${states}), of ${waitDuration(a.waitTotal ?? 0)} ${WAIT_WORDS[a.event ?? 'offcpu']} in the profile. Click to hide.`,
      });
    });
}

/** Each sampled function of the file: its share of the profile, on its definition line. */
function functionLenses(a: SourceAnnotations, doc: vscode.TextDocument): vscode.CodeLens[] {
  const fns = a.functions.get(doc.uri.fsPath);
  if (!fns) return [];
  const text = doc.getText().split(/\r?\n/);
  return fns
    .filter((f) => f.total > 0)
    .map((f) => {
      const line = definitionLine(text, f.name, f.line) - 1;
      return new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
        title: a.event
          ? `${a.event === 'wall' ? 'Wall' : 'Waits'} ${pct(f.total, a.samples)} total (${(f.total / 1000).toFixed(1)} ms) · ${pct(f.self, a.samples)} self (${f.name})`
          : `CPU ${pct(f.total, a.samples)} total · ${pct(f.self, a.samples)} self (${f.name})`,
        command: 'ebpfStudio.hideProfileAnnotations',
        tooltip: a.event
          ? `${(f.total / 1000).toFixed(1)} ms of ${(a.samples / 1000).toFixed(1)} ms ${WAIT_WORDS[a.event]} had ${f.name} on the stack. Click to hide.`
          : `${f.total} of ${a.samples} samples had ${f.name} on the stack; ${f.self} were in it. Click to hide.`,
      });
    });
}

// ---- the flame graph panel ------------------------------------------------------------------

export interface Shown {
  panel: TypedPanel<ToView, FromView>;
  /** posts now, or once the view said it is ready */
  post(m: ToView): void;
  profile?: FlameProfile;
  /** the result document behind profile, when there is one (exact pprof export) */
  result?: ProfileResult;
}

export function openPanel(context: vscode.ExtensionContext, title: string, onStop?: () => void, sessionKey?: string): Shown {
  const panel = createViewPanel<ToView, FromView>(context, 'flamegraph', title, undefined, sessionKey);
  const shown: Shown = { panel, post: (m) => panel.post(m) };
  panel.onMessage(async (m) => {
    switch (m.type) {
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
      case 'dismissWarning':
        await dismissWarning(context, m.text);
        break;
    }
  });
  return shown;
}

const DISMISSED_KEY = 'ebpfStudio.profile.dismissedWarnings';

/** A warning the user dismissed in a flame graph (e.g. one module's debug-info advice) is not shown again. */
async function dismissWarning(context: vscode.ExtensionContext, text: string): Promise<void> {
  const list = context.globalState.get<string[]>(DISMISSED_KEY, []);
  if (!list.includes(text)) await context.globalState.update(DISMISSED_KEY, [...list, text].slice(-200));
}

/** Each warning once, the dismissed ones left out. */
export function visibleWarnings(state: Pick<vscode.Memento, 'get'>, warnings: string[]): string[] {
  const dismissed = new Set(state.get<string[]>(DISMISSED_KEY, []));
  return [...new Set(warnings)].filter((w) => !dismissed.has(w));
}

async function openSource(given: string, line: number): Promise<void> {
  // Java frames carry a source-root-relative path ("com/x/Foo.java"): find it in the workspace.
  const file = path.isAbsolute(given) ? given : ((await vscode.workspace.findFiles(`**/${given}`, '**/node_modules/**', 1))[0]?.fsPath ?? given);
  if (!fs.existsSync(file)) {
    void vscode.window.showWarningMessage(`eBPF Studio: ${file} does not exist here (was the binary built on another machine or in a container?)`);
    return;
  }
  const pos = new vscode.Position(Math.max(0, line - 1), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
}

const EXPORTS: Record<'folded' | 'speedscope' | 'pprof', { title: string; extension: string; filters: Record<string, string[]> }> = {
  folded: { title: 'Export folded stacks (flamegraph.pl, inferno)', extension: 'folded', filters: { 'Folded stacks': ['folded', 'txt'] } },
  speedscope: { title: 'Export speedscope JSON', extension: 'speedscope.json', filters: { Speedscope: ['json'] } },
  pprof: { title: 'Export pprof (go tool pprof, Pyroscope, Parca)', extension: 'pb.gz', filters: { 'pprof (gzipped profile.proto)': ['gz', 'pb'] } },
};

async function exportProfile(p: FlameProfile, format: 'folded' | 'speedscope' | 'pprof', panel: Shown): Promise<void> {
  const e = EXPORTS[format];
  const outcome = await saveExport({
    title: e.title,
    baseName: 'cpu-profile',
    extension: e.extension,
    filters: e.filters,
    content: () => (format === 'folded' ? toFolded(p) : format === 'speedscope' ? JSON.stringify(toSpeedscope(p)) : encodePprofGz(panel.result ?? resultFromFlame(p))),
  });
  if (outcome?.file) panel.post({ type: 'status', text: `Exported to ${outcome.file}` });
  if (outcome?.error) panel.post({ type: 'status', text: `Export failed: ${outcome.error}`, error: true });
}

function showProfile(shown: Shown, p: FlameProfile, title: string, warnings: string[], ann: SourceAnnotations, result?: ProfileResult): void {
  shown.profile = p;
  shown.result = result;
  shown.post({ type: 'profile', profile: p, title, warnings, unwind: unwindSummary(result?.unwind), unwindDetail: unwindDetails(result?.unwind) });
  setAnnotations(ann);
}

async function profile(context: vscode.ExtensionContext, target: Target, frequency: number, durationS: number | null, java: JavaMode = 'auto', event: ProfileEvent = 'cpu'): Promise<string> {
  const stackStorageSize = vscode.workspace.getConfiguration('ebpfStudio.profile').get<number>('stackStorageSize', PROFILE_DEFAULT_STACK_STORAGE);
  const unwind = vscode.workspace.getConfiguration('ebpfStudio.profile').get<UnwindChoice>('unwind', 'auto');
  const chosen = UNWIND_CHOICES.includes(unwind) ? unwind : 'auto';
  // Unwind tables are loaded for one process: a whole-system profile keeps the default walk.
  const wholeSystemCfi = chosen === 'cfi' && !target.pid;
  const options: ProfileOptions = { pid: target.pid, frequency, includeIdle: false, javaPerfMap: true, stackStorageSize, unwind: wholeSystemCfi ? 'auto' : chosen, java };
  let shown: Shown | undefined;
  const warnings: string[] = wholeSystemCfi ? ['Unwind tables in the kernel ("cfi") need one process: this whole-system profile unwinds by CFI in user space instead.'] : [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let live: ReturnType<typeof setInterval> | undefined;
  const title = `${EVENT_TITLE[event] ?? 'CPU'}: ${target.label}`;
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
    // the samples against the target's own CPU time: far fewer is said first, never a quiet graph
    if (result.problem) warnings.push(`This profile missed most of what pid ${target.pid} ran: ${result.problem}`);
    else if (result.cpuCheck?.verdict === 'fewer') warnings.push(result.cpuCheck.message);
    else if (result.samples === 0 && event === 'cpu') warnings.push(`No samples: ${target.pid ? `pid ${target.pid} did not run on a CPU while sampled` : 'nothing ran'}.`);
    if (result.stacks.length === 0 && event === 'lock') warnings.push(`No Java lock waits: no thread of pid ${target.pid} waited for a contended monitor or parked in java.util.concurrent while traced. Profile while the program is under load, or measure "${EVENT_LABEL.offcpu}" for its other waits.`);
    if (result.stacks.length === 0 && event === 'vthread') warnings.push(`No virtual-thread waits: no virtual thread of pid ${target.pid} unmounted while traced (a program without virtual threads, or idle).`);
    // A whole-system profile is rooted by process even when only one process ran.
    const p = fromProfileResult(result, { name: title, groupByProcess: target.pid === 0 });
    showProfile(shown, p, title, visibleWarnings(context.globalState, warnings), annotationsFromResult(result), result);
    void recordSession(makeSession('profile', title, { profile: p, warnings: [...new Set(warnings)], unwind: unwindSummary(result.unwind), unwindDetail: unwindDetails(result.unwind) }, startedAt, new Date()), key);
  };
  const handlers = {
    onUpdate: (u: ProfileUpdate) => {
      if (u.warnings) warnings.push(...u.warnings);
      shown?.post({ type: 'progress', samples: u.samples, lost: u.lost, elapsedMs: u.elapsedMs, warnings: u.warnings ? visibleWarnings(context.globalState, warnings) : undefined });
    },
    onEnded: (_reason: unknown, result: ProfileResult | undefined, message?: string) => finish(result, message),
  };
  // Off-CPU and wall clock: the offcpu tracer, whose result is the same profile document in µs
  const session =
    event === 'cpu'
      ? await startSession('profile', options, `CPU profile ${target.label}`, handlers)
      : event === 'lock' || event === 'vthread'
        ? await startSession('java-locks', { pid: target.pid, vthreads: event === 'vthread' }, `${EVENT_LABEL[event]} ${target.label}`, handlers)
        : await startSession('offcpu', { pid: target.pid, event, minBlockUs: OFFCPU_DEFAULT_MIN_BLOCK_US, frequency, stackStorageSize, javaPerfMap: true }, `${EVENT_LABEL[event]} ${target.label}`, handlers);
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
        if (r && live && shown && (r.samples > 0 || r.stacks.length > 0)) shown.post({ type: 'profile', profile: fromProfileResult(r, { name: title, groupByProcess: target.pid === 0 }), title, warnings: visibleWarnings(context.globalState, warnings), unwind: unwindSummary(r.unwind), unwindDetail: unwindDetails(r.unwind), live: true });
      })
      .catch(() => {
        /* the session is ending: the final profile follows */
      })
      .finally(() => (inFlight = false));
  }, 1000);
  shown.post({ type: 'progress', samples: 0, lost: 0, elapsedMs: 0, warnings: visibleWarnings(context.globalState, warnings) });
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
    vscode.commands.registerCommand('ebpfStudio.profileCpu', async (given?: { pid?: number; all?: boolean; frequency?: number; durationS?: number; java?: JavaMode; event?: ProfileEvent }) => {
      try {
        // Tests and other commands may pass everything directly.
        if (given && (given.pid || given.all)) {
          const target = { pid: given.pid ?? 0, label: given.pid ? `pid ${given.pid}` : 'whole system' };
          return await profile(context, target, given.frequency ?? PROFILE_DEFAULT_FREQUENCY, given.durationS ?? null, given.java ?? 'auto', given.event ?? 'cpu');
        }
        const asked = await askProfile(context.workspaceState);
        if (!asked) return undefined;
        // the Java step chooses how CPU samples get Java frames (or allocations); off-CPU stacks are walked by frame pointers
        const java = asked.event === 'cpu' && asked.target.preserveFramePointer !== undefined ? await pickJavaMode(asked.target.preserveFramePointer) : 'auto';
        if (!java) return undefined;
        if (java === 'alloc') return await profileAllocations(context, asked.target, asked.durationS || null, openPanel);
        return await profile(context, asked.target, asked.frequency, asked.durationS || null, java, asked.event);
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.openProfile', async (given?: vscode.Uri) => {
      const uri =
        given ??
        (await vscode.window.showOpenDialog({ title: 'Open a CPU profile', canSelectMany: false, filters: { [PROFILE_FILTER_NAME]: PROFILE_EXTENSIONS, 'All files': ['*'] } }))?.[0];
      if (!uri) return;
      try {
        const loaded = await readProfileUri(uri);
        const title = `CPU: ${path.basename(uri.fsPath)}`;
        showProfile(openPanel(context, title), loaded.flame, title, [], loaded.result ? annotationsFromResult(loaded.result) : annotationsFromFlame(loaded.flame), loaded.result);
      } catch (e) {
        showError(new Error(`cannot open ${uri.fsPath} as a profile: ${errorText(e)}`));
      }
    }),
    vscode.commands.registerCommand('ebpfStudio.hideProfileAnnotations', () => setAnnotations(undefined)),
  );
}
