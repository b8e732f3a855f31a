// SPDX-License-Identifier: GPL-2.0
/* CPU time per run: how long a thread stays on a CPU each time it is switched in (or, with
 * `offcpu`, how long it stays off one between runs), from sched_switch alone, in log2 histograms
 * for everything, per process or per thread, on the log2-histogram kit (hist_tracer.bpf.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hist_tracer.bpf.h"
#include "task.bpf.h"
#include "cgroup_filter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

/* key_mode values, in the order of the tracer's `per` list (extension/tracers/cpudist.ts) */
#define CPUD_KEY_PROCESS 1
#define CPUD_KEY_THREAD 2

/* Time off the CPU between runs (libbpf-tools cpudist -O) instead of on it. */
const volatile bool offcpu = false;
/* On-CPU runs only when they ended with the thread still runnable (preempted): what
 * libbpf-tools cpudist counts; by default a run that ends in a sleep counts too. */
const volatile bool preempted_only = false;

/* When each thread's current run (on or off the CPU) began, by thread id. A run's end does not
 * delete its entry (the thread's next start overwrites it, and a delete per switch costs ~100 ns);
 * a thread's exit does, so the map holds live threads only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

/* The idle task (tid 0, one per CPU) is not a thread anyone asks about; the filter is by process. */
static __always_inline bool wanted(struct task_struct *t, __u32 tid)
{
	return tid && (!target_tgid || BPF_CORE_READ(t, tgid) == target_tgid) && in_target_cgroup(t);
}

static __always_inline void run_begins(struct task_struct *t, __u64 now)
{
	__u32 tid = BPF_CORE_READ(t, pid);

	if (wanted(t, tid) && bpf_map_update_elem(&start, &tid, &now, BPF_ANY))
		hist_count_loss(HIST_CTR_START_FULL);
}

/* Ends t's run at now; counts it when `count` (a run that began before tracing has no start).
 * Its start stays: the switch that ends a run begins the next (on or off), which overwrites it. */
static __always_inline void run_ends(struct task_struct *t, __u64 now, bool count)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	struct hist_value *h;
	__u64 *began;
	__s64 delta;
	__u32 key;

	if (!wanted(t, tid))
		return;
	began = bpf_map_lookup_elem(&start, &tid);
	if (!began)
		return;
	delta = now - *began;
	if (!count || delta < 0)
		return;
	key = key_mode == CPUD_KEY_PROCESS ? BPF_CORE_READ(t, tgid) : key_mode == CPUD_KEY_THREAD ? tid : HIST_KEY_NONE;
	h = hist_add(key, delta);
	if (!h || h->comm[0] || key_mode == 0)
		return;
	/* A process is named after its main thread, not whichever thread ran first. */
	if (key_mode == CPUD_KEY_PROCESS)
		BPF_CORE_READ_STR_INTO(&h->comm, t, group_leader, comm);
	else
		BPF_CORE_READ_STR_INTO(&h->comm, t, comm);
}

/* sched_switch: (bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
static __always_inline void on_switch(unsigned long long *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	__u64 now = bpf_ktime_get_ns();

	if (offcpu) {
		/* A thread's last switch comes after its exit: it has no time off to begin. */
		if (!(task_state(prev) & TASK_DEAD))
			run_begins(prev, now);
		run_ends(next, now, true);
		return;
	}
	run_ends(prev, now, !preempted_only || task_state(prev) == TASK_RUNNING);
	run_begins(next, now);
}

/* sched_process_exit: (struct task_struct *p), fired for each exiting thread */
static __always_inline void on_exit(unsigned long long *ctx)
{
	__u32 tid = BPF_CORE_READ((struct task_struct *)ctx[0], pid);

	bpf_map_delete_elem(&start, &tid);
}

/* sched_process_exec: attached per process or per thread only (extension/tracers/cpudist.ts) */
static __always_inline void on_exec(unsigned long long *ctx)
{
	hist_rename_on_exec();
}

HIST_TWIN(sched_switch, cpu_switch, on_switch)
HIST_TWIN(sched_process_exit, cpu_exit, on_exit)
HIST_TWIN(sched_process_exec, cpu_exec, on_exec)
