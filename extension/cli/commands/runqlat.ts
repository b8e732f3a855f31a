// `ebpf-studio runqlat [--pid P] [--per-process | --per-thread | --per-pidns] [--ms]
// [--interval S] [--duration S] [--json]`: run-queue latency histograms, printed like
// libbpf-tools runqlat (the log2-histogram kit's command, ../histCommand.ts).
import { histCommand } from '../histCommand';
import { runqlatTracer } from '../../tracers/runqlat/tracer';

export const runqlatCommand = histCommand({
  tracer: runqlatTracer,
  pid: 'only threads of process P',
  per: { process: 'one histogram per process (tgid)', thread: 'one histogram per thread (tid)', pidns: 'one histogram per PID namespace' },
  banner: (targets) => `Tracing run queue latency${targets.length ? ` of pid ${targets.join(', ')}` : ''}... Hit Ctrl-C to end.`,
});
