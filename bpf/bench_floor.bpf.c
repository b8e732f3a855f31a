// SPDX-License-Identifier: GPL-2.0
/* The uprobe floor for the memleak overhead benchmark (bench/memleakOverhead.ts): programs that
 * do nothing, attached to exactly the uprobes and uretprobes the memleak tracer uses, so the
 * benchmark can separate what the kernel charges per probe hit from what our BPF logic adds. */
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
