// Requests beyond capabilities/processes/sessions register here, one line per feature, so the
// helper's main file stays the same as features land. The requests that run a user's code as
// root are only refused here: the runner (extension/runner/) serves them.
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type { HandlerContext } from '../context';
import { registerUserCodeRefusals } from './userCodeRefusal';

export type HandlerModule = (conn: MessageConnection, ctx: HandlerContext) => void;

export const extraHandlers: HandlerModule[] = [registerUserCodeRefusals];
