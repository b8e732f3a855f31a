// The tracing helper never runs or loads a user's code as root: Run BPF Loader, Run bpftrace
// Script (run/*), Load and Verify (bpf/verify) and Run BPF Program (the bpf-run tracer) are
// root-equivalent, so they go through the runner (extension/runner/), which authenticates every
// time. Here they get an error that names that path, so a caller of the helper's password-less
// rule cannot reach them.
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { bpfVerify } from '../../protocol/authoring';
import { runMaps, runStart, runStop } from '../../protocol/privilegedRun';
import { StudioError } from '../../protocol/errors';
import type { HandlerContext } from '../context';

/** Tracers that load a user's own BPF object: served by the runner only. */
export const USER_CODE_TRACERS: readonly string[] = ['bpf-run'];

export function userCodeRefusal(what: string): string {
  return (
    `refused: ${what} runs your own code as root, which the tracing helper never does. ` +
    'It goes through the eBPF Studio runner, which asks for authentication every time: the editor starts it for Run BPF Loader, Run bpftrace Script, Run BPF Program and Load and Verify; ' +
    'from a shell run the CLI as root (sudo ebpf-studio verify …).'
  );
}

export function registerUserCodeRefusals(conn: MessageConnection, ctx: HandlerContext): void {
  const refuse = (what: string) =>
    ctx.guard(() => {
      throw new StudioError('privilege', userCodeRefusal(what));
    });
  conn.onRequest(runStart, refuse('run/start (Run BPF Loader, Run bpftrace Script)'));
  conn.onRequest(runStop, refuse('run/stop'));
  conn.onRequest(runMaps, refuse('run/maps'));
  conn.onRequest(bpfVerify, refuse('bpf/verify (Load and Verify)'));
}
