// What every request handler of the helper is given: the addon (loaded once, at first use), the
// folder of the built BPF objects, the log, and the guard that turns StudioErrors into typed
// JSON-RPC errors. Handlers import this, never main.ts, so no handler depends on another.
import type { Addon } from '../sys/addon';

export interface HandlerContext {
  addon(): Addon | undefined;
  assetDir: string;
  log(message: string): void;
  /** wraps a handler so StudioErrors become typed JSON-RPC errors */
  guard<P, R>(fn: (p: P) => R | Promise<R>): (p: P) => Promise<R>;
}

