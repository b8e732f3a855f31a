// The contract every tracer implements. A tracer runs in the helper (for the editor) and in the
// CLI process (for scripts, tests, benchmarks): the same code, the same result document.
import type { OptionsOf, ResultOf, TracerName, UpdateOf } from '../protocol/protocol';
import type { Addon } from '../sys/addon';

export interface TracerEnv {
  addon: Addon;
  /** folder holding bpf/*.bpf.o, ebpf_studio.node and the other build outputs */
  assetDir: string;
  /** a diagnostic line (helper → output channel; CLI → stderr with --verbose) */
  log(message: string): void;
  /**
   * Whom the session acts for, when that is not this process's own euid: a helper raised to root
   * through pkexec/sudo sets the invoking user (sys/identity.ts) so that checks like "only
   * your own JVM" hold for that user, not for root. Unset (the CLI): the process's euid.
   */
  requester?: { uid: number; gid?: number; source?: string };
}

export interface SessionEvents<N extends TracerName> {
  /** live data, at most a few times a second */
  update(u: UpdateOf<N>): void;
  /** the session ended by itself (target exited, error); the session has already detached */
  ended(reason: 'target-exited' | 'error', message?: string): void;
}

export interface Session<N extends TracerName> {
  /** pids attached to (empty = system-wide) */
  readonly targets: number[];
  /** said once at start */
  readonly warnings: string[];
  /** the result so far, without stopping */
  snapshot(): ResultOf<N>;
  /** detaches everything and returns the final result; idempotent */
  stop(): Promise<ResultOf<N>>;
  /** sends an update with what was counted so far before it resolves (sessions whose updates are periodic reads of kernel maps) */
  refresh?(): Promise<void>;
}

export interface Tracer<N extends TracerName> {
  readonly name: N;
  /** turns untrusted params into options, or throws StudioError('input') naming the field */
  validate(raw: unknown): OptionsOf<N>;
  /** checks the target, loads and attaches; throws StudioError for every expected failure */
  start(options: OptionsOf<N>, env: TracerEnv, events: SessionEvents<N>): Promise<Session<N>>;
}

/** Type-erased form used by the registry and the session manager. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTracer = Tracer<any>;
