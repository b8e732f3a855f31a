// SPDX-License-Identifier: GPL-2.0
/* Floors for the overhead benchmarks: programs that do nothing, attached where a tracer attaches,
 * so a benchmark can separate what the kernel charges per hit from what our BPF logic adds: the
 * memleak tracer's uprobes and uretprobes (bench/memleakOverhead.ts), the off-CPU tracer's
 * sched_switch tracepoint (bench/offcpuOverhead.ts). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int floor_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_exit(struct pt_regs *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int floor_switch(void *ctx)
{
	return 0;
}
