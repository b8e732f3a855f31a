// `ebpf-studio tcplat [--pid P] [--per-address | --per-process] [--ms] [--rtt] [--interval S]
// [--duration S] [--json]`: TCP connect latency or round-trip times, printed like libbpf-tools.
import { histCommand } from '../histCommand';
import { tcplatTracer } from '../../tracers/tcplat';

export const tcplatCommand = histCommand({
  tracer: tcplatTracer,
  pid: 'only connects process P makes (not with --rtt)',
  per: { address: 'one histogram per remote IPv4 address', process: 'one histogram per connecting process (not with --rtt)' },
  own: {
    spec: { rtt: { type: 'boolean' } },
    usage: '[--rtt]',
    help: ['  --rtt            smoothed round-trip time of each received segment (tcprtt), not connect latency'],
    options: (v) => ({ rtt: Boolean(v.rtt) }),
  },
  banner: (targets, o) => `Tracing TCP ${o.rtt ? 'round-trip times' : 'connect latency'}${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
});
