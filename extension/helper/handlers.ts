// Requests beyond capabilities/processes/sessions (e.g. BPF authoring's verify) register here,
// one line per feature, so the helper's main file stays the same as features land.
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type { Addon } from '../native/addon';
import { registerAuthoringHandlers } from './authoringHandlers';
import { registerPrivilegedRunHandlers } from './privilegedRun';

export interface HandlerContext {
  addon(): Addon | undefined;
  assetDir: string;
  log(message: string): void;
  /** wraps a handler so StudioErrors become typed JSON-RPC errors */
  guard<P, R>(fn: (p: P) => R | Promise<R>): (p: P) => Promise<R>;
}

export type HandlerModule = (conn: MessageConnection, ctx: HandlerContext) => void;

export const extraHandlers: HandlerModule[] = [registerAuthoringHandlers, registerPrivilegedRunHandlers];
