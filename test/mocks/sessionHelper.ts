// A fake helper for the live views' feature tests: session/start gives s1, s2, …; the test sends
// the session's updates (`data`) and ends it (`end`); session/stop ends it as stopped, or — once
// `gone` is set, as when the window closes and the helper goes away — fails, as a dead helper's
// requests do. Only the client side runs: no BPF, no kernel.
import { EventEmitter } from './vscode';

export function sessionHelper() {
  const dataE = new EventEmitter<{ sessionId: string; update: unknown }>();
  const endedE = new EventEmitter<{ sessionId: string; reason: string; result?: unknown; message?: string }>();
  const deathE = new EventEmitter<unknown>();
  const started: { tracer: string; options: unknown }[] = [];
  const state = { gone: false };
  const helper = {
    onSessionData: dataE.event,
    onSessionEnded: endedE.event,
    onDidDie: deathE.event,
    request: async (type: { method: string }, p: { tracer?: string; options?: unknown; sessionId?: string }) => {
      if (state.gone) throw new Error('the connection is closed');
      if (type.method === 'session/start') {
        started.push({ tracer: p.tracer!, options: p.options });
        return { sessionId: `s${started.length}`, warnings: [] };
      }
      if (type.method === 'session/stop') {
        endedE.fire({ sessionId: p.sessionId!, reason: 'stopped' });
        return { result: undefined };
      }
      throw new Error(`unexpected ${type.method}`);
    },
  };
  return {
    helper: helper as never,
    started,
    state,
    data: (sessionId: string, update: unknown) => dataE.fire({ sessionId, update }),
    end: (sessionId: string, reason: string, message?: string) => endedE.fire({ sessionId, reason, message }),
  };
}
