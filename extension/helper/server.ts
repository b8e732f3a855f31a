// The JSON-RPC server both root processes run on their stdin/stdout: the tracing helper
// (extension/helper/main.ts) and the runner of user code (extension/runner/main.ts). Which
// requests it serves is the caller's choice (ServerRole): the helper serves tracing and refuses
// user code, the runner serves only user code (bpf/verify, run/*, the bpf-run session).
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import * as proto from '../protocol/protocol';
import { rpcErrorCodes, StudioError } from '../protocol/errors';
import { asObject, bool } from '../protocol/validate';
import { defaultAssetDir, loadAddon, type Addon } from '../sys/addon';
import { listProcesses } from '../sys/proc/processes';
import { listContainers } from '../sys/proc/containerCgroup';
import { gatherCapabilities } from '../tracers/capabilities';
import { SessionManager } from './sessions';
import { LimitedReader, MAX_MESSAGE_BYTES } from './limitedReader';
import type { HandlerContext } from './context';
import { invokingUser } from '../sys/identity';
import { setRequester } from '../sys/ownership';
import { untrustedFiles } from '../privilege/trustedPath';
import { addonCandidates } from '../sys/addon';
import path from 'node:path';

/** What one root process serves: its request handlers, and which tracers its session/start may start. */
export interface ServerRole {
  name: 'helper' | 'runner';
  handlers: ((conn: MessageConnection, ctx: HandlerContext) => void)[];
  /** undefined when `tracer` may start here, else the refusal (names the right path) */
  refuseTracer(tracer: string): string | undefined;
}

function toResponseError(e: unknown): ResponseError<unknown> {
  if (e instanceof StudioError) return new ResponseError(rpcErrorCodes[e.kind], e.message, { kind: e.kind, detail: e.detail });
  const msg = e instanceof Error ? e.message : String(e);
  return new ResponseError(rpcErrorCodes.internal, `helper: ${msg}`, { kind: 'internal' });
}

/** Handlers reject with a typed ResponseError; vscode-jsonrpc sends it as the error response. */
export function guard<P, R>(fn: (p: P) => R | Promise<R>): (p: P) => Promise<R> {
  return async (p: P) => {
    try {
      return await fn(p);
    } catch (e) {
      throw toResponseError(e);
    }
  };
}

export interface HelperIo {
  input: NodeJS.ReadableStream & import('node:stream').Readable;
  output: NodeJS.WritableStream;
  /** called once when the helper is done (stdin closed, signal); the process exits with code */
  exit(code: number): void;
}

/** The JSON-RPC server on the given streams; runHelper() binds it to stdin/stdout. */
export function createHelperServer(io: HelperIo, role: ServerRole): { connection: MessageConnection; shutdown(why: string): void } {
  const assetDir = defaultAssetDir();
  // Whom every attach request, perf map and private file read is checked against (sys/ownership.ts).
  setRequester(invokingUser());
  let addon: Addon | undefined;
  let addonError: string | undefined;
  try {
    addon = loadAddon(assetDir);
  } catch (e) {
    addonError = (e as Error).message;
  }

  const reader = new StreamMessageReader(new LimitedReader(io.input, MAX_MESSAGE_BYTES, (n) => log(`refused a message of ${n} bytes (limit ${MAX_MESSAGE_BYTES})`)));
  const conn: MessageConnection = createMessageConnection(reader, new StreamMessageWriter(io.output));
  const log = (message: string) => {
    process.stderr.write(`[${role.name}] ${message}\n`);
    try {
      void conn.sendNotification(proto.helperLog, { message });
    } catch {
      /* connection gone */
    }
  };

  const sessions = new SessionManager(
    {
      get addon(): Addon {
        if (!addon) throw new StudioError('internal', addonError ?? 'native addon not loaded');
        return addon;
      },
      assetDir,
      log,
      requester: invokingUser(),
    },
    {
      data: (sessionId, tracer, update) => void conn.sendNotification(proto.sessionData, { sessionId, tracer, update } as proto.SessionDataParams),
      ended: (sessionId, tracer, reason, result, message) =>
        void conn.sendNotification(proto.sessionEnded, { sessionId, tracer, reason, result, message } as proto.SessionEndedParams),
    },
  );

  conn.onRequest(proto.capabilities, guard(() => gatherCapabilities(addon, assetDir, addonError)));
  conn.onRequest(
    proto.listProcesses,
    guard((params: unknown) => {
      const p = params === undefined || params === null ? {} : asObject(params);
      return listProcesses({ jvmOnly: bool(p, 'jvmOnly', false) });
    }),
  );
  conn.onRequest(proto.listContainers, guard(() => listContainers()));
  conn.onRequest(
    proto.sessionStart,
    guard((p: unknown) => {
      const tracer = (p as { tracer?: unknown } | null)?.tracer;
      const why = typeof tracer === 'string' ? role.refuseTracer(tracer) : undefined;
      if (why) throw new StudioError('privilege', why);
      return sessions.start(p);
    }),
  );
  conn.onRequest(proto.sessionStop, guard((p: unknown) => sessions.stop(p)));
  conn.onRequest(proto.sessionSnapshot, guard((p: unknown) => sessions.snapshot(p)));
  for (const extra of role.handlers) extra(conn, { addon: () => addon, assetDir, log, guard });

  let shuttingDown = false;
  let exited = false;
  const exitOnce = (code: number) => {
    if (!exited) {
      exited = true;
      io.exit(code);
    }
  };
  const shutdown = (why: string, code = 0) => {
    if (shuttingDown) return;
    shuttingDown = true;
    process.stderr.write(`[${role.name}] exiting: ${why}\n`);
    // Hard deadline: the kernel drops our links when the process dies anyway.
    setTimeout(() => exitOnce(code), 800).unref();
    void sessions.stopAll().finally(() => exitOnce(code));
  };
  io.input.on('end', () => shutdown('stdin closed'));
  io.input.on('close', () => shutdown('stdin closed'));
  conn.onClose(() => shutdown('connection closed'));
  conn.onError(([err]) => process.stderr.write(`[${role.name}] protocol error: ${err.message}\n`));
  conn.listen();
  return { connection: conn, shutdown };
}

/** Raised to root for someone else (pkexec/sudo): refuse to run code that user, or anyone, could have changed. */
function refuseUntrustedInstall(who: 'helper' | 'runner'): void {
  const user = invokingUser();
  if ((process.geteuid?.() ?? 1) !== 0 || user.uid === 0) return;
  const assetDir = defaultAssetDir();
  const problems = untrustedFiles([__filename, process.execPath, ...addonCandidates(assetDir), path.join(assetDir, 'ebpf-studio-launch'), path.join(assetDir, 'bpf')]);
  if (problems.length === 0) return;
  process.stderr.write(
    `[${who}] refusing to run as root for uid ${user.uid} (from ${user.source}) from a place that is not root-owned: ${problems.join('; ')}. ` +
      'Install the helper into /usr/local/lib/ebpf-studio with "eBPF: Install Privileged Helper" (or `ebpf-studio install-helper`) and start it from there.\n',
  );
  process.exit(3);
}

/** Runs `role` on this process's stdin/stdout until stdin closes or a signal. */
export function runServer(role: ServerRole): void {
  refuseUntrustedInstall(role.name);
  // stdout carries the protocol: anything printed by accident would corrupt it.
  console.log = console.info = console.warn = console.debug = (...a: unknown[]) => process.stderr.write(a.map(String).join(' ') + '\n');
  const { shutdown } = createHelperServer({ input: process.stdin, output: process.stdout, exit: (code) => process.exit(code) }, role);
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));
  process.on('uncaughtException', (e) => process.stderr.write(`[${role.name}] uncaught: ${e.stack ?? e}\n`));
  process.on('unhandledRejection', (e) => process.stderr.write(`[${role.name}] unhandled rejection: ${String(e)}\n`));
}

