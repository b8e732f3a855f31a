// Commands: ebpfStudio.showRunQueueLatency ("Show Run Queue Latency": choose a scope — whole
// system, one process, per process, per thread, per PID namespace — and a unit, then watch
// run-queue latency live: histogram, heat map, per-key table). Context keys: none of its own
// (sessions.ts sets ebpfStudio.sessionRunning while the session runs).
import * as vscode from 'vscode';
import { saveExport } from '../ui/exportFile';
import type { RunqlatOptions, RunqlatPer, RunqlatUnit } from '../../protocol/runqlat';
import { RunqlatLive } from '../../model/runqlatLive';
import { pickProcess } from '../ui/processPicker';
import { startSession, type ClientSession } from '../sessions/liveSessions';
import { recordSession } from '../sessions/sessionStore';
import { LiveViewHost, RELOADED } from '../sessions/livePanel';
import { makeSession } from '../../model/sessionFile';
import { createViewPanel } from '../ui/webviewPanel';
import { showError } from '../ui/errors';
import type { FromView, ToView } from '../../../webview/runqlat/protocol';

interface ScopeItem extends vscode.QuickPickItem {
  per: RunqlatPer;
  oneProcess?: boolean;
}

const SCOPES: ScopeItem[] = [
  { label: '$(globe) Whole system', detail: 'One histogram of every thread’s waits', per: 'none' },
  { label: '$(symbol-method) One process…', detail: 'Only the threads of a process you pick', per: 'none', oneProcess: true },
  { label: '$(list-tree) Per process', detail: 'A histogram per process, in a table sortable by p99 or count', per: 'process' },
  { label: '$(list-flat) Per thread', detail: 'A histogram per thread id', per: 'thread' },
  { label: '$(package) Per PID namespace', detail: 'A histogram per PID namespace (containers)', per: 'pidns' },
];

async function pickOptions(): Promise<RunqlatOptions | undefined> {
  const scope = await vscode.window.showQuickPick(SCOPES, { title: 'Show Run Queue Latency: scope' });
  if (!scope) return undefined;
  let pid = 0;
  if (scope.oneProcess) {
    const picked = await pickProcess({ command: 'Show Run Queue Latency', title: 'Show Run Queue Latency: process' });
    if (!picked || !('process' in picked)) return undefined;
    pid = picked.process.pid;
  }
  const unit = await vscode.window.showQuickPick(
    [
      { label: 'Microseconds (µs)', unit: 'us' as RunqlatUnit },
      { label: 'Milliseconds (ms)', unit: 'ms' as RunqlatUnit },
    ],
    { title: 'Show Run Queue Latency: unit' },
  );
  if (!unit) return undefined;
  return { pid, per: scope.per, unit: unit.unit, intervalS: 1 };
}

export function scopeLabel(o: RunqlatOptions): string {
  const who = o.pid ? `pid ${o.pid}` : 'whole system';
  return o.per === 'none' ? who : `${who}, per ${o.per === 'pidns' ? 'PID namespace' : o.per}`;
}

async function show(context: vscode.ExtensionContext, options: RunqlatOptions): Promise<ClientSession<'runqlat'>> {
  const scope = scopeLabel(options);
  const host = new LiveViewHost<ToView, FromView>();
  const send = (m: ToView) => host.send(m);
  // The figures are kept as cumulative counts plus the most recent intervals (bounded however long
  // the session runs): the finished session is listed in the Sessions view and reopens from them.
  const live = new RunqlatLive();
  const document = (ended: { reason: 'stopped' | 'target-exited' | 'error'; message?: string }) =>
    makeSession('runqlat', `Run Queue Latency: ${scope}`, { scope, per: options.per, unit: options.unit, state: live.toJSON(), ended }, host.startedAt, new Date());
  const finish = (reason: 'stopped' | 'target-exited' | 'error', message?: string) =>
    host.finish(() => {
      // Once the window is closing the session is stored as the reload ended it, with the figures
      // of the checkpoint written then (updates stop counting at that moment).
      const ended = host.endedAs(reason, message);
      send({ type: 'ended', ...ended });
      void recordSession(document(ended), host.key);
    });
  const session = await startSession('runqlat', options, `Run queue latency (${scope})`, {
    onUpdate: (u) => {
      // After Stop the probes take a moment to detach; what arrives meanwhile is after the click, and not counted.
      if (!host.accepting) return;
      live.apply(u);
      send({ type: 'update', update: u });
    },
    onEnded: (reason, _result, message) => finish(reason, message),
  });
  host.checkpointWith(() => document({ reason: 'stopped', message: RELOADED }));
  const view = createViewPanel<ToView, FromView>(context, 'runqlat', `Run Queue Latency: ${scope}`, undefined, host.key);
  view.onReady(() => [{ type: 'init', scope, per: options.per, unit: options.unit }]);
  host.attach(view);
  for (const w of session.info.warnings) void vscode.window.showWarningMessage(`eBPF Studio: ${w}`);
  view.onMessage(async (m) => {
    switch (m.type) {
      case 'stop':
        // The view says "Stopped" at once, with the figures as of the click; the helper detaches after.
        finish('stopped');
        await session.stop();
        break;
      case 'export': {
        const outcome = await saveExport({ title: 'Export run-queue latency as JSON', baseName: 'runqlat', extension: 'json', filters: { JSON: ['json'] }, content: () => m.content });
        if (outcome) view.post({ type: 'exported', ...outcome });
        break;
      }
    }
  });
  view.panel.onDidDispose(() => void session.stop());
  return session;
}

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('ebpfStudio.showRunQueueLatency', async (given?: Partial<RunqlatOptions>) => {
      try {
        // Tests and other commands may pass the options directly.
        const options = given ? { pid: given.pid ?? 0, per: given.per ?? 'none', unit: given.unit ?? 'us', intervalS: given.intervalS ?? 1 } : await pickOptions();
        if (!options) return undefined;
        const s = await show(context, options);
        return s.id;
      } catch (e) {
        showError(e);
        return undefined;
      }
    }),
  );
}
