// The run-queue latency tracer (runqlat): log2 histograms of how long runnable threads wait for a
// CPU, built in the kernel per key (bpf/runqlat.bpf.c) and read once per interval by the
// log2-histogram kit (../histTracer.ts). Kernel threads wait in run queues too, so unlike the
// uprobe tracers any live pid will do.
import { histTracer } from '../histTracer';
import { containerCgroup } from '../../sys/proc/containerCgroup';

export const runqlatTracer = histTracer({
  name: 'runqlat',
  object: 'runqlat',
  programs: ['wakeup', 'wakeup_new', 'switch', 'runq_exec'],
  // an exec renames the process's (or its thread's) histogram: only where they are named after one
  attachOnly: (o) => (o.per === 'process' || o.per === 'thread' ? ['wakeup', 'wakeup_new', 'switch', 'runq_exec'] : ['wakeup', 'wakeup_new', 'switch']),
  attaches: 'the scheduler tracepoints',
  // in the order of RUNQLAT_KEY_* (bpf/runqlat.h)
  per: ['none', 'process', 'thread', 'pidns', 'cgroup'],
  // a container's tasks, by its cgroup (bpf/cgroup_filter.bpf.h)
  containerFilter: true,
  // `ebpf-studio runqlat`, printed like libbpf-tools runqlat
  cli: {
    pid: 'only threads of process P',
    per: { process: 'one histogram per process (tgid)', thread: 'one histogram per thread (tid)', pidns: 'one histogram per PID namespace' },
    banner: (targets, options) => `Tracing run queue latency${targets.length ? ` of pid ${targets.join(', ')}` : options.container ? ` of container ${containerCgroup(options.container).label}` : ''}... Hit Ctrl-C to end.`,
  },
});
