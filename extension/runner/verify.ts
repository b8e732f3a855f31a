// Helper side of BPF authoring: `bpf/verify` loads a user's object without attaching it and
// returns the verifier's verdict mapped to source lines. ("Run" is the bpf-run tracer.)
import type { MessageConnection } from 'vscode-jsonrpc/node';
import path from 'node:path';
import { bpfVerify, type VerifyResponse } from '../protocol/authoring';
import { asObject, str } from '../protocol/validate';
import { inputError, StudioError } from '../protocol/errors';
import { siblingSources, verifyObject } from '../authoring/verifyObject';
import type { HandlerContext } from '../helper/context';
import { openUserObject } from '../sys/userObject';

export function registerAuthoringHandlers(conn: MessageConnection, ctx: HandlerContext): void {
  conn.onRequest(
    bpfVerify,
    ctx.guard((raw: unknown): VerifyResponse => {
      const o = asObject(raw);
      const objectPath = str(o, 'objectPath');
      if (!path.isAbsolute(objectPath)) throw inputError(`objectPath must be absolute, got "${objectPath}"`);
      const extra = Array.isArray(o.sourcePaths) ? o.sourcePaths.filter((p): p is string => typeof p === 'string' && path.isAbsolute(p)).slice(0, 64) : [];
      const addon = ctx.addon();
      if (!addon) throw new StudioError('internal', 'the native addon is not loaded in the helper: run "npm run build"');
      // Confirmed, regular, BPF ELF, read once; libbpf loads a private copy of those bytes.
      const user = openUserObject(objectPath, o.confirmedSha256);
      let r: VerifyResponse;
      try {
        r = verifyObject(addon, user.path, siblingSources(objectPath, extra));
      } catch (e) {
        if (e instanceof StudioError) throw new StudioError(e.kind, e.message.split(user.path).join(objectPath), e.detail);
        throw e;
      } finally {
        user.dispose();
      }
      ctx.log(`bpf/verify ${objectPath}: ${r.ok ? 'accepted' : `rejected (${r.diagnostics.length} diagnostics)`}`);
      return r;
    }),
  );
}
