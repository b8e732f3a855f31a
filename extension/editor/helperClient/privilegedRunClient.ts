// Editor side of the helper's run/start: asks the user to confirm running a program as root
// (modal; it is root-equivalent, like loading a BPF object), starts it through the helper, and
// shows its output in a terminal fed by run/output. Ctrl-C or closing the terminal sends
// run/stop. Shared by "Run BPF Loader" and "Run bpftrace Script".
import * as vscode from 'vscode';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { helper } from './helperClient';
import { restrictedModeMessage, trustNeededFor } from '../ui/workspaceTrust';
import { runExited, runOutput, runStart, runStop, type RunExitedParams, type RunOutputParams, type RunStartParams } from '../../protocol/privilegedRun';

interface Listener {
  output(p: RunOutputParams): void;
  exited(p: RunExitedParams): void;
}

interface RunState {
  listeners: Map<number, Listener>;
  /** notifications that arrived before run/start's answer told us the run id */
  early: Map<number, (RunOutputParams | RunExitedParams)[]>;
}

/** Run ids are per runner process, so the listeners are kept per connection. */
const states = new WeakMap<MessageConnection, RunState>();

function dispatch(st: RunState, p: RunOutputParams | RunExitedParams): void {
  const l = st.listeners.get(p.runId);
  if (!l) {
    st.early.set(p.runId, [...(st.early.get(p.runId) ?? []), p]);
    return;
  }
  if ('stream' in p) l.output(p);
  else {
    st.listeners.delete(p.runId);
    l.exited(p);
  }
}

function wire(conn: MessageConnection): RunState {
  const known = states.get(conn);
  if (known) return known;
  const st: RunState = { listeners: new Map(), early: new Map() };
  states.set(conn, st);
  conn.onNotification(runOutput, (p) => dispatch(st, p));
  conn.onNotification(runExited, (p) => dispatch(st, p));
  return st;
}

/** Modal confirmation; true only when the user chose to run as root. */
export async function confirmRoot(what: string): Promise<boolean> {
  const choice = await vscode.window.showWarningMessage(
    `Run ${what} as root?`,
    { modal: true, detail: 'It runs as root (the eBPF Studio runner asks for authentication for this run): it can do anything on this machine. Run only code you trust.' },
    'Run as Root',
  );
  return choice === 'Run as Root';
}

export interface RunOutcome {
  code: number | null;
  signal: string | null;
  stdout: string;
}

/** Starts the run and a terminal named `name` showing it; resolves when the program exits. */
export async function runInTerminal(params: RunStartParams, name: string, onStarted?: (runId: number, conn: MessageConnection) => void): Promise<RunOutcome> {
  // Restricted Mode: the same rule as every other request that hands workspace content to root.
  const why = vscode.workspace.isTrusted === false ? trustNeededFor(runStart.method, params) : undefined;
  if (why) throw new Error(restrictedModeMessage(why));
  // One runner per run (extension/runner/): authenticated for this run, gone when it ends.
  const runner = helper().newRunner();
  let conn: MessageConnection;
  try {
    conn = await runner.connection();
  } catch (e) {
    runner.dispose();
    throw e;
  }
  const st = wire(conn);
  const write = new vscode.EventEmitter<string>();
  let opened = false;
  let pending = '';
  const say = (s: string) => {
    const text = s.replace(/\r?\n/g, '\r\n');
    if (opened) write.fire(text);
    else pending += text;
  };
  let stdout = '';
  let runId: number | undefined;
  let exitedAlready = false;
  const stop = () => {
    if (runId !== undefined && !exitedAlready) void conn.sendRequest(runStop, { runId }).catch(() => undefined);
  };
  const outcome = new Promise<RunOutcome>((resolve) => {
    const listener: Listener = {
      output: (p) => {
        if (p.stream === 'stdout') stdout += p.data;
        say(p.data);
      },
      exited: (p) => {
        exitedAlready = true;
        say(`\n[${p.signal ? `stopped by ${p.signal}` : `exited with code ${p.code}`}]\n`);
        resolve({ code: p.code, signal: p.signal, stdout });
      },
    };
    void (async () => {
      const started = await conn.sendRequest(runStart, params);
      runId = started.runId;
      say(`# ${started.command.join(' ')}   (pid ${started.pid}, as root; Ctrl-C stops it)\n`);
      st.listeners.set(runId, listener);
      for (const p of st.early.get(runId) ?? []) dispatch(st, p);
      st.early.delete(runId);
      if (!exitedAlready) onStarted?.(runId, conn);
    })().catch((e: unknown) => {
      say(`error: ${(e as Error).message}\n`);
      resolve({ code: null, signal: null, stdout });
    });
  });
  const pty: vscode.Pseudoterminal = {
    onDidWrite: write.event,
    open: () => {
      opened = true;
      if (pending) write.fire(pending);
      pending = '';
    },
    close: stop,
    handleInput: (data) => {
      if (data === '\x03') stop();
    },
  };
  vscode.window.createTerminal({ name, pty }).show(true);
  // The runner exits (closing its stdin) once its run is over.
  void outcome.finally(() => runner.dispose());
  return outcome;
}
