// Restricted Mode: requests that hand workspace content to the privileged helper (a BPF object
// to load, a command to run) need a trusted workspace. Everything else (tracing a pid, doctor)
// stays available, as package.json's capabilities.untrustedWorkspaces says.

/** Why `method` with `params` needs a trusted workspace, or undefined when it does not. */
export function trustNeededFor(method: string, params: unknown): string | undefined {
  const p = (params ?? {}) as { tracer?: unknown; options?: { launch?: unknown } };
  if (method === 'bpf/verify') return 'Load and Verify loads a BPF object from the workspace into the kernel';
  if (method === 'session/start' && p.tracer === 'bpf-run') return 'Run BPF Program loads a BPF object from the workspace into the kernel';
  if (method === 'session/start' && p.tracer === 'memleak' && p.options?.launch) return 'Run with Leak Tracing starts a program from the workspace';
  if (method === 'run/start') return 'Run BPF Loader and Run bpftrace Script run a program or script from the workspace as root';
  return undefined;
}

export function restrictedModeMessage(why: string): string {
  return `${why}, which Restricted Mode does not allow: trust this workspace first ("Workspaces: Manage Workspace Trust"). Tracing running processes works without trust.`;
}
