// `ebpf-studio cpudist [--pid P] [--per-process | --per-thread] [--ms] [--offcpu] [--preempted]
// [--interval S] [--duration S] [--json]`: CPU time per run, printed like libbpf-tools cpudist.
import { histCommand } from '../histCommand';
import { cpudistTracer } from '../../tracers/cpudist';
import { usageError } from '../../protocol/errors';

export const cpudistCommand = histCommand({
  tracer: cpudistTracer,
  pid: 'only threads of process P',
  per: { process: 'one histogram per process', thread: 'one histogram per thread' },
  own: {
    spec: { offcpu: { type: 'boolean' }, preempted: { type: 'boolean' } },
    usage: '[--offcpu | --preempted]',
    help: [
      '  --offcpu         time off the CPU between runs instead of on it (libbpf-tools cpudist -O)',
      '  --preempted      only runs that ended in preemption, not in a sleep (what libbpf-tools cpudist counts)',
    ],
    options: (v) => {
      if (v.offcpu && v.preempted) throw usageError('--preempted counts on-CPU runs: it does not go with --offcpu');
      return { offcpu: Boolean(v.offcpu), preempted: Boolean(v.preempted) };
    },
  },
  banner: (targets, o) => `Tracing ${o.offcpu ? 'off' : 'on'}-CPU time${o.preempted ? ' of preempted runs' : ''}${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
});
