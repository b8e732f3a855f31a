/* Task helpers shared by the scheduler and sampling programs (offcpu, runqlat, profile, memleak):
 * a task's state across kernel versions, the current thread's id in its own pid namespace, its
 * process's start time, and which bpf_get_stackid errors lost a stack. Needs vmlinux.h and
 * <bpf/bpf_core_read.h> first. */
#ifndef EBPF_STUDIO_TASK_BPF_H
#define EBPF_STUDIO_TASK_BPF_H

#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

/* Kernels before 5.14 call the field `state` (a long); later ones `__state` (an unsigned int). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* A thread's id in its own (innermost) pid namespace: what gettid() returns inside a
 * container (the Java agent's join key). task->thread_pid->numbers[level].nr; 0 when it cannot
 * be read. */
static __always_inline __u32 task_ns_tid(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level;
	__u32 nr = 0;

	if (!p)
		return 0;
	level = BPF_CORE_READ(p, level);
	if (level > 31) /* MAX_PID_NS_LEVEL */
		return 0;
	bpf_core_read(&nr, sizeof(nr), &p->numbers[level].nr);
	return nr;
}

static __always_inline __u32 current_ns_tid(void)
{
	return task_ns_tid((struct task_struct *)bpf_get_current_task());
}

/* Kernels before 5.5 call the process start time on the boot clock `real_start_time`. */
struct task_struct___pre55 {
	u64 real_start_time;
} __attribute__((preserve_access_index));

/* Whether the current thread's process started inside [lo, hi) ns of boot time (CLOCK_BOOTTIME,
 * what /proc/PID/stat's field 22 counts in clock ticks): a pid number alone names whichever
 * process holds it now, so a program that signals a target chosen by pid checks it is still the
 * process user space chose, never the next one to get that pid. lo == hi: no check (system-wide,
 * or no start time given). A thread's exec keeps its process's start time. */
static __always_inline bool current_started_in(__u64 lo, __u64 hi)
{
	struct task_struct *task, *leader;
	__u64 start;

	if (lo == hi)
		return true;
	task = (struct task_struct *)bpf_get_current_task();
	leader = BPF_CORE_READ(task, group_leader);
	if (bpf_core_field_exists(leader->start_boottime))
		start = BPF_CORE_READ(leader, start_boottime);
	else
		start = BPF_CORE_READ((struct task_struct___pre55 *)leader, real_start_time);
	return start >= lo && start < hi;
}

/* Whether the current thread's effective uid is `euid` (a kernel uid: as /proc shows it from the
 * initial user namespace). A process keeps its pid and start time across exec, so the target that
 * execs a setuid program, or a thread that changed its credentials, is another principal under
 * the same identity: a program signals only threads that still act as the user who owns the
 * target. (__u32)-1: no check. */
static __always_inline bool current_euid_is(__u32 euid)
{
	struct task_struct *task;

	if (euid == (__u32)-1)
		return true;
	task = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(task, cred, euid.val) == euid;
}

/* -EEXIST (hash-bucket collision without BPF_F_REUSE_STACKID) and -ENOMEM (map full) lose a
 * stack that existed; -EFAULT only says there was none (user stack of a kernel thread). */
static __always_inline bool stack_lost(long id)
{
	return id == -EEXIST || id == -ENOMEM;
}

#endif
