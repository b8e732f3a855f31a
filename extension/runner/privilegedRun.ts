// Helper side of "Run BPF Loader" and "Run bpftrace Script": starts the program as root (the
// helper's own privileges), streams its output as run/output notifications and reports its end
// as run/exited. Single entry point registerPrivilegedRunHandlers, so the rules for who may ask
// (helper identity and confirmation) can wrap it in one place. No shell: the program
// is exec'd directly with a fixed environment; every child is killed when the editor goes away.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { LoaderMapReader } from '../authoring/loaderMaps';
import { loadedPrograms } from '../authoring/loaderPrograms';
import { stopProcess, type StopOutcome } from '../authoring/processStop';
import { runExited, runMaps, runOutput, runPrograms, runStart, runStop, type RunStartParams, type RunStartResult } from '../protocol/privilegedRun';
import { asObject, str } from '../protocol/validate';
import { inputError, StudioError } from '../protocol/errors';
import { findTool } from '../authoring/toolchain';
import { helperEnv } from '../privilege/launch';
import type { HandlerContext } from '../helper/context';

const MAX_RUNS = 8;
const MAX_ARGS = 64;

function absoluteFile(p: string, what: string, executable: boolean): string {
  if (!path.isAbsolute(p)) throw inputError(`${what} must be an absolute path, got "${p}"`);
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch {
    throw inputError(`${what} ${p} does not exist: build it first`);
  }
  if (!st.isFile()) throw inputError(`${what} ${p} is not a regular file`);
  if (executable && !(st.mode & 0o111)) throw inputError(`${what} ${p} is not executable: build it with its Makefile (make)`);
  return p;
}

/** Validates a run/start request into the command to exec. */
export function commandFor(raw: unknown): { command: string; args: string[]; cwd: string } {
  const o = asObject(raw);
  const kind = str(o, 'kind') as RunStartParams['kind'];
  const cwd = str(o, 'cwd');
  if (!path.isAbsolute(cwd) || !fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) throw inputError(`cwd must be an existing absolute folder, got "${cwd}"`);
  if (kind === 'bpftrace') {
    const script = absoluteFile(str(o, 'script'), 'the bpftrace script', false);
    const bpftrace = findTool('bpftrace');
    if (!bpftrace) throw new StudioError('unsuitable', 'bpftrace is not installed: sudo apt-get install -y bpftrace');
    return { command: bpftrace, args: [script], cwd };
  }
  if (kind === 'loader') {
    const executable = absoluteFile(str(o, 'executable'), 'the loader', true);
    const args = Array.isArray(o.args) ? o.args : [];
    if (args.length > MAX_ARGS || !args.every((a): a is string => typeof a === 'string' && a.length < 4096)) throw inputError(`args must be at most ${MAX_ARGS} strings`);
    return { command: executable, args, cwd };
  }
  throw inputError(`kind must be "loader" or "bpftrace", got "${kind}"`);
}

export function registerPrivilegedRunHandlers(conn: MessageConnection, ctx: HandlerContext): void {
  const runs = new Map<number, ChildProcess>();
  // Maps and programs are read in this process through BPF syscalls (authoring/loaderMaps.ts):
  // no bpftool exec()s that the traced program would see.
  const readers = new Map<number, LoaderMapReader>();
  const objects = new Map<number, string>();
  const stops = new Map<number, Promise<StopOutcome>>();
  let nextId = 1;
  const killAll = () => {
    for (const child of runs.values()) child.kill('SIGKILL');
  };
  conn.onClose(killAll);
  process.once('exit', killAll);

  conn.onRequest(
    runStart,
    ctx.guard((raw: unknown): RunStartResult => {
      if (runs.size >= MAX_RUNS) throw inputError(`${MAX_RUNS} programs are already running: stop one first`);
      const { command, args, cwd } = commandFor(raw);
      const runId = nextId++;
      const child = spawn(command, args, { cwd, env: helperEnv(false), stdio: ['ignore', 'pipe', 'pipe'] });
      if (child.pid === undefined) throw new StudioError('internal', `could not start ${command}`);
      runs.set(runId, child);
      // A project's loader X sits next to the X.bpf.o it loads: its sections name the attach points.
      if ((raw as { kind?: string }).kind === 'loader') objects.set(runId, `${command}.bpf.o`);
      for (const stream of ['stdout', 'stderr'] as const) {
        child[stream]!.setEncoding('utf8');
        child[stream]!.on('data', (data: string) => void conn.sendNotification(runOutput, { runId, stream, data }));
      }
      // 'close' comes after the pipes drained, so the last output arrives before the exit.
      child.on('close', (code, signal) => {
        runs.delete(runId);
        readers.delete(runId);
        objects.delete(runId);
        ctx.log(`run ${runId} (${path.basename(command)}) exited: ${signal ?? code}`);
        // After a Stop, its outcome ("stopped by SIGINT after 0.2 s") is the last output line.
        const stopping = stops.get(runId);
        stops.delete(runId);
        void (stopping ?? Promise.resolve(undefined)).then((o) => {
          if (o) void conn.sendNotification(runOutput, { runId, stream: 'stderr', data: `\n[eBPF Studio: ${o.report}]\n` });
          void conn.sendNotification(runExited, { runId, code, signal });
        });
      });
      child.on('error', (e) => void conn.sendNotification(runOutput, { runId, stream: 'stderr', data: `could not run ${command}: ${e.message}\n` }));
      ctx.log(`run ${runId}: ${command} ${args.join(' ')} (pid ${child.pid})`);
      return { runId, pid: child.pid, command: [command, ...args] };
    }),
  );
  conn.onRequest(
    runMaps,
    ctx.guard((raw: unknown) => {
      const runId = Number(asObject(raw).runId);
      const child = runs.get(runId);
      const addon = ctx.addon();
      if (child?.pid === undefined || !addon) return [];
      let reader = readers.get(runId);
      if (!reader) readers.set(runId, (reader = new LoaderMapReader(addon)));
      return reader.read(child.pid);
    }),
  );
  conn.onRequest(
    runPrograms,
    ctx.guard((raw: unknown) => {
      const runId = Number(asObject(raw).runId);
      const child = runs.get(runId);
      const addon = ctx.addon();
      return child?.pid === undefined || !addon ? [] : loadedPrograms(addon, child.pid, objects.get(runId));
    }),
  );
  conn.onRequest(
    runStop,
    ctx.guard((raw: unknown) => {
      const runId = Number(asObject(raw).runId);
      const child = runs.get(runId);
      if (!child) return { stopping: false };
      // SIGINT, then SIGTERM and SIGKILL after grace periods; the terminal is told which one worked.
      if (!stops.has(runId)) stops.set(runId, stopProcess(child).then((o) => (ctx.log(`run ${runId}: ${o.report}`), o)));
      return { stopping: true };
    }),
  );
}
