// Helper requests for running a user's program as root: a libbpf loader the user built
// ("eBPF: Run BPF Loader") or bpftrace on a script ("eBPF: Run bpftrace Script"). Running an
// arbitrary executable as root is root-equivalent, so the editor asks for a modal confirmation
// before it sends run/start (see extension/editor/features/bpf/bpfLoaderRun.ts).
import { NotificationType, RequestType } from 'vscode-jsonrpc';

export type RunStartParams =
  /** an executable the user built; runs with `args` in `cwd` */
  | { kind: 'loader'; executable: string; args: string[]; cwd: string }
  /** bpftrace (found by the helper on its safe PATH) on one script file */
  | { kind: 'bpftrace'; script: string; cwd: string };

export interface RunStartResult {
  runId: number;
  pid: number;
  /** the command line that runs, for the terminal's first line */
  command: string[];
}

export interface RunRef {
  runId: number;
}

export interface RunOutputParams {
  runId: number;
  stream: 'stdout' | 'stderr';
  data: string;
}

export interface RunExitedParams {
  runId: number;
  code: number | null;
  signal: string | null;
}

export const runStart = new RequestType<RunStartParams, RunStartResult, void>('run/start');
/** SIGINT first (bpftrace prints its maps, loaders clean up); SIGTERM 2 s later, SIGKILL 2 s after that; the outcome is reported as run/output on stderr */
export const runStop = new RequestType<RunRef, { stopping: boolean }, void>('run/stop');
export const runOutput = new NotificationType<RunOutputParams>('run/output');
export const runExited = new NotificationType<RunExitedParams>('run/exited');

/** The BPF maps the running program holds, read through BPF syscalls in the helper (tables; ring buffers named only). */
export const runMaps = new RequestType<RunRef, import('./bpfRun').MapView[], void>('run/maps');
/** The programs the running loader loaded (from its fds) with their sections and whether a link attaches them. */
export const runPrograms = new RequestType<RunRef, import('./bpfRun').ProgramState[], void>('run/programs');
