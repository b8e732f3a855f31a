// SPDX-License-Identifier: GPL-2.0
/* The smallest probe set that exercises every layer of the stack: rodata, ring buffer,
 * hash/array/stack maps and each attach type the addon offers. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "selftest.h"

char LICENSE[] SEC("license") = "GPL";

/* 0 = every exec; otherwise only execs whose parent process has this tgid. */
const volatile int target_ppid = 0;
/* The task iterator's process: it writes one (tid, tgid) pair per thread of this tgid. */
const volatile int iter_tgid = 0;
/* Echoed into every event so user space can prove setRodata reached the kernel. */
const volatile __u64 magic = 0;

/* Events that did not fit in the ring buffer (user space reported as "lost"). */
__u64 dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __s32);
	__type(value, __u64);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} uprobe_hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} usdt_hits SEC(".maps");

static __always_inline void bump(void *map, const void *key)
{
	__u64 one = 1, *val = bpf_map_lookup_elem(map, key);

	if (val)
		__sync_fetch_and_add(val, 1);
	else
		bpf_map_update_elem(map, key, &one, BPF_NOEXIST);
}

/* All three exec programs run in the context of the task that just exec'd, so the
 * current task is the one to report whichever hook delivered the call. */
static __always_inline int report_exec(__u32 source)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 ppid = BPF_CORE_READ(task, real_parent, tgid);
	__u64 id = bpf_get_current_pid_tgid();
	struct selftest_event *e;
	__u32 pid = (__u32)id;

	if (target_ppid && ppid != (__u32)target_ppid)
		return 0;
	bump(&counts, &pid);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	e->magic = magic;
	e->pid = pid;
	e->tgid = id >> 32;
	e->ppid = ppid;
	e->source = source;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int on_exec_tp(void *ctx)
{
	return report_exec(SELFTEST_SRC_TRACEPOINT);
}

SEC("raw_tp/sched_process_exec")
int on_exec_raw(void *ctx)
{
	return report_exec(SELFTEST_SRC_RAW_TP);
}

SEC("tp_btf/sched_process_exec")
int on_exec_btf(void *ctx)
{
	return report_exec(SELFTEST_SRC_TP_BTF);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__s32 id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

	if (id >= 0)
		bump(&samples, &id);
	return 0;
}

SEC("uprobe")
int on_uprobe(struct pt_regs *ctx)
{
	__u32 zero = 0;

	bump(&uprobe_hits, &zero);
	return 0;
}

SEC("usdt")
int on_usdt(struct pt_regs *ctx)
{
	__u32 zero = 0;

	bump(&usdt_hits, &zero);
	return 0;
}

/* runIterator: one (tid, tgid) pair of u32 per thread of iter_tgid. */
SEC("iter/task")
int each_thread(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u32 rec[2];

	if (!task || task->tgid != iter_tgid)
		return 0;
	rec[0] = task->pid;
	rec[1] = task->tgid;
	bpf_seq_write(ctx->meta->seq, rec, sizeof(rec));
	return 0;
}
