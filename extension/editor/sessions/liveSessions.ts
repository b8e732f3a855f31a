// Client side of tracing sessions: starts them through the helper, routes the helper's
// notifications to each session's handlers, ends them all (data kept) when the helper dies,
// and shows a status-bar item while any runs. Commands: ebpfStudio.stopSessions.
// Context keys: ebpfStudio.sessionRunning.
import * as vscode from 'vscode';
import * as proto from '../../protocol/protocol';
import { describeDeath, helper } from '../helperClient/helperClient';

export interface SessionHandlers<N extends proto.TracerName> {
  onUpdate(update: proto.UpdateOf<N>): void;
  onEnded(reason: proto.EndReason, result: proto.ResultOf<N> | undefined, message?: string): void;
}

export interface ClientSession<N extends proto.TracerName> {
  readonly id: string;
  readonly info: proto.SessionStartResult;
  readonly label: string;
  stop(): Promise<proto.ResultOf<N> | undefined>;
  snapshot(): Promise<proto.ResultOf<N> | undefined>;
}

interface Live {
  label: string;
  tracer: proto.TracerName;
  handlers: SessionHandlers<proto.TracerName>;
  stop(): Promise<unknown>;
}

const live = new Map<string, Live>();
let statusItem: vscode.StatusBarItem | undefined;
const liveChanged = new vscode.EventEmitter<void>();
/** Fires when a session starts or ends (the Sessions view listens). */
export const onDidChangeLiveSessions = liveChanged.event;

/** The sessions running now, for the Sessions view. */
export function liveSessions(): { id: string; label: string; tracer: proto.TracerName; stop(): Promise<unknown> }[] {
  return [...live.entries()].map(([id, l]) => ({ id, label: l.label, tracer: l.tracer, stop: l.stop }));
}

function refreshStatus(): void {
  liveChanged.fire();
  void vscode.commands.executeCommand('setContext', 'ebpfStudio.sessionRunning', live.size > 0);
  if (!statusItem) return;
  if (live.size === 0) {
    statusItem.hide();
    return;
  }
  const labels = [...live.values()].map((l) => l.label);
  statusItem.text = `$(pulse) eBPF: ${live.size === 1 ? labels[0] : `${live.size} sessions`}`;
  statusItem.tooltip = `Tracing: ${labels.join(', ')}. Click to show the sessions.`;
  statusItem.show();
}

let runnerSessions = 0;

export async function startSession<N extends proto.TracerName>(tracer: N, options: proto.OptionsOf<N>, label: string, handlers: SessionHandlers<N>): Promise<ClientSession<N>> {
  // A session that loads the user's own BPF object runs in a runner of its own (authenticated for
  // it, ended with it); every other session in the window's tracing helper.
  const runner = tracer === 'bpf-run' ? helper().newRunner() : undefined;
  const h = runner ?? helper();
  let info: proto.SessionStartResult;
  try {
    info = await h.request(proto.sessionStart, { tracer, options } as proto.SessionStartParams);
  } catch (e) {
    runner?.dispose();
    throw e;
  }
  const id = info.sessionId;
  // Runner session ids restart at s1 in each runner: keyed apart from the helper's.
  const key = runner ? `runner${++runnerSessions}-${id}` : id;
  if (runner) {
    const subs = [
      runner.onSessionData((p) => live.get(key)?.handlers.onUpdate(p.update)),
      runner.onSessionEnded((p) => finish(key, p.reason, p.result, p.message)),
      runner.onDidDie((d) => finish(key, 'error', undefined, `the runner died (${describeDeath(d)}); data so far is kept`)),
    ];
    ended.set(key, () => {
      subs.forEach((d) => d.dispose());
      runner.dispose();
    });
  }
  const stop = async () => {
    if (!live.has(key)) return undefined;
    try {
      const r = await h.request(proto.sessionStop, { sessionId: id });
      return r.result as proto.ResultOf<N>;
    } catch {
      // The helper may have died or ended the session already; the ended path reports it.
      finish(key, 'error', undefined, 'the helper is gone');
      return undefined;
    }
  };
  live.set(key, { label, tracer, handlers: handlers as unknown as SessionHandlers<proto.TracerName>, stop });
  refreshStatus();
  return {
    id: key,
    info,
    label,
    stop,
    async snapshot() {
      if (!live.has(key)) return undefined;
      const r = await h.request(proto.sessionSnapshot, { sessionId: id });
      return r.result as proto.ResultOf<N>;
    },
  };
}

/** Per runner session: unsubscribes and ends its runner once the session has ended. */
const ended = new Map<string, () => void>();

function finish(id: string, reason: proto.EndReason, result: unknown, message?: string): void {
  const l = live.get(id);
  if (!l) return;
  live.delete(id);
  refreshStatus();
  l.handlers.onEnded(reason, result as never, message);
  const end = ended.get(id);
  ended.delete(id);
  end?.();
}

export function activate(context: vscode.ExtensionContext): void {
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  // The Sessions view lists each session with its own Stop.
  statusItem.command = 'ebpfStudio.sessions.focus';
  context.subscriptions.push(statusItem);
  const h = helper();
  context.subscriptions.push(
    h.onSessionData((p) => live.get(p.sessionId)?.handlers.onUpdate(p.update)),
    h.onSessionEnded((p) => finish(p.sessionId, p.reason, p.result, p.message)),
    h.onDidDie((d) => {
      const ids = [...live.keys()].filter((k) => !ended.has(k)); // runner sessions live in their own process
      for (const id of ids) finish(id, 'error', undefined, `the helper died (${describeDeath(d)}); data so far is kept`);
      if (ids.length) void vscode.window.showErrorMessage(`eBPF Studio: the privileged helper died (${describeDeath(d)}). Sessions were ended with their data kept; the next command restarts it.`);
    }),
    vscode.commands.registerCommand('ebpfStudio.stopSessions', async () => {
      const picks = [...live.entries()].map(([id, l]) => ({ label: l.label, id }));
      if (picks.length === 0) return;
      const chosen = picks.length === 1 ? picks : await vscode.window.showQuickPick(picks, { canPickMany: true, title: 'Stop tracing sessions' });
      for (const c of chosen ?? []) await live.get(c.id)?.stop();
    }),
    { dispose: () => void Promise.allSettled([...live.values()].map((l) => l.stop())) },
  );
  refreshStatus();
}
