// Block I/O latency (biolatency): log2 histograms of how long block requests take from issue (or,
// with --queued, from entering the I/O scheduler's queue) to completion, for all disks, per disk
// or per process; bpf/biolatency.bpf.c on the log2-histogram kit.
import { histTracer } from './histTracer';
import { containerCgroup } from '../sys/proc/containerCgroup';

export const biolatencyTracer = histTracer({
  name: 'biolatency',
  object: 'biolatency',
  programs: ['rq_start', 'rq_insert', 'rq_issue', 'rq_complete'],
  // The queue's insert is timed with --queued only: otherwise its program would run per request for
  // nothing. A request told apart by who started it (a pid, a container, per process) is judged where
  // it was made from a bio (block_io_start): a busy queue issues it later from another task's context.
  attachOnly: (o) => [...(o.pid || o.container || o.per === 'process' ? ['rq_start'] : []), ...(o.queued ? ['rq_insert'] : []), 'rq_issue', 'rq_complete'],
  newerKernel: ['rq_start'],
  attaches: 'the block tracepoints',
  // key_mode 0, BIO_KEY_DISK, BIO_KEY_PROCESS
  per: ['none', 'disk', 'process'],
  // I/O a container's tasks start, by their cgroup (bpf/cgroup_filter.bpf.h)
  containerFilter: true,
  rodata: (o, loaded) => ({ queued: o.queued, by_starter: loaded.includes('rq_start') }),
  // `ebpf-studio biolatency`, printed like libbpf-tools biolatency
  cli: {
    pid: 'only I/O that process P started',
    per: { disk: 'one histogram per disk', process: 'one histogram per process (the one that started the I/O)' },
    flags: { queued: 'count from entering the I/O scheduler queue, not from issue to the device' },
    banner: (targets, o) => `Tracing block device I/O${o.queued ? ' (queued and on the device)' : ''}${targets.length ? ` of pid ${targets.join(', ')}` : o.container ? ` started by container ${containerCgroup(o.container).label}` : ''}... Hit Ctrl-C to end.`,
  },
});
