// The live panel of every log2-histogram tracer (runqlat, biolatency, ...): starts the session in
// the helper, feeds its intervals to the latency view (webview/common/latencyView.ts), keeps the
// figures bounded (HistLive) for the Sessions view and a reload, and answers Stop and Export.
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import type { HistOptions } from '../../protocol/histogram';
import { CATALOG, histogramOf, type HistogramTracer } from '../../protocol/catalog';
import type { OptionsOf, TargetContainer } from '../../protocol/protocol';
import { HistLive } from '../../model/histLive';
import { startSession, type ClientSession } from './liveSessions';
import { recordSession } from './sessionStore';
import { LiveViewHost, RELOADED } from './livePanel';
import { makeSession, type AnySessionFile, type HistSessionData } from '../../model/sessionFile';
import { createViewPanel } from '../ui/webviewPanel';
import type { FromView, ToView } from '../../../webview/common/latencyProtocol';

type Reason = 'stopped' | 'target-exited' | 'error';

/** "whole system, per process", "pid 42": what the panel's title and the Sessions view say. */
export function scopeLabel(tracer: HistogramTracer, o: HistOptions, where?: string): string {
  const who = where ?? (o.container ? `container ${o.container.slice(0, 12)}` : o.pid ? `pid ${o.pid}` : 'whole system');
  return o.per === 'none' ? who : `${who}, per ${histogramOf(tracer).keyNouns[o.per] ?? o.per}`;
}

async function onMessage(view: ReturnType<typeof createViewPanel<ToView, FromView>>, m: FromView, tracer: HistogramTracer, stop: () => Promise<void>): Promise<void> {
  switch (m.type) {
    case 'stop':
      await stop();
      break;
    case 'export': {
      const title = `Export ${CATALOG[tracer].title.toLowerCase()} as JSON`;
      const outcome = await saveExport({ title, baseName: tracer, extension: 'json', filters: { JSON: ['json'] }, content: () => m.content });
      if (outcome) view.post({ type: 'exported', ...outcome });
      break;
    }
  }
}

/** Opens a tracer's live panel on a new session; resolves once the session runs. */
/** `where`: the scope's words when the options alone would not name it well ("container shop", where the options hold its id). */
export async function openLiveView<N extends HistogramTracer>(context: vscode.ExtensionContext, tracer: N, options: OptionsOf<N> & HistOptions, where?: string): Promise<ClientSession<N>> {
  const scope = scopeLabel(tracer, options, where);
  const name = histogramOf(tracer).editor.title;
  const host = new LiveViewHost<ToView, FromView>();
  const send = (m: ToView) => host.send(m);
  // The figures are kept as cumulative counts plus the most recent intervals (bounded however long
  // the session runs): the finished session is listed in the Sessions view and reopens from them.
  const live = new HistLive();
  // where the scope's process or container runs, as the helper named it at the start
  let container: TargetContainer | null | undefined;
  const document = (ended: { reason: Reason; message?: string }) =>
    // One shape for every histogram tracer: the union of their session files is this one file.
    makeSession<HistogramTracer>(tracer, `${name}: ${scope}`, { scope, ...(container !== undefined ? { container } : {}), per: options.per, unit: options.unit, state: live.toJSON(), ended } satisfies HistSessionData, host.startedAt, new Date()) as AnySessionFile;
  const finish = (reason: Reason, message?: string) =>
    host.finish(() => {
      // Once the window is closing the session is stored as the reload ended it, with the figures
      // of the checkpoint written then (updates stop counting at that moment).
      const ended = host.endedAs(reason, message);
      send({ type: 'ended', ...ended });
      void recordSession(document(ended), host.key);
    });
  const session = await startSession(tracer, options, `${CATALOG[tracer].title} (${scope})`, {
    onUpdate: (u) => {
      // After Stop the probes take a moment to detach; what arrives meanwhile is after the click, and not counted.
      if (!host.accepting) return;
      live.apply(u as never);
      send({ type: 'update', update: u as never });
    },
    onEnded: (reason, _result, message) => finish(reason, message),
  });
  container = session.info.container;
  host.checkpointWith(() => document({ reason: 'stopped', message: RELOADED }));
  const view = createViewPanel<ToView, FromView>(context, CATALOG[tracer].sessionView, `${name}: ${scope}`, undefined, host.key);
  view.onReady(() => [{ type: 'init', tracer, scope, per: options.per, unit: options.unit }]);
  host.attach(view);
  for (const w of session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  // The view says "Stopped" at once, with the figures as of the click; the helper detaches after.
  const stop = async () => {
    finish('stopped');
    await session.stop();
  };
  view.onMessage((m) => onMessage(view, m, tracer, stop));
  view.panel.onDidDispose(() => void session.stop());
  return session;
}
