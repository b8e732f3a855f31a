// Opening a Java Flight Recording (*.jfr) in the editor: a read-only custom editor reads it in a
// worker (sys/jfrReader.ts) with a progress bar, asks which events to show (CPU samples,
// allocations, lock waits, GCs, or any other event type with stacks, with their counts), and shows
// them in our views: stacks in the flame graph (Java frames' file:line open the source, and the
// lines of workspace files get CodeLens), GCs in the Java GC view, everything on one clock in the
// JVM timeline. Commands: those of ./jfrRecord.ts.
// Context keys: none. View types: ebpfStudio.jfrFile (editor).
import path from 'node:path';
import * as vscode from 'vscode';
import { readJfrInWorker, type JfrReadResult } from '../../../sys/jfrReader';
import { ALLOC_EVENTS, CPU_EVENTS, LOCK_EVENTS } from '../../../model/jfr/profile';
import { fromProfileResult } from '../../../model/flamegraph/profileData';
import { makeSession } from '../../../model/sessionFile';
import { annotationsFromResult } from '../../../model/profileSource';
import type { ProfileResult } from '../../../protocol/profile';
import type { JavaGcResult, JavaGcUpdate } from '../../../protocol/javaGc';
import { showSession } from '../../sessions/sessionViews';
import { setAnnotations } from '../profile/profile';
import { errorText, showFailure } from '../../ui/errors';
import { registerRecordCommands } from './jfrRecord';
import { showJvmResult } from '../jvmTimeline';
import { WAIT_EVENTS } from '../../../model/jfr/timeline';

interface Choice extends vscode.QuickPickItem {
  profile?: string[];
  gc?: boolean;
  timeline?: boolean;
  title: string;
}

const count = (r: JfrReadResult, types: string[]) => r.types.filter((t) => types.includes(t.type)).reduce((a, t) => a + t.count, 0);

/** What the recording can show, most useful first; each with its event count. */
export function jfrChoices(r: JfrReadResult): Choice[] {
  const out: Choice[] = [];
  const add = (label: string, types: string[], title: string) => {
    // CPU samples are one type, the first the recording has (model/jfr/profile.ts CPU_EVENTS)
    const n = types === CPU_EVENTS ? (types.map((t) => count(r, [t])).find((x) => x > 0) ?? 0) : count(r, types);
    if (n > 0) out.push({ label, description: `${n.toLocaleString('en-US')} events`, detail: types.join(', '), profile: types, title });
  };
  add('CPU samples', CPU_EVENTS, 'CPU');
  add('Allocations', ALLOC_EVENTS, 'Allocations');
  add('Lock waits', LOCK_EVENTS, 'Lock waits');
  const gcs = count(r, ['jdk.GCPhasePause']);
  if (gcs > 0) out.push({ label: 'Garbage collections', description: `${gcs.toLocaleString('en-US')} pauses`, detail: 'jdk.GarbageCollection, jdk.GCPhasePause, safepoints', gc: true, title: 'GC' });
  const onClock = count(r, [...CPU_EVENTS, ...WAIT_EVENTS, 'jdk.GCPhasePause']);
  if (onClock > 0) out.push({ label: 'JVM timeline', description: `${onClock.toLocaleString('en-US')} events`, detail: 'GCs, safepoints, CPU samples and waits per thread on one clock', timeline: true, title: 'JVM timeline' });
  const known = new Set([...CPU_EVENTS, ...ALLOC_EVENTS, ...LOCK_EVENTS]);
  for (const t of r.types) if (r.stackTypes.includes(t.type) && !known.has(t.type) && t.count > 0) out.push({ label: t.type, description: `${t.count.toLocaleString('en-US')} events`, profile: [t.type], title: t.type });
  return out;
}

function read(file: string, request: { profile?: string[]; gc?: boolean; timeline?: boolean }): Promise<JfrReadResult> {
  return Promise.resolve(
    vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Reading ${path.basename(file)}`, cancellable: false }, async (progress) => {
      let last = 0;
      return readJfrInWorker({ file, ...request }, (done, total) => {
        const pct = (100 * done) / total;
        progress.report({ increment: pct - last, message: `${Math.round(done / 1e6)} of ${Math.round(total / 1e6)} MB` });
        last = pct;
      });
    }),
  );
}

/** Java frames name their source relative to a source root: the workspace's copies get the CodeLens. */
async function annotate(r: ProfileResult): Promise<void> {
  const rel = new Set<string>();
  for (const s of r.stacks) for (const f of s.frames) if (f.file && !f.file.startsWith('/') && !/^(java|javax|jdk|sun|com\/sun)\//.test(f.file) && rel.size < 200) rel.add(f.file);
  const abs = new Map<string, string>();
  for (const f of rel) {
    const hit = (await vscode.workspace.findFiles(`**/${f}`, '**/node_modules/**', 1))[0];
    if (hit) abs.set(f, hit.fsPath);
  }
  if (!abs.size) return;
  const stacks = r.stacks.map((s) => ({ ...s, frames: s.frames.map((f) => (f.file && abs.has(f.file) ? { ...f, file: abs.get(f.file)! } : f)) }));
  setAnnotations(annotationsFromResult({ ...r, stacks }));
}

/** The GC result as one update of the Java GC view (its clock starts at 1 s: 0 means "not yet" there). */
function gcUpdate(gc: JavaGcResult, durationNs: number): JavaGcUpdate {
  const base = 1e9;
  return {
    events: gc.events.map((e) => ({ ...e, timestampNs: e.timestampNs + base })),
    safepoints: gc.safepoints.events.map((s) => ({ ...s, timestampNs: s.timestampNs + base })),
    safepointsAvailable: gc.safepoints.available,
    ...(gc.safepoints.reason ? { safepointsReason: gc.safepoints.reason } : {}),
    lost: 0,
    pids: gc.pids,
    startNs: base,
    nowNs: base + durationNs,
  };
}

async function show(context: vscode.ExtensionContext, panel: vscode.WebviewPanel, file: string, choice: Choice, r: JfrReadResult): Promise<void> {
  const name = path.basename(file);
  const started = new Date(r.info.startNanos / 1e6);
  const title = `${choice.title}: ${name}`;
  if (choice.timeline && r.timeline) {
    showJvmResult(context, title, r.timeline, { reason: 'stopped', message: `recorded by JFR, ${started.toISOString()}` }, panel);
    return;
  }
  if (choice.gc && r.gc) {
    showSession(context, makeSession('java-gc', title, { target: `${name} (JFR, pid ${r.gc.pids[0] ?? '?'})`, updates: [gcUpdate(r.gc, r.info.durationNanos)], ended: { reason: 'stopped', message: 'recorded by JFR' } }, started), undefined, panel);
    return;
  }
  const p = r.profile!;
  const warnings = p.stacks.length ? [] : [`The recording has no ${choice.profile?.join(' or ')} events with stacks.`];
  showSession(context, makeSession('profile', title, { profile: fromProfileResult(p, { name: title, groupByProcess: false }), warnings }, started), undefined, panel);
  await annotate(p);
}

class JfrEditor implements vscode.CustomReadonlyEditorProvider {
  constructor(private readonly context: vscode.ExtensionContext) {}
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => {} };
  }
  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const file = document.uri.fsPath;
    try {
      if (document.uri.scheme !== 'file') throw new Error('only recordings on this machine\'s disk can be opened');
      // one pass for the counts and the CPU profile (what most recordings are opened for)
      const first = await read(file, { profile: CPU_EVENTS });
      const choices = jfrChoices(first);
      if (!choices.length) throw new Error(`the recording has ${first.types.reduce((a, t) => a + t.count, 0)} events but none with stacks and no GCs: nothing to draw (ebpf-studio jfr ${path.basename(file)} lists them)`);
      const choice = choices.length === 1 ? choices[0] : ((await vscode.window.showQuickPick(choices, { title: `${path.basename(file)}: which events?`, placeHolder: 'CPU samples open the flame graph; GCs the Java GC view' })) ?? choices[0]);
      const r = choice.profile?.join() === CPU_EVENTS.join() ? first : await read(file, { profile: choice.profile, gc: choice.gc, timeline: choice.timeline });
      await show(this.context, panel, file, choice, r);
    } catch (e) {
      showFailure(panel, `Cannot open ${path.basename(file)}`, errorText(e));
    }
  }
}

export function activate(context: vscode.ExtensionContext): void {
  registerRecordCommands(context);
  context.subscriptions.push(vscode.window.registerCustomEditorProvider('ebpfStudio.jfrFile', new JfrEditor(context), { webviewOptions: { retainContextWhenHidden: true }, supportsMultipleEditorsPerDocument: true }));
}
