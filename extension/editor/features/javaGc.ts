// Commands: ebpfStudio.traceJavaGc ("Trace Java GC": pick a running JVM, every JVM, or a pid,
// then watch GC pauses live in a webview). Context keys: none of its own (sessions.ts sets
// ebpfStudio.sessionRunning while the session runs).
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import * as proto from '../../protocol/protocol';
import type { JavaGcOptions, JavaGcResult } from '../../protocol/javaGc';
import { GcLive } from '../../model/javaGcLive';
import { pickProcess } from '../ui/processPicker';
import { startSession, type ClientSession } from '../sessions/liveSessions';
import { recordSession } from '../sessions/sessionStore';
import { LiveViewHost, RELOADED } from '../sessions/livePanel';
import { makeSession } from '../../model/sessionFile';
import { createViewPanel } from '../ui/webviewPanel';
import { showError } from '../ui/errors';
import { noUsdtMessage } from '../../sys/proc/processes';
import type { FromView, ToView } from '../../../webview/javaGc/protocol';

interface AllJvmsItem extends vscode.QuickPickItem {
  options: JavaGcOptions;
}

/** The choice above the JVMs: attach to every libjvm.so, so JVMs that start later are traced too. */
export const ALL_JVMS: AllJvmsItem = {
  label: '$(globe) All JVMs, including ones that start later',
  detail: 'Attaches to every libjvm.so with USDT probes (installed JDKs and running JVMs)',
  options: { pid: 0, all: true, minUs: 0 },
};

/** Why a JVM's GC pauses cannot be traced: its libjvm.so has no USDT probes (shown on its row and said when it is picked). */
export function noUsdtRefusal(p: proto.ProcessInfo): string | undefined {
  return p.jvm && !p.jvm.usdt ? noUsdtMessage(p.jvm.libjvm) : undefined;
}

async function pickTarget(): Promise<JavaGcOptions | undefined> {
  const picked = await pickProcess<AllJvmsItem>({
    command: 'Trace Java GC',
    jvmOnly: true,
    placeHolder: 'Pick a JVM, trace every JVM, or type a pid',
    top: [ALL_JVMS],
    refuse: noUsdtRefusal,
  });
  if (!picked) return undefined;
  if ('extra' in picked) return picked.extra.options;
  return { pid: picked.process.pid, all: false, minUs: 0 };
}

async function trace(context: vscode.ExtensionContext, options: JavaGcOptions): Promise<ClientSession<'java-gc'> | undefined> {
  const target = options.all ? 'every JVM' : `pid ${options.pid}`;
  const host = new LiveViewHost<ToView, FromView>();
  const send = (m: ToView) => host.send(m);
  // The figures are kept as running aggregates plus the most recent events (bounded however long
  // the session runs): the finished session is listed in the Sessions view and reopens from them.
  const live = new GcLive();
  const title = `Java GC: ${target}`;
  // where the JVM runs, as the helper named it at the start (the container may be gone by the end)
  let container: proto.TargetContainer | null | undefined;
  const document = (ended: { reason: 'stopped' | 'target-exited' | 'error'; message?: string }) =>
    makeSession('java-gc', title, { target, ...(container !== undefined ? { container } : {}), state: live.toJSON(), ended }, host.startedAt, new Date());
  const finish = (reason: 'stopped' | 'target-exited' | 'error', message?: string) =>
    host.finish(() => {
      // Once the window is closing the session is stored as the reload ended it, with the figures
      // of the checkpoint written then (updates stop counting at that moment).
      const ended = host.endedAs(reason, message);
      send({ type: 'ended', ...ended });
      void recordSession(document(ended), host.key);
    });
  const session = await startSession('java-gc', { ...options, boundedResult: true }, `Java GC ${target}`, {
    onUpdate: (u) => {
      // After Stop the probes take a moment to detach (about a second for USDT probes); what
      // arrives meanwhile is after the click, and not counted.
      if (!host.accepting) return;
      live.apply(u);
      send({ type: 'update', update: u });
    },
    onEnded: (reason, _result: JavaGcResult | undefined, message) => finish(reason, message),
  });
  container = session.info.container;
  host.checkpointWith(() => document({ reason: 'stopped', message: RELOADED }));
  const view = createViewPanel<ToView, FromView>(context, 'javaGc', `Java GC: ${target}`, undefined, host.key);
  view.onReady(() => [{ type: 'init', target }]);
  host.attach(view);
  for (const w of session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  const disposables: vscode.Disposable[] = [];
  disposables.push(
    view.onMessage(async (m) => {
      switch (m.type) {
        case 'stop':
          // The view says "Stopped" at once, with the figures as of the click; the helper detaches after.
          finish('stopped');
          await session.stop();
          break;
        case 'export': {
          const outcome = await saveExport({
            title: `Export Java GC data as ${m.format.toUpperCase()}`,
            baseName: 'java-gc',
            extension: m.format,
            filters: m.format === 'json' ? { JSON: ['json'] } : { CSV: ['csv'] },
            content: () => m.content,
          });
          if (outcome) view.post({ type: 'exported', ...outcome });
          break;
        }
      }
    }),
  );
  view.panel.onDidDispose(() => {
    disposables.forEach((d) => d.dispose());
    void session.stop();
  });
  return session;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.traceJavaGc', async (given?: Partial<JavaGcOptions>) => {
      try {
        // Tests and other commands may pass the target directly.
        const options = given && (given.pid || given.all) ? { pid: given.pid ?? 0, all: Boolean(given.all), minUs: given.minUs ?? 0 } : await pickTarget();
        if (!options) return undefined;
        const s = await trace(context, options);
        return s?.id;
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
  );
}
