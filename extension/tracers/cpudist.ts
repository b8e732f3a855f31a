// CPU time per run (cpudist): log2 histograms of how long threads stay on a CPU each time they
// run (or, with --offcpu, how long they stay off one between runs), for everything, per process
// or per thread; bpf/cpudist.bpf.c on the log2-histogram kit.
import { histTracer } from './histTracer';
import { bool } from '../protocol/validate';
import { inputError } from '../protocol/errors';
import { containerCgroup } from '../sys/proc/containerCgroup';

export const cpudistTracer = histTracer({
  name: 'cpudist',
  object: 'cpudist',
  programs: ['cpu_switch', 'cpu_exit', 'cpu_exec'],
  // an exec renames the process's histogram: only where histograms are named after a process
  attachOnly: (o) => (o.per === 'none' ? ['cpu_switch', 'cpu_exit'] : ['cpu_switch', 'cpu_exit', 'cpu_exec']),
  attaches: 'the sched_switch, sched_process_exit and sched_process_exec tracepoints',
  // key_mode 0, CPUD_KEY_PROCESS, CPUD_KEY_THREAD
  per: ['none', 'process', 'thread'],
  // a container's tasks, by its cgroup (bpf/cgroup_filter.bpf.h)
  containerFilter: true,
  options: (o) => {
    const offcpu = bool(o, 'offcpu', false);
    const preempted = bool(o, 'preempted', false);
    if (offcpu && preempted) throw inputError('--preempted counts on-CPU runs: it does not go with --offcpu');
    return { offcpu, preempted };
  },
  rodata: (o) => ({ offcpu: o.offcpu, preempted_only: o.preempted }),
  // `ebpf-studio cpudist`, printed like libbpf-tools cpudist
  cli: {
    pid: 'only threads of process P',
    per: { process: 'one histogram per process', thread: 'one histogram per thread' },
    flags: {
      offcpu: 'time off the CPU between runs instead of on it (libbpf-tools cpudist -O)',
      preempted: 'only runs that ended in preemption, not in a sleep (what libbpf-tools cpudist counts)',
    },
    usage: '[--offcpu | --preempted]',
    banner: (targets, o) => `Tracing ${o.offcpu ? 'off' : 'on'}-CPU time${o.preempted ? ' of preempted runs' : ''}${targets.length ? ` of pid ${targets.join(', ')}` : o.container ? ` of container ${containerCgroup(o.container).label}` : ''}... Hit Ctrl-C to end.`,
  },
});
