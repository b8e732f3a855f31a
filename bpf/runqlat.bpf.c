// SPDX-License-Identifier: GPL-2.0
/* Run-queue latency: the time from a thread becoming runnable (wakeup, new task, or preemption
 * while still runnable) to it getting a CPU. Histograms are built here, per key, so nothing is
 * sent per event; user space reads and resets them each interval through the epoch protocol of
 * hist_epoch.bpf.h (the log2-histogram kit: hist_tracer.bpf.h, which also makes each hook's
 * tp_btf and raw_tp twins). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hist_tracer.bpf.h"
#include "task.bpf.h"
#include "cgroup_filter.bpf.h"
#include "runqlat.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0


/* Enqueue timestamp per thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

static __always_inline void enqueue(struct task_struct *t)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	__u64 ts;

	if (!tid)
		return; /* the idle task */
	if (target_tgid && BPF_CORE_READ(t, tgid) != target_tgid)
		return;
	if (!in_target_cgroup(t))
		return;
	ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&start, &tid, &ts, BPF_ANY))
		hist_count_loss(HIST_CTR_START_FULL);
}

/* The inode number of the task's active pid namespace: thread_pid->numbers[level].ns. */
static __always_inline __u32 pidns_inum(struct task_struct *t)
{
	struct pid *pid = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid upid = {};

	bpf_core_read(&upid, sizeof(upid), &pid->numbers[level]);
	return BPF_CORE_READ(upid.ns, ns.inum);
}

/* The task's cgroup in the v2 (default) hierarchy, by its kernfs id: on 64-bit kernels that is the
 * inode number of the cgroup's directory, which user space maps back to the path. The low 32 bits
 * fit the key; the high ones are a generation that stays 1 on 64-bit kernels. */
static __always_inline __u32 cgroup_key(struct task_struct *t)
{
	return (__u32)BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

static __always_inline __u32 hist_key(struct task_struct *t, __u32 tid)
{
	switch (key_mode) {
	case RUNQLAT_KEY_PROCESS:
		return BPF_CORE_READ(t, tgid);
	case RUNQLAT_KEY_THREAD:
		return tid;
	case RUNQLAT_KEY_PIDNS:
		return pidns_inum(t);
	case RUNQLAT_KEY_CGROUP:
		return cgroup_key(t);
	default:
		return HIST_KEY_NONE;
	}
}

static __always_inline void on_switch(struct task_struct *prev, struct task_struct *next)
{
	struct hist_value *h;
	__u32 tid;
	__u64 *tsp;
	__s64 delta;

	/* Preempted while runnable: it waits in the run queue from now on. */
	if (task_state(prev) == TASK_RUNNING)
		enqueue(prev);

	tid = BPF_CORE_READ(next, pid);
	tsp = bpf_map_lookup_elem(&start, &tid);
	if (!tsp)
		return;
	delta = bpf_ktime_get_ns() - *tsp;
	bpf_map_delete_elem(&start, &tid);
	if (delta < 0)
		return;

	h = hist_add(hist_key(next, tid), delta);
	if (!h || h->comm[0])
		return;
	/* Per process, name it after the main thread rather than whichever thread came first. */
	if (key_mode == RUNQLAT_KEY_PROCESS)
		BPF_CORE_READ_STR_INTO(&h->comm, next, group_leader, comm);
	else
		BPF_CORE_READ_STR_INTO(&h->comm, next, comm);
}

/* sched_wakeup and sched_wakeup_new: (struct task_struct *p) */
static __always_inline void on_wakeup(unsigned long long *ctx)
{
	enqueue((struct task_struct *)ctx[0]);
}

/* sched_switch: (bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
static __always_inline void on_switch_ctx(unsigned long long *ctx)
{
	on_switch((struct task_struct *)ctx[1], (struct task_struct *)ctx[2]);
}

/* sched_process_exec: attached per process or per thread only (extension/tracers/runqlat/tracer.ts) */
static __always_inline void on_exec(unsigned long long *ctx)
{
	hist_rename_on_exec();
}

HIST_TWIN(sched_wakeup, wakeup, on_wakeup)
HIST_TWIN(sched_wakeup_new, wakeup_new, on_wakeup)
HIST_TWIN(sched_switch, switch, on_switch_ctx)
HIST_TWIN(sched_process_exec, runq_exec, on_exec)
