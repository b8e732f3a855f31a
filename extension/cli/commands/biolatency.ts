// `ebpf-studio biolatency [--pid P] [--per-disk | --per-process] [--ms] [--queued] [--interval S]
// [--duration S] [--json]`: block I/O latency histograms, printed like libbpf-tools biolatency.
import { histCommand } from '../histCommand';
import { biolatencyTracer } from '../../tracers/biolatency';

export const biolatencyCommand = histCommand({
  tracer: biolatencyTracer,
  pid: 'only I/O that process P started',
  per: { disk: 'one histogram per disk', process: 'one histogram per process (the one that started the I/O)' },
  own: {
    spec: { queued: { type: 'boolean' } },
    usage: '[--queued]',
    help: ['  --queued         count from entering the I/O scheduler queue, not from issue to the device'],
    options: (v) => ({ queued: Boolean(v.queued) }),
  },
  banner: (targets, o) => `Tracing block device I/O${o.queued ? ' (queued and on the device)' : ''}${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
});
