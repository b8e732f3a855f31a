// The privileged helper: the only process that traces. It speaks JSON-RPC on its stdin/stdout
// (so only its parent can talk to it), validates every request, never spawns a shell, never runs
// user code as root (that is the runner's, extension/runner/), and detaches everything and exits
// when stdin closes or on SIGTERM/SIGINT.
import { runServer, type ServerRole } from './server';
import { extraHandlers } from './handlers';
import { USER_CODE_TRACERS, userCodeRefusal } from './handlers/userCodeRefusal';

export { createHelperServer, guard, type HelperIo } from './server';

/** The tracing helper: every tracer but the ones that load a user's own BPF object. */
export const helperRole: ServerRole = {
  name: 'helper',
  handlers: extraHandlers,
  refuseTracer: (tracer) => (USER_CODE_TRACERS.includes(tracer) ? userCodeRefusal(`session/start of the ${tracer} tracer`) : undefined),
};

if (require.main === module) runServer(helperRole);
