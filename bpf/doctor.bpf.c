// One do-nothing program per attach kind. `ebpf-studio doctor` loads them one at a time (the
// others' autoload off) to learn which kinds this kernel really accepts, instead of guessing
// from the kernel config.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tracepoint/sched/sched_process_exec")
int probe_tracepoint(void *ctx) { return 0; }

SEC("raw_tp/sched_switch")
int probe_raw_tp(void *ctx) { return 0; }

SEC("tp_btf/sched_switch")
int probe_tp_btf(void *ctx) { return 0; }

SEC("uprobe")
int probe_uprobe(void *ctx) { return 0; }

SEC("usdt")
int probe_usdt(void *ctx) { return 0; }

SEC("perf_event")
int probe_perf_event(void *ctx) { return 0; }

SEC("kprobe/do_nanosleep")
int probe_kprobe(void *ctx) { return 0; }

SEC("fentry/do_nanosleep")
int BPF_PROG(probe_fentry) { return 0; }
