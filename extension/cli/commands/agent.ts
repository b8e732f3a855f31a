// `ebpf-studio agent [--listen 127.0.0.1:9435] [--config FILE] [--verbose]`: the long-running
// service that Prometheus scrapes (/metrics) and pprof scrapers pull CPU profiles from
// (/debug/pprof/profile, offcpu, allocs). Runs until SIGTERM/SIGINT, then detaches every BPF program and exits 0.
import type { Command } from '../command';
import { parse } from '../args';
import { cliEnv, requireBpfPrivilege } from '../env';
import { DEFAULT_CONFIG, readConfig } from '../../agent/config';
import { Agent } from '../../agent/agent';
import { DEFAULT_LISTEN, listen, parseListen, prepareListen } from '../../agent/server';

const USAGE = `ebpf-studio agent [--listen HOST:PORT] [--config FILE] [--verbose]
  --listen HOST:PORT  where to serve /metrics and /debug/pprof/{profile,offcpu,allocs} (default ${DEFAULT_LISTEN};
                      port 0 picks a free one). A non-loopback address needs "tls" and "auth"
                      in the config
  --config FILE       JSON: what to trace, TLS and authentication (README.md, "Fleet agent");
                      without it: GC and safepoint pauses of every JVM, system-wide run-queue
                      latency, CPU, off-CPU and JVM allocation profiles on request
  --verbose           log attaches, restarts and failures to stderr
Runs as root (or with CAP_BPF+CAP_PERFMON: run-queue latency and profiles only; the Java GC
probes are uprobes and need CAP_SYS_ADMIN). Ends on SIGTERM or SIGINT.`;

export const agentCommand: Command = {
  name: 'agent',
  summary: 'long-running service: Prometheus /metrics (GC pauses, safepoints, run-queue latency) and pprof CPU profiles on request',
  usage: USAGE,
  async run(argv, io) {
    const { values } = parse(argv, { listen: { type: 'string' }, config: { type: 'string' }, verbose: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    const cfg = typeof values.config === 'string' ? readConfig(values.config) : structuredClone(DEFAULT_CONFIG);
    const addr = parseListen(typeof values.listen === 'string' ? values.listen : (cfg.listen ?? DEFAULT_LISTEN));
    const prepared = prepareListen(addr, cfg);
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
      metrics: () => agent.metrics(),
      profile: (s: number) => agent.profile(s),
      offcpu: cfg.profile.offcpu ? (s: number, event: 'offcpu' | 'wall') => agent.offcpu(s, event) : undefined,
      allocs: cfg.profile.allocs ? (s: number, pid: number) => agent.allocs(s, pid) : undefined,
      maxProfileSeconds: cfg.profile.maxSeconds,
      profileEnabled: cfg.profile.enabled,
    };
    const server = await listen(addr, prepared, endpoints, (m) => io.err(m));
    await agent.start();
    const what = [cfg.jvm.enabled && `JVM GC pauses and safepoints (${[cfg.jvm.mainClasses?.join(', '), cfg.jvm.containers && `in ${cfg.jvm.containers.join(', ')}`].filter(Boolean).join(' ') || 'every JVM'})`, cfg.runqueue.enabled && `run-queue latency (${cfg.runqueue.per})`, cfg.profile.enabled && `CPU${cfg.profile.offcpu ? ', off-CPU' : ''}${cfg.profile.allocs ? ', Java allocation' : ''} profiles on request`].filter(Boolean);
    io.err(`ebpf-studio agent: serving ${server.url}/metrics${cfg.profile.enabled ? ` and ${server.url}/debug/pprof/profile?seconds=N` : ''}: ${what.join(', ')}`);
    await done;
    io.err('ebpf-studio agent: stopping (detaching every probe)');
    await server.close();
    await agent.stop();
    return 0;
  },
};
