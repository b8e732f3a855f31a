// Block I/O latency (biolatency): log2 histograms of how long block requests take from issue (or,
// with --queued, from entering the I/O scheduler's queue) to completion, for all disks, per disk
// or per process; bpf/biolatency.bpf.c on the log2-histogram kit.
import { histTracer } from './histTracer';
import { bool } from '../protocol/validate';

export const biolatencyTracer = histTracer({
  name: 'biolatency',
  object: 'biolatency',
  programs: ['rq_insert', 'rq_issue', 'rq_complete'],
  attaches: 'the block tracepoints',
  // key_mode 0, BIO_KEY_DISK, BIO_KEY_PROCESS
  per: ['none', 'disk', 'process'],
  options: (o) => ({ queued: bool(o, 'queued', false) }),
  rodata: (o) => ({ queued: o.queued }),
});
