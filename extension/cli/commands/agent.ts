// `ebpf-studio agent [--listen 127.0.0.1:9435] [--config FILE] [--verbose]`: the long-running
// service that Prometheus scrapes (/metrics) and pprof scrapers pull CPU profiles from
// (/debug/pprof/profile, offcpu, allocs). Runs until SIGTERM/SIGINT, then detaches every BPF program and exits 0.
import type { Command } from '../command';
import { parse } from '../args';
import { cliEnv, requireBpfPrivilege } from '../env';
import { DEFAULT_CONFIG, readConfig } from '../../agent/config';
import { Agent } from '../../agent/agent';
import { DEFAULT_LISTEN, DEFAULT_TOKEN_FILE, listen, parseListen, prepareListen } from '../../agent/server';
import { groupId, makeToken } from '../../agent/files';
import { usageError } from '../../protocol/errors';

const USAGE = `ebpf-studio agent [--listen HOST:PORT] [--config FILE] [--token-file FILE] [--insecure-no-auth] [--verbose]
ebpf-studio agent --make-token [--group GROUP] [--token-file FILE]
  --listen HOST:PORT  where to serve /metrics and /debug/pprof/{profile,offcpu,allocs} (default ${DEFAULT_LISTEN};
                      port 0 picks a free one). A non-loopback address needs "tls" in the config
  --config FILE       JSON: what to trace, TLS and authentication (docs/agent.md);
                      without it: GC and safepoint pauses of every JVM, system-wide run-queue
                      latency, CPU, off-CPU and JVM allocation profiles on request. Owned by root
                      (or the agent's user) and writable by no one else
  --token-file FILE   the bearer token scrapers must send when the config names no "auth"
                      (default ${DEFAULT_TOKEN_FILE}); Prometheus: authorization.credentials_file
  --make-token        write a random token to the token file (0640 root:GROUP) unless one exists,
                      and exit; the systemd unit runs it before each start
  --group GROUP       the group that may read the token made by --make-token (default root)
  --insecure-no-auth  serve without authentication: every local user can then read every
                      process's profile and load the Java agent into covered JVMs. Loopback only
  --verbose           log attaches, restarts and failures to stderr
Whoever holds the token can do what the agent can: profile every process, read its stacks and
names, load the Java agent into the JVMs the config covers; treat it as root's.
Runs as root (or with CAP_BPF+CAP_PERFMON: run-queue latency and profiles only; the Java GC
probes are uprobes and need CAP_SYS_ADMIN). Ends on SIGTERM or SIGINT.`;

export const agentCommand: Command = {
  name: 'agent',
  summary: 'long-running service: Prometheus /metrics (GC pauses, safepoints, run-queue latency) and pprof CPU profiles on request',
  usage: USAGE,
  async run(argv, io) {
    const { values } = parse(argv, {
      listen: { type: 'string' },
      config: { type: 'string' },
      'token-file': { type: 'string' },
      'make-token': { type: 'boolean' },
      group: { type: 'string' },
      'insecure-no-auth': { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    const tokenFile = typeof values['token-file'] === 'string' ? values['token-file'] : undefined;
    if (values['make-token']) return makeTokenCommand(tokenFile ?? DEFAULT_TOKEN_FILE, typeof values.group === 'string' ? values.group : 'root', io);
    if (values.group !== undefined) throw usageError('--group is for --make-token: it names the group that may read the token');
    const cfg = typeof values.config === 'string' ? readConfig(values.config) : structuredClone(DEFAULT_CONFIG);
    const addr = parseListen(typeof values.listen === 'string' ? values.listen : (cfg.listen ?? DEFAULT_LISTEN));
    const insecureNoAuth = Boolean(values['insecure-no-auth']);
    if (insecureNoAuth && tokenFile) throw usageError('--insecure-no-auth and --token-file contradict each other: leave one out');
    const prepared = prepareListen(addr, cfg, { insecureNoAuth, tokenFile });
    if (prepared.insecure)
      io.err(`ebpf-studio agent: WARNING: serving WITHOUT AUTHENTICATION (--insecure-no-auth): every user of this machine can read every process's profiles and names${cfg.profile.allocs && (cfg.jvm.mainClasses || cfg.jvm.containers) ? ' and load the Java agent into the JVMs the config names' : ''}`);
    requireBpfPrivilege('bpf');
    const verbose = Boolean(values.verbose);
    const log = (m: string) => {
      if (verbose) io.err(m);
    };
    const env = cliEnv(verbose);
    const agent = new Agent(cfg, env, log, (m) => io.err(m));

    let wake: () => void = () => undefined;
    const done = new Promise<void>((r) => (wake = r));
    process.once('SIGINT', () => wake());
    process.once('SIGTERM', () => wake());

    const endpoints = {
      metrics: () => agent.scrape(),
      profile: (s: number) => agent.profile(s),
      offcpu: cfg.profile.offcpu ? (s: number, event: 'offcpu' | 'wall') => agent.offcpu(s, event) : undefined,
      allocs: cfg.profile.allocs ? (s: number, pid: number) => agent.allocs(s, pid) : undefined,
      maxProfileSeconds: cfg.profile.maxSeconds,
      profileEnabled: cfg.profile.enabled,
    };
    const server = await listen(addr, prepared, endpoints, (m) => io.err(m));
    await agent.start();
    const what = [cfg.jvm.enabled && `JVM GC pauses and safepoints (${[cfg.jvm.mainClasses?.join(', '), cfg.jvm.containers && `in ${cfg.jvm.containers.join(', ')}`].filter(Boolean).join(' ') || 'every JVM'})`, cfg.runqueue.enabled && `run-queue latency (${cfg.runqueue.per})`, ...Object.entries(cfg.histograms).map(([n, h]) => h?.enabled && `${n} (${h.options.per})`), cfg.latency.length > 0 && `native function latency (${cfg.latency.map((e) => `${e.function} in ${e.binary}`).join(', ')})`, cfg.profile.enabled && `CPU${cfg.profile.offcpu ? ', off-CPU' : ''}${cfg.profile.allocs ? ', Java allocation' : ''} profiles on request`].filter(Boolean);
    const auth = prepared.insecure ? 'no authentication' : prepared.auth?.bearer ? 'bearer token required' : 'basic auth required';
    io.err(`ebpf-studio agent: serving ${server.url}/metrics${cfg.profile.enabled ? ` and ${server.url}/debug/pprof/profile?seconds=N` : ''} (${auth}): ${what.join(', ')}`);
    await done;
    io.err('ebpf-studio agent: stopping (detaching every probe)');
    await server.close();
    await agent.stop();
    return 0;
  },
};

function makeTokenCommand(file: string, group: string, io: { out(m: string): void; err(m: string): void }): number {
  const made = makeToken(file, groupId(group));
  io.err(made ? `ebpf-studio agent: made a token in ${file} (0640, group ${group}): Prometheus reads it with authorization.credentials_file` : `ebpf-studio agent: ${file} holds a token already: kept`);
  return 0;
}
