// The agent's HTTP(S) endpoint: GET /metrics (Prometheus text format) and
// GET /debug/pprof/profile?seconds=N (gzipped profile.proto, the contract of Go's net/http/pprof
// that go tool pprof, Parca and Grafana Alloy pull from), /debug/pprof/offcpu?seconds=N[&event=wall]
// (off-CPU or wall-clock time; Go has no such endpoint, so the name is ours) and
// /debug/pprof/allocs?seconds=N&pid=P (Java allocations of one JVM; Go's name for its allocation profile). Loopback by default; any other address
// needs TLS and a bearer token or basic-auth file, because the endpoints show process names and
// code paths of the whole machine.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { inputError, usageError } from '../protocol/errors';
import type { AgentConfig } from './config';

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

interface Auth {
  bearer?: Buffer;
  basic?: Map<string, Buffer>;
}

/** A secret file: readable by us, not by everyone. */
function readSecret(file: string, what: string): string {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    throw inputError(`${what} ${file} does not exist or is not readable: create it (chmod 600) or fix the path in the config`);
  }
  if (st.mode & 0o004) throw inputError(`${what} ${file} is readable by every user: run chmod 600 ${file} (chown it to the agent's user)`);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw inputError(`${what} ${file} cannot be read (${(e as Error).message}): fix its owner or mode`);
  }
}

function readAuth(cfg: AgentConfig): Auth | undefined {
  if (!cfg.auth) return undefined;
  const auth: Auth = {};
  if (cfg.auth.bearerTokenFile) {
    const token = readSecret(cfg.auth.bearerTokenFile, 'auth.bearerTokenFile').trim();
    if (token.length < 16) throw inputError(`auth.bearerTokenFile ${cfg.auth.bearerTokenFile} holds a token shorter than 16 characters: write a long random one, e.g. openssl rand -hex 32 > ${cfg.auth.bearerTokenFile}`);
    auth.bearer = Buffer.from(token);
  }
  if (cfg.auth.basicAuthFile) {
    auth.basic = new Map();
    const lines = readSecret(cfg.auth.basicAuthFile, 'auth.basicAuthFile').split('\n');
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

const same = (a: Buffer, b: Buffer) => a.length === b.length && crypto.timingSafeEqual(a, b);

function authorized(auth: Auth, header: string | undefined): boolean {
  if (!header) return false;
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (auth.bearer && /^bearer$/i.test(scheme)) return same(Buffer.from(value), auth.bearer);
  if (auth.basic && /^basic$/i.test(scheme)) {
    const text = Buffer.from(value, 'base64').toString('utf8');
    const c = text.indexOf(':');
    const want = c > 0 ? auth.basic.get(text.slice(0, c)) : undefined;
    return want !== undefined && same(Buffer.from(text.slice(c + 1)), want);
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
  metrics(): string;
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

/** Checks the security rules and reads TLS and auth files (before any BPF is loaded). */
export function prepareListen(addr: ListenAddress, cfg: AgentConfig): { tls?: { cert: Buffer; key: Buffer }; auth?: Auth } {
  const auth = readAuth(cfg);
  if (!isLoopback(addr.host) && (!cfg.tls || !auth)) {
    const missing = [!cfg.tls && '"tls": {"certFile": ..., "keyFile": ...}', !auth && '"auth": {"bearerTokenFile": ...} (or "basicAuthFile")'].filter(Boolean).join(' and ');
    throw usageError(
      `refusing to listen on ${addr.host}:${addr.port} without TLS and authentication: the endpoints show the machine's process names and code paths. ` +
        `Add ${missing} to the --config file (Prometheus scrapes it with scheme: https, tls_config and authorization.credentials_file), or listen on loopback (--listen 127.0.0.1:${addr.port || 9435})`,
    );
  }
  if (!cfg.tls) return { auth };
  const read = (f: string, what: string) => {
    try {
      return fs.readFileSync(f);
    } catch (e) {
      throw inputError(`tls.${what} ${f} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): fix the path in the config or the file's mode`);
    }
  };
  return { tls: { cert: read(cfg.tls.certFile, 'certFile'), key: read(cfg.tls.keyFile, 'keyFile') }, auth };
}

export async function listen(addr: ListenAddress, prepared: ReturnType<typeof prepareListen>, ep: Endpoints, log: (m: string) => void): Promise<Server> {
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const send = (code: number, body: string | Buffer, type = 'text/plain; charset=utf-8', extra: Record<string, string> = {}) => {
      res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
      res.end(body);
    };
    if (prepared.auth && !authorized(prepared.auth, req.headers.authorization)) {
      send(401, 'unauthorized: send the bearer token (Authorization: Bearer ...) or basic-auth credentials the agent was configured with\n', undefined, {
        'WWW-Authenticate': prepared.auth.bearer ? 'Bearer realm="ebpf-studio"' : 'Basic realm="ebpf-studio"',
      });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://agent');
    if (url.pathname === '/debug/pprof/symbol') {
      // go tool pprof asks here for addresses a profile left unnamed. Our profiles are symbolized
      // when taken; what is left has no name anywhere, so: no symbols (as net/http/pprof says
      // for a binary without a symbol table), and an empty answer to the lookup.
      return send(200, req.method === 'POST' ? '' : 'num_symbols: 0\n');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'only GET\n', undefined, { Allow: 'GET, HEAD' });
    if (url.pathname === '/metrics') {
      return send(200, ep.metrics(), 'text/plain; version=0.0.4; charset=utf-8');
    }
    const pprofKind = { '/debug/pprof/profile': 'CPU', '/debug/pprof/offcpu': 'off-CPU', '/debug/pprof/allocs': 'allocation' }[url.pathname];
    if (pprofKind) {
      if (!ep.profileEnabled) return send(404, 'profiling is turned off in the config ("profile": {"enabled": false})\n');
      const raw = url.searchParams.get('seconds');
      const seconds = raw === null || raw === '' ? DEFAULT_PROFILE_SECONDS : Number(raw);
      if (!Number.isInteger(seconds) || seconds <= 0) return send(400, `bad seconds "${raw}": give a whole number of seconds, e.g. ?seconds=10\n`);
      if (seconds > ep.maxProfileSeconds) return send(400, `profile duration ${seconds} s exceeds the agent's limit of ${ep.maxProfileSeconds} s ("profile": {"maxSeconds": N} in the config)\n`);
      let taking: Promise<Buffer>;
      if (url.pathname === '/debug/pprof/offcpu') {
        if (!ep.offcpu) return send(404, 'off-CPU profiles are turned off in the config ("profile": {"offcpu": false})\n');
        const event = url.searchParams.get('event') ?? 'offcpu';
        if (event !== 'offcpu' && event !== 'wall') return send(400, `bad event "${event}": give event=offcpu (time off CPU, the default) or event=wall (on- and off-CPU time)\n`);
        taking = ep.offcpu(seconds, event);
      } else if (url.pathname === '/debug/pprof/allocs') {
        if (!ep.allocs) return send(404, 'allocation profiles are turned off in the config ("profile": {"allocs": false})\n');
        const rawPid = url.searchParams.get('pid');
        if (rawPid === null || !/^[1-9]\d{0,6}$/.test(rawPid)) return send(400, `${rawPid === null ? 'no pid' : `bad pid "${rawPid}"`}: allocation profiles are of one JVM, give its process id, e.g. /debug/pprof/allocs?seconds=10&pid=1234\n`);
        taking = ep.allocs(seconds, Number(rawPid));
      } else taking = ep.profile(seconds);
      taking.then(
        (gz) => send(200, gz, 'application/octet-stream', { 'Content-Disposition': `attachment; filename="${url.pathname.slice('/debug/pprof/'.length)}"`, 'X-Content-Type-Options': 'nosniff' }),
        (e) => {
          if (e instanceof RequestError) return send(e.status, `${e.message}\n`);
          log(`agent: ${pprofKind} profile failed: ${(e as Error).message}`);
          send(500, `could not take the ${pprofKind} profile: ${(e as Error).message}\n`);
        },
      );
      return;
    }
    if (url.pathname === '/' || url.pathname === '/debug/pprof/') return send(200, INDEX);
    send(404, `no such endpoint ${url.pathname}: try /metrics, /debug/pprof/profile?seconds=N, /debug/pprof/offcpu?seconds=N or /debug/pprof/allocs?seconds=N&pid=P\n`);
  };
  const server = prepared.tls ? https.createServer({ cert: prepared.tls.cert, key: prepared.tls.key }, handler) : http.createServer(handler);
  // A profile request waits for its seconds: do not let Node's default request timeout cut it.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') reject(inputError(`${addr.host}:${addr.port} is in use by another process (see which: ss -ltnp 'sport = :${addr.port}'): stop it or choose another port with --listen HOST:PORT`));
      else if (e.code === 'EADDRNOTAVAIL') reject(inputError(`${addr.host} is not an address of this machine: give one of its addresses, or 127.0.0.1, with --listen`));
      else if (e.code === 'EACCES') reject(inputError(`listening on port ${addr.port} is not permitted: use a port above 1023 with --listen`));
      else reject(inputError(`cannot listen on ${addr.host}:${addr.port}: ${e.message}`));
    });
    server.listen(addr.port, addr.host, () => resolve());
  });
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
