// TCP latency (tcplat): log2 histograms of connect latency (SYN_SENT to ESTABLISHED, like
// libbpf-tools tcpconnlat) or, with --rtt, of the smoothed round-trip time of received segments
// (like tcprtt), for everything, per remote address or per process; tracepoints only
// (bpf/tcplat.bpf.c on the log2-histogram kit), so it runs where kprobes and fentry do not.
import { histTracer } from './histTracer';
import { bool } from '../protocol/validate';
import { inputError } from '../protocol/errors';
import { keyText } from '../protocol/catalog';

export const tcplatTracer = histTracer({
  name: 'tcplat',
  object: 'tcplat',
  programs: ['tcp_state', 'tcp_probe'],
  // each mode's hook only: tcp_probe runs per received segment, ~55 ns each even when it returns at once
  attachOnly: (o) => [o.rtt ? 'tcp_probe' : 'tcp_state'],
  attaches: 'the sock:inet_sock_set_state and tcp:tcp_probe tracepoints',
  // key_mode 0, TCPL_KEY_ADDRESS, TCPL_KEY_PROCESS
  per: ['none', 'address', 'process'],
  options: (o) => {
    const rtt = bool(o, 'rtt', false);
    // An RTT sample is taken in softirq: the process that owns the socket is not known there.
    if (rtt && (o.per === 'process' || (typeof o.pid === 'number' && o.pid > 0))) throw inputError('round-trip times are kept for everything or per remote address: --rtt does not go with --pid or --per-process');
    return { rtt };
  },
  rodata: (o) => ({ rtt: o.rtt }),
  // the kernel names no address: its name is its text (the key table and CLI show it once)
  nameKey: (key, per) => (per === 'address' ? keyText('tcplat', per, key) : undefined),
  // `ebpf-studio tcplat`, printed like libbpf-tools tcpconnlat / tcprtt
  cli: {
    pid: 'only connects process P makes (not with --rtt)',
    per: { address: 'one histogram per remote IPv4 address', process: 'one histogram per connecting process (not with --rtt)' },
    flags: { rtt: 'smoothed round-trip time of each received segment (tcprtt), not connect latency' },
    banner: (targets, o) => `Tracing TCP ${o.rtt ? 'round-trip times' : 'connect latency'}${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
  },
});
