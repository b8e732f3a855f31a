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

const listeners = new Map<number, Listener>();
/** notifications that arrived before run/start's answer told us the run id */
const early = new Map<number, (RunOutputParams | RunExitedParams)[]>();
const wired = new WeakSet<MessageConnection>();

function dispatch(p: RunOutputParams | RunExitedParams): void {
  const l = listeners.get(p.runId);
  if (!l) {
    early.set(p.runId, [...(early.get(p.runId) ?? []), p]);
    return;
  }
  if ('stream' in p) l.output(p);
  else {
    listeners.delete(p.runId);
    l.exited(p);
  }
}

function wire(conn: MessageConnection): void {
  if (wired.has(conn)) return;
  wired.add(conn);
  conn.onNotification(runOutput, dispatch);
  conn.onNotification(runExited, dispatch);
}

/** Modal confirmation; true only when the user chose to run as root. */
export async function confirmRoot(what: string): Promise<boolean> {
  const choice = await vscode.window.showWarningMessage(
    `Run ${what} as root?`,
    { modal: true, detail: 'It runs with the privileged helper\'s rights (root): it can do anything on this machine. Run only code you trust.' },
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
  const conn = await helper().connection();
  wire(conn);
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
      // Restricted Mode: the same rule as every other request that hands workspace content to the helper.
      const why = vscode.workspace.isTrusted === false ? trustNeededFor(runStart.method, params) : undefined;
      if (why) throw new Error(restrictedModeMessage(why));
      const started = await conn.sendRequest(runStart, params);
      runId = started.runId;
      say(`# ${started.command.join(' ')}   (pid ${started.pid}, as root; Ctrl-C stops it)\n`);
      listeners.set(runId, listener);
      for (const p of early.get(runId) ?? []) dispatch(p);
      early.delete(runId);
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
  return outcome;
}
