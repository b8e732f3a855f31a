// Java heap leaks in the editor: what Find Memory Leaks does when the picked process is a JVM.
// Runs the java-heap tracer (extension/tracers/javaHeap) through the helper, puts a CodeLens on
// each workspace Java line whose objects are still alive after GCs ("≈ 48 MB live in 12 k byte[] ·
// survived 9 GCs · +2.1 MB/s", ⚠ on leak candidates), and shows the live sites in the leak view
// (webview/memleak, its own panel). Commands: ebpfStudio.showJavaHeapSite (what a lens runs).
// A finished session is recorded like the other tracers' (listed in the Sessions view, reopened
// with the same rows); while it runs it is checkpointed, so a window reload brings the panel back
// stopped with its figures (the panel is an ebpfStudio.memleak panel: that view's serializer).
// Java frames name their source relative to a source root ("com/x/Foo.java"): the workspace is
// searched for it once per file.
import * as vscode from 'vscode';
import * as proto from '../../../protocol/protocol';
import { JAVA_HEAP_DEFAULT_INTERVAL_BYTES, type JavaHeapResult, type JavaHeapStack } from '../../../protocol/javaHeap';
import { helper } from '../../helperClient/helperClient';
import { startSession, type ClientSession } from '../../sessions/liveSessions';
import { checkpointWhileRunning, newSessionKey, recordSession } from '../../sessions/sessionStore';
import { makeSession } from '../../../model/sessionFile';
import { javaHeapSnapshot, javaHeapStackKey as stackKey, javaHeapViewStacks, javaLeakLenses, type JavaHeapViewData, type JavaLeakLens } from '../../../model/javaHeapReport';
import { LeakPanel, pushHistory } from './leakPanel';

interface State {
  pid: number;
  title: string;
  running: boolean;
  stacks: JavaHeapStack[];
  totalBytes: number;
  totalAllocations: number;
  history: Map<string, number[]>;
  lenses: JavaLeakLens[];
  sampleBytes: number;
  result?: JavaHeapResult;
  /** the key the Sessions view and the panel serializer know this session by */
  key: string;
  startedAt: Date;
}

let state: State | undefined;
let session: ClientSession<'java-heap'> | undefined;
let panel: LeakPanel | undefined;
const lensesChanged = new vscode.EventEmitter<void>();
/** source-root-relative Java path → the workspace file, or null when the workspace has none */
const found = new Map<string, string | null>();

async function findSources(stacks: JavaHeapStack[]): Promise<void> {
  const wanted = new Set<string>();
  for (const s of stacks) for (const f of s.frames) if (f.file && !found.has(f.file)) wanted.add(f.file);
  await Promise.all(
    [...wanted].map(async (rel) => {
      const hit = await vscode.workspace.findFiles(`**/${rel}`, '**/node_modules/**', 1);
      found.set(rel, hit[0]?.fsPath ?? null);
    }),
  );
}

async function absorb(stacks: JavaHeapStack[], totals: { bytes: number; allocations: number }): Promise<void> {
  const s = state;
  if (!s) return;
  await findSources(stacks);
  if (state !== s) return;
  s.stacks = stacks;
  s.totalBytes = totals.bytes;
  s.totalAllocations = totals.allocations;
  for (const st of stacks) pushHistory(s.history, stackKey(st), st.bytes);
  s.lenses = javaLeakLenses(stacks, (rel) => found.get(rel) ?? undefined);
  lensesChanged.fire();
  postSnapshot();
}

/** The session as the view shows it: what postSnapshot sends and what a saved session keeps. */
function viewData(s: State): JavaHeapViewData {
  return { pid: s.pid, totalBytes: s.totalBytes, totalAllocations: s.totalAllocations, sampleBytes: s.sampleBytes, stacks: javaHeapViewStacks(s.stacks, s.history, s.lenses) };
}

function postSnapshot(): void {
  panel?.postSnapshot();
}

async function openSource(file: string, line: number): Promise<void> {
  const abs = file.startsWith('/') ? file : (found.get(file) ?? (await vscode.workspace.findFiles(`**/${file}`, '**/node_modules/**', 1))[0]?.fsPath);
  if (!abs) {
    void vscode.window.showWarningMessage(`eBPF Studio: ${file} is not in this workspace (a JDK or library class?)`);
    return;
  }
  const pos = new vscode.Position(Math.max(0, line - 1), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(abs), { selection: new vscode.Range(pos, pos), viewColumn: vscode.ViewColumn.One });
}

function openView(context: vscode.ExtensionContext, focusSite?: string): void {
  panel ??= new LeakPanel(context, {
    title: () => 'Java Heap Leaks',
    sessionKey: () => state?.key,
    // sessionKey: one panel shows each new session, and a reload must restore the last one
    snapshot: () => (state ? { ...javaHeapSnapshot(state.title, state.running, viewData(state)), sessionKey: state.key } : undefined),
    onMessage: async (m) => {
      if (m.type === 'openFrame') {
        await openSource(m.file, m.line);
      } else if (m.type === 'export' && state) {
        const doc = state.result ?? { stacks: state.stacks };
        const uri = await vscode.window.showSaveDialog({ title: 'Export Java heap leaks as JSON', filters: { JSON: ['json'] } });
        if (uri) await vscode.workspace.fs.writeFile(uri, Buffer.from(JSON.stringify(doc, null, 2)));
      } else if (m.type === 'stop') {
        await session?.stop();
      }
    },
  });
  panel.open(focusSite);
}

/** Whether the helper sees `pid` as a JVM (it reads /proc as root: any user's process). */
export async function isJvmTarget(pid: number): Promise<boolean> {
  const jvms = await helper().request(proto.listProcesses, { jvmOnly: true });
  return jvms.some((p) => p.pid === pid && p.jvm);
}

export async function traceJavaHeap(context: vscode.ExtensionContext, pid: number): Promise<ClientSession<'java-heap'>> {
  if (session) await session.stop();
  const intervalBytes = JAVA_HEAP_DEFAULT_INTERVAL_BYTES;
  const fresh: State = { pid, title: `Java heap leaks of pid ${pid}`, running: true, stacks: [], totalBytes: 0, totalAllocations: 0, history: new Map(), lenses: [], sampleBytes: intervalBytes, key: newSessionKey(), startedAt: new Date() };
  state = fresh;
  let checkpoint: { done(): void } | undefined;
  const record = () => void recordSession(makeSession('java-heap', fresh.title, viewData(fresh), fresh.startedAt, new Date()), fresh.key);
  const s = await startSession('java-heap', { pid, intervalBytes, top: 200, intervalS: 2 }, fresh.title, {
    onUpdate: (u) => {
      if (state === fresh) void absorb(u.stacks, { bytes: u.totalBytes, allocations: u.totalAllocations });
    },
    onEnded: (reason, result, message) => {
      if (session === s) session = undefined;
      checkpoint?.done();
      fresh.running = false;
      if (state !== fresh) {
        // a newer session replaced this one in the view: keep this one's figures in the Sessions view
        record();
        return;
      }
      if (result) {
        fresh.result = result;
        // recorded once the final figures are in (absorb looks up the workspace sources first)
        void absorb(result.stacks, { bytes: result.stacks.reduce((a, x) => a + x.bytes, 0), allocations: result.stacks.reduce((a, x) => a + x.allocations, 0) }).then(record, record);
      } else {
        postSnapshot();
        record();
      }
      const leaks = fresh.lenses.filter((l) => l.leakCandidate).length;
      const why = reason === 'error' ? `ended: ${message ?? 'error'}` : reason === 'target-exited' ? (message ?? 'the JVM exited') : 'stopped';
      void vscode.window.showInformationMessage(`eBPF Studio: Java heap tracing ${why}. ${fresh.lenses.length} live site${fresh.lenses.length === 1 ? '' : 's'} in the workspace, ${leaks} leak candidate${leaks === 1 ? '' : 's'} (CodeLenses on the lines).`, 'Show Leaks').then((c) => {
        if (c) openView(context);
      });
    },
  });
  session = s;
  // written while it runs (a session that failed to start has nothing to keep)
  if (fresh.running) checkpoint = checkpointWhileRunning(fresh.key, () => makeSession('java-heap', fresh.title, viewData(fresh), fresh.startedAt, new Date()));
  openView(context);
  return s;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    lensesChanged,
    vscode.languages.registerCodeLensProvider(
      { scheme: 'file' },
      {
        onDidChangeCodeLenses: lensesChanged.event,
        provideCodeLenses(doc) {
          const file = doc.uri.fsPath;
          return (state?.lenses ?? [])
            .filter((l) => l.file === file && l.line <= doc.lineCount)
            .map((l) => new vscode.CodeLens(doc.lineAt(l.line - 1).range, { title: l.text, command: 'ebpfStudio.showJavaHeapSite', arguments: [l.key], tooltip: 'Show this allocation site in the Java heap leak view' }));
        },
      },
    ),
    vscode.commands.registerCommand('ebpfStudio.showJavaHeapSite', (key?: string) => openView(context, key)),
    { dispose: () => void session?.stop() },
  );
}
