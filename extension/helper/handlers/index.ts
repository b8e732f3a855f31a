// Requests beyond capabilities/processes/sessions (e.g. BPF authoring's verify) register here,
// one line per feature, so the helper's main file stays the same as features land.
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type { HandlerContext } from '../context';
import { registerAuthoringHandlers } from './authoring';
import { registerPrivilegedRunHandlers } from './privilegedRun';

export type HandlerModule = (conn: MessageConnection, ctx: HandlerContext) => void;

export const extraHandlers: HandlerModule[] = [registerAuthoringHandlers, registerPrivilegedRunHandlers];
