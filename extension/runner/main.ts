// The runner: the root process that runs a user's own code (Run BPF Loader, Run bpftrace Script,
// Run BPF Program's bpf-run session, Load and Verify's bpf/verify). It is a separate process from
// the tracing helper so that running user code as root is its own, authenticated act: the editor
// starts one per run through its own launcher and polkit action (auth_admin, asked every time) or
// sudo with the password (never the helper's NOPASSWD rule), or directly when the editor already
// is root. Same JSON-RPC framing and checks as the helper (extension/helper/server.ts); it serves
// nothing but these requests, and exits when its stdin closes.
import { runServer, type ServerRole } from '../helper/server';
import { USER_CODE_TRACERS } from '../helper/handlers/userCodeRefusal';
import { registerPrivilegedRunHandlers } from './privilegedRun';
import { registerAuthoringHandlers } from './verify';

export const runnerRole: ServerRole = {
  name: 'runner',
  handlers: [registerAuthoringHandlers, registerPrivilegedRunHandlers],
  refuseTracer: (tracer) =>
    USER_CODE_TRACERS.includes(tracer) ? undefined : `refused: the runner only runs your own code (${USER_CODE_TRACERS.join(', ')}, run/*, bpf/verify); ${tracer} is a tracer of the tracing helper`,
};

if (require.main === module) runServer(runnerRole);
