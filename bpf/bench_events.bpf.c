// SPDX-License-Identifier: GPL-2.0
/* Ring-buffer event generator for the event-throughput benchmark (bench/eventThroughput.ts):
 * every getppid() of the target process becomes events_per_hit events. Events that find no
 * room are counted in the kernel, so the benchmark reports loss exactly. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bench_events.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile __u32 events_per_hit = 1;
/* x86_64 __NR_getppid */
const volatile long syscall_nr = 110;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seqs SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v && n)
		__sync_fetch_and_add(v, n);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(bench_sys_enter, struct pt_regs *regs, long id)
{
	__u64 submitted = 0, dropped = 0, ts;
	__u32 zero = 0, pid, cpu;
	__u64 *seq;

	if (id != syscall_nr || (bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	seq = bpf_map_lookup_elem(&seqs, &zero);
	if (!seq)
		return 0;
	ts = bpf_ktime_get_ns();
	pid = (__u32)bpf_get_current_pid_tgid();
	cpu = bpf_get_smp_processor_id();
	for (__u32 i = 0; i < BENCH_EVENTS_MAX_PER_HIT && i < events_per_hit; i++) {
		struct bench_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

		if (!e) {
			dropped++;
			continue;
		}
		e->seq = (*seq)++;
		e->ts = ts;
		e->pid = pid;
		e->index = i;
		e->cpu = cpu;
		e->pad = 0;
		bpf_ringbuf_submit(e, 0);
		submitted++;
	}
	count(BENCH_CTR_SUBMITTED, submitted);
	count(BENCH_CTR_DROPPED, dropped);
	return 0;
}
