// The agent's HTTP(S) endpoint: GET /metrics (Prometheus text format) and
// GET /debug/pprof/profile?seconds=N (gzipped profile.proto, the contract of Go's net/http/pprof
// that go tool pprof, Parca and Grafana Alloy pull from), /debug/pprof/offcpu?seconds=N[&event=wall]
// (off-CPU or wall-clock time; Go has no such endpoint, so the name is ours) and
// /debug/pprof/allocs?seconds=N&pid=P (Java allocations of one JVM; Go's name for its allocation profile).
// Closed by default: the endpoints show every process's names, code paths and stacks, and loopback
// is shared by every local user, so without "auth" in the config the agent requires the bearer token
// the install made (DEFAULT_TOKEN_FILE); serving without any is the explicit --insecure-no-auth. A
// non-loopback address also needs TLS. Every request is answered (a target no URL parser accepts
// gets 400), within per-client and total limits on requests at once and on response bytes held.
import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { inputError, usageError } from '../protocol/errors';
import type { AgentConfig } from './config';
import { readTrusted } from './files';

export const DEFAULT_LISTEN = '127.0.0.1:9435';
/** Go's net/http/pprof default for ?seconds */
const DEFAULT_PROFILE_SECONDS = 30;

export interface ListenAddress {
  host: string;
  port: number;
}

export function parseListen(s: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(s);
  if (!m) throw usageError(`--listen "${s}" is not HOST:PORT: give e.g. 127.0.0.1:9435, [::1]:9435 or 0.0.0.0:9435`);
  const port = Number(m[3]);
  if (port > 65535) throw usageError(`--listen "${s}": port ${port} is out of range (0..65535)`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1' || /^::ffff:127\./i.test(host);
}

export interface Auth {
  bearer?: Buffer;
  basic?: Map<string, Buffer>;
}

/** Where the install puts the token the agent requires when the config names no auth. */
export const DEFAULT_TOKEN_FILE = '/etc/ebpf-studio/agent.token';

/** The bearer token in `file`: a secret file (files.ts), at least 16 characters. */
export function readToken(file: string, what: string): Buffer {
  const token = readTrusted(file, what, true).text.toString('utf8').trim();
  if (token.length < 16) throw inputError(`${what} ${file} holds a token shorter than 16 characters: write a long random one (ebpf-studio agent --make-token --token-file ${file} makes one)`);
  return Buffer.from(token);
}

function readAuth(cfg: AgentConfig): Auth | undefined {
  if (!cfg.auth) return undefined;
  const auth: Auth = {};
  if (cfg.auth.bearerTokenFile) auth.bearer = readToken(cfg.auth.bearerTokenFile, 'auth.bearerTokenFile');
  if (cfg.auth.basicAuthFile) {
    auth.basic = new Map();
    const lines = readTrusted(cfg.auth.basicAuthFile, 'auth.basicAuthFile', true).text.toString('utf8').split('\n');
    lines.forEach((l, i) => {
      if (!l.trim() || l.startsWith('#')) return;
      const c = l.indexOf(':');
      if (c <= 0) throw inputError(`auth.basicAuthFile ${cfg.auth!.basicAuthFile}:${i + 1}: a line is user:password`);
      auth.basic!.set(l.slice(0, c), Buffer.from(l.slice(c + 1).trimEnd()));
    });
    if (auth.basic.size === 0) throw inputError(`auth.basicAuthFile ${cfg.auth.basicAuthFile} has no user:password line`);
  }
  return auth;
}

/**
 * Constant time whatever the lengths: both sides are hashed first, so neither how long the secret
 * is nor how much of it a guess got right shows in the time the answer takes.
 */
const digest = (b: Buffer) => crypto.createHash('sha256').update(b).digest();
const same = (a: Buffer, b: Buffer) => crypto.timingSafeEqual(digest(a), digest(b));
const NO_PASSWORD = crypto.randomBytes(32);

/** Whether the Authorization header carries the configured credentials (any header content is safe here). */
export function authorized(auth: Auth, header: string | undefined): boolean {
  if (!header) return false;
  const [scheme = '', value = ''] = header.trim().split(/\s+/, 2);
  if (auth.bearer && /^bearer$/i.test(scheme)) return same(Buffer.from(value), auth.bearer);
  if (auth.basic && /^basic$/i.test(scheme)) {
    const text = Buffer.from(value, 'base64').toString('utf8');
    const c = text.indexOf(':');
    const want = c > 0 ? auth.basic.get(text.slice(0, c)) : undefined;
    // An unknown user is compared too: the time does not tell which user names exist.
    const ok = same(Buffer.from(c > 0 ? text.slice(c + 1) : ''), want ?? NO_PASSWORD);
    return ok && want !== undefined;
  }
  return false;
}

/** A request the agent refuses: answered with this HTTP status and message (no stack). */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Endpoints {
  /** the exposition text; a promise when the counts are read first */
  metrics(): string | Promise<string>;
  profile(seconds: number): Promise<Buffer>;
  offcpu?(seconds: number, event: 'offcpu' | 'wall'): Promise<Buffer>;
  allocs?(seconds: number, pid: number): Promise<Buffer>;
  maxProfileSeconds: number;
  profileEnabled: boolean;
}

const INDEX = `ebpf-studio agent
/metrics                                   Prometheus metrics
/debug/pprof/profile?seconds=N             gzipped pprof CPU profile of the machine
/debug/pprof/offcpu?seconds=N[&event=wall] gzipped pprof off-CPU (off_cpu/microseconds) or wall-clock time of the machine
/debug/pprof/allocs?seconds=N&pid=P        gzipped pprof of a covered JVM's Java allocations (alloc_objects, alloc_space)
`;

export interface Server {
  url: string;
  close(): Promise<void>;
}

export interface ListenOptions {
  /** serve without authentication (an explicit opt-in: every local user can then read every endpoint) */
  insecureNoAuth?: boolean;
  /** the token file required when the config names no auth (default DEFAULT_TOKEN_FILE) */
  tokenFile?: string;
}

export interface Prepared {
  tls?: { cert: Buffer; key: Buffer };
  auth?: Auth;
  /** no authentication, by --insecure-no-auth */
  insecure?: boolean;
}

/** The auth a config asks for; without one, the default token file (closed by default). */
function chooseAuth(cfg: AgentConfig, opts: ListenOptions): Auth | undefined {
  if (opts.insecureNoAuth) {
    if (cfg.auth) throw usageError('--insecure-no-auth and "auth" in the config contradict each other: leave one out');
    return undefined;
  }
  if (cfg.auth) return readAuth(cfg);
  const file = opts.tokenFile ?? DEFAULT_TOKEN_FILE;
  try {
    return { bearer: readToken(file, 'the bearer token file') };
  } catch (e) {
    if (!/does not exist/.test((e as Error).message)) throw e;
    throw inputError(
      `the bearer token file ${file} does not exist, and the agent requires a token by default: every local user could otherwise read every process's profile. ` +
        `Make one with "ebpf-studio agent --make-token --group GROUP${opts.tokenFile ? ` --token-file ${file}` : ''}" (0640 root:GROUP; give GROUP to the scraper, e.g. prometheus, which sends it with authorization.credentials_file), ` +
        'name another with "auth" in the config, or serve without authentication with --insecure-no-auth',
    );
  }
}

/** Checks the security rules and reads TLS and auth files (before any BPF is loaded). */
export function prepareListen(addr: ListenAddress, cfg: AgentConfig, opts: ListenOptions = {}): Prepared {
  // TLS is checked first: the fix for a public address without it does not depend on the token.
  const open = !isLoopback(addr.host);
  const auth = open && !cfg.tls ? (opts.insecureNoAuth ? undefined : {}) : chooseAuth(cfg, opts);
  if (open && (!cfg.tls || !auth)) {
    const missing = [!cfg.tls && '"tls": {"certFile": ..., "keyFile": ...}', !auth && 'authentication (leave out --insecure-no-auth)'].filter(Boolean).join(' and ');
    throw usageError(
      `refusing to listen on ${addr.host}:${addr.port} without TLS and authentication: the endpoints show the machine's process names and code paths. ` +
        `Add ${missing} (Prometheus scrapes it with scheme: https, tls_config and authorization.credentials_file), or listen on loopback (--listen 127.0.0.1:${addr.port || 9435})`,
    );
  }
  if (!cfg.tls) return { auth, insecure: !auth };
  const cert = readTrusted(cfg.tls.certFile, 'tls.certFile', false).text;
  const key = readTrusted(cfg.tls.keyFile, 'tls.keyFile', true).text;
  return { tls: { cert, key }, auth, insecure: !auth };
}

/** What one client and all of them together may hold at once. */
export interface Limits {
  /** requests being answered per client address (profiles wait their seconds): more get 429 */
  perClient: number;
  /** requests being answered in all: more get 503 */
  inflight: number;
  /** bytes of response bodies not yet handed to the kernel: a response past it gets 503 */
  responseBytes: number;
}

export const DEFAULT_LIMITS: Limits = { perClient: 8, inflight: 64, responseBytes: 256 << 20 };

/** Connections at once (Node drops those past it); header bytes per request. */
const MAX_CONNECTIONS = 512;
const MAX_HEADER_BYTES = 16 << 10;

type Send = (res: http.ServerResponse, code: number, body: string | Buffer, type?: string, extra?: Record<string, string>) => void;

/** Sends once, within the memory bound; a response whose client went away is dropped. */
function sender(limits: Limits, state: { bytes: number }): Send {
  return (res, code, body, type = 'text/plain; charset=utf-8', extra = {}) => {
    if (res.headersSent || res.writableEnded || res.destroyed) return;
    const len = Buffer.byteLength(body);
    if (code === 200 && state.bytes + len > limits.responseBytes) {
      code = 503;
      body = `this response (${len} bytes) and those being sent (${state.bytes} bytes) exceed the ${limits.responseBytes} bytes the agent holds at once: retry in a few seconds\n`;
      type = 'text/plain; charset=utf-8';
      extra = { 'Retry-After': '5' };
    }
    const n = Buffer.byteLength(body);
    state.bytes += n;
    res.once('close', () => (state.bytes -= n));
    try {
      res.writeHead(code, { 'Content-Type': type, 'Content-Length': n, ...extra });
      res.end(body);
    } catch {
      res.destroy();
    }
  };
}

/** Takes a slot of the client's and of the agent's; false (and answered) when none is left. */
function admit(req: http.IncomingMessage, res: http.ServerResponse, limits: Limits, state: { inflight: number; byClient: Map<string, number> }, send: Send): boolean {
  const client = req.socket.remoteAddress ?? 'unknown';
  const mine = state.byClient.get(client) ?? 0;
  if (mine >= limits.perClient) {
    send(res, 429, `too many requests at once from ${client}: at most ${limits.perClient} are answered at a time (a profile takes its seconds); wait for one to end\n`, undefined, { 'Retry-After': '5' });
    return false;
  }
  if (state.inflight >= limits.inflight) {
    send(res, 503, `the agent is answering ${state.inflight} requests, its limit: retry in a few seconds\n`, undefined, { 'Retry-After': '5' });
    return false;
  }
  state.inflight++;
  state.byClient.set(client, mine + 1);
  res.once('close', () => {
    state.inflight--;
    const left = (state.byClient.get(client) ?? 1) - 1;
    if (left <= 0) state.byClient.delete(client);
    else state.byClient.set(client, left);
  });
  return true;
}

/** The request target as a URL, or undefined for one no URL parser accepts (e.g. "http://[::1"). */
function targetOf(req: http.IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://agent');
  } catch {
    return undefined;
  }
}

function route(req: http.IncomingMessage, res: http.ServerResponse, url: URL, ep: Endpoints, send: Send, log: (m: string) => void): void {
  if (url.pathname === '/debug/pprof/symbol') {
    // go tool pprof asks here for addresses a profile left unnamed. Our profiles are symbolized
    // when taken; what is left has no name anywhere, so: no symbols (as net/http/pprof says
    // for a binary without a symbol table), and an empty answer to the lookup.
    return send(res, 200, req.method === 'POST' ? '' : 'num_symbols: 0\n');
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'only GET\n', undefined, { Allow: 'GET, HEAD' });
  if (url.pathname === '/metrics') {
    void Promise.resolve()
      .then(() => ep.metrics())
      .then(
        (text) => send(res, 200, text, 'text/plain; version=0.0.4; charset=utf-8'),
        (e) => send(res, 500, `reading the metrics failed: ${(e as Error).message}\n`),
      );
    return;
  }
  const pprofKind = ({ '/debug/pprof/profile': 'CPU', '/debug/pprof/offcpu': 'off-CPU', '/debug/pprof/allocs': 'allocation' } as Record<string, string>)[url.pathname];
  if (pprofKind) return pull(res, url, pprofKind, ep, send, log);
  if (url.pathname === '/' || url.pathname === '/debug/pprof/') return send(res, 200, INDEX);
  send(res, 404, `no such endpoint: try /metrics, /debug/pprof/profile?seconds=N, /debug/pprof/offcpu?seconds=N or /debug/pprof/allocs?seconds=N&pid=P\n`);
}

function pull(res: http.ServerResponse, url: URL, pprofKind: string, ep: Endpoints, send: Send, log: (m: string) => void): void {
  if (!ep.profileEnabled) return send(res, 404, 'profiling is turned off in the config ("profile": {"enabled": false})\n');
  const raw = url.searchParams.get('seconds');
  const seconds = raw === null || raw === '' ? DEFAULT_PROFILE_SECONDS : Number(raw);
  if (!Number.isInteger(seconds) || seconds <= 0) return send(res, 400, `bad seconds "${raw?.slice(0, 40)}": give a whole number of seconds, e.g. ?seconds=10\n`);
  if (seconds > ep.maxProfileSeconds) return send(res, 400, `profile duration ${seconds} s exceeds the agent's limit of ${ep.maxProfileSeconds} s ("profile": {"maxSeconds": N} in the config)\n`);
  let taking: Promise<Buffer>;
  if (url.pathname === '/debug/pprof/offcpu') {
    if (!ep.offcpu) return send(res, 404, 'off-CPU profiles are turned off in the config ("profile": {"offcpu": false})\n');
    const event = url.searchParams.get('event') ?? 'offcpu';
    if (event !== 'offcpu' && event !== 'wall') return send(res, 400, `bad event "${event.slice(0, 40)}": give event=offcpu (time off CPU, the default) or event=wall (on- and off-CPU time)\n`);
    taking = ep.offcpu(seconds, event);
  } else if (url.pathname === '/debug/pprof/allocs') {
    if (!ep.allocs) return send(res, 404, 'allocation profiles are turned off in the config ("profile": {"allocs": false})\n');
    const rawPid = url.searchParams.get('pid');
    if (rawPid === null || !/^[1-9]\d{0,6}$/.test(rawPid)) return send(res, 400, `${rawPid === null ? 'no pid' : `bad pid "${rawPid.slice(0, 40)}"`}: allocation profiles are of one JVM, give its process id, e.g. /debug/pprof/allocs?seconds=10&pid=1234\n`);
    taking = ep.allocs(seconds, Number(rawPid));
  } else taking = ep.profile(seconds);
  taking.then(
    (gz) => send(res, 200, gz, 'application/octet-stream', { 'Content-Disposition': `attachment; filename="${url.pathname.slice('/debug/pprof/'.length)}"`, 'X-Content-Type-Options': 'nosniff' }),
    (e) => {
      if (e instanceof RequestError) return send(res, e.status, `${e.message}\n`);
      log(`agent: ${pprofKind} profile failed: ${(e as Error).message}`);
      send(res, 500, `could not take the ${pprofKind} profile: ${(e as Error).message}\n`);
    },
  ).catch(() => res.destroy());
}

/** A request line or header Node's parser refused: a plain 400 (431 for oversized headers), never a crash. */
function onClientError(err: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const body = `bad request: ${status.slice(4).toLowerCase()}\n`;
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
}

export async function listen(addr: ListenAddress, prepared: Prepared, ep: Endpoints, log: (m: string) => void, limits: Limits = DEFAULT_LIMITS): Promise<Server> {
  const state = { inflight: 0, byClient: new Map<string, number>(), bytes: 0 };
  const send = sender(limits, state);
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    // Whatever a request holds, the agent answers it and serves on: nothing here may throw out.
    try {
      const url = targetOf(req);
      if (!url) return send(res, 400, 'bad request: the request target is not a valid URL or path\n');
      if (prepared.auth && !authorized(prepared.auth, req.headers.authorization)) {
        return send(res, 401, 'unauthorized: send the bearer token (Authorization: Bearer ...) or basic-auth credentials the agent was configured with\n', undefined, {
          'WWW-Authenticate': prepared.auth.bearer ? 'Bearer realm="ebpf-studio"' : 'Basic realm="ebpf-studio"',
        });
      }
      if (!admit(req, res, limits, state, send)) return;
      route(req, res, url, ep, send, log);
    } catch (e) {
      log(`agent: a request failed: ${(e as Error).message}`);
      send(res, 500, 'the agent could not answer this request\n');
    }
  };
  const options = { maxHeaderSize: MAX_HEADER_BYTES };
  const server = prepared.tls ? https.createServer({ ...options, cert: prepared.tls.cert, key: prepared.tls.key }, handler) : http.createServer(options, handler);
  server.on('clientError', onClientError);
  server.maxConnections = MAX_CONNECTIONS;
  server.maxHeadersCount = 100;
  // A profile request waits for its seconds: do not let Node's default request timeout cut it.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  await bind(server, addr);
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `${prepared.tls ? 'https' : 'http'}://${host}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function bind(server: http.Server, addr: ListenAddress): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') reject(inputError(`${addr.host}:${addr.port} is in use by another process (see which: ss -ltnp 'sport = :${addr.port}'): stop it or choose another port with --listen HOST:PORT`));
      else if (e.code === 'EADDRNOTAVAIL') reject(inputError(`${addr.host} is not an address of this machine: give one of its addresses, or 127.0.0.1, with --listen`));
      else if (e.code === 'EACCES') reject(inputError(`listening on port ${addr.port} is not permitted: use a port above 1023 with --listen`));
      else reject(inputError(`cannot listen on ${addr.host}:${addr.port}: ${e.message}`));
    });
    server.listen(addr.port, addr.host, () => resolve());
  });
}
