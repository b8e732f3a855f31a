// One error type for every expected failure, shared by the helper, the CLI and the extension.
// `kind` decides the CLI exit code and the JSON-RPC error code; the message always names the
// cause and the fix.

export type ErrorKind = 'usage' | 'input' | 'privilege' | 'unsuitable' | 'internal';

export const exitCodes: Record<ErrorKind, number> = {
  usage: 2,
  input: 2,
  privilege: 3,
  unsuitable: 4,
  internal: 1,
};

/** JSON-RPC application error codes (outside the -32768..-32000 reserved range). */
export const rpcErrorCodes: Record<ErrorKind, number> = {
  usage: 1002,
  input: 1002,
  privilege: 1003,
  unsuitable: 1004,
  internal: 1001,
};

export class StudioError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'StudioError';
  }
}

export const usageError = (m: string) => new StudioError('usage', m);
export const inputError = (m: string) => new StudioError('input', m);
export const privilegeError = (m: string, detail?: string) => new StudioError('privilege', m, detail);
export const unsuitableError = (m: string) => new StudioError('unsuitable', m);

export function kindFromRpcCode(code: number): ErrorKind {
  for (const [k, v] of Object.entries(rpcErrorCodes)) if (v === code) return k as ErrorKind;
  return 'internal';
}

const DEFAULT_PRIVILEGE_HINT = 'Tracing needs root (or CAP_BPF+CAP_PERFMON, and CAP_SYS_ADMIN for uprobes/USDT): run with sudo, or let the extension start its helper through pkexec.';
let privilegeHint = DEFAULT_PRIVILEGE_HINT;

/** Where sudo cannot help (inside an unprivileged container), what to say instead; set once at start-up. */
export function setPrivilegeHint(hint: string | undefined): void {
  privilegeHint = hint ? `${hint.charAt(0).toUpperCase()}${hint.slice(1)}.` : DEFAULT_PRIVILEGE_HINT;
}

/** Maps a libbpf failure (BpfError from the addon) to what a user should do about it. */
export function fromBpfError(what: string, err: unknown): StudioError {
  if (err instanceof StudioError) return err;
  const e = err as { errno?: number; code?: string; message?: string; log?: string };
  const msg = e?.message ?? String(err);
  if (e?.code === 'EPERM' || e?.code === 'EACCES') {
    return privilegeError(
      `${what}: ${msg}. ${privilegeHint}`,
      e.log,
    );
  }
  return new StudioError('internal', `${what}: ${msg}`, e?.log);
}
