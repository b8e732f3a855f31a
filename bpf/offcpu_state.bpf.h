/* Why a thread leaves the CPU, and its user stack at that moment: the off-CPU profile
 * (offcpu.bpf.c) and the latency tracer's slow-call profile (latency_slowprof.bpf.h) class and
 * walk alike. Needs vmlinux.h, <bpf/bpf_core_read.h>, task.bpf.h, cfi_walk.bpf.h and offcpu.h
 * first. */
#ifndef EBPF_STUDIO_OFFCPU_STATE_BPF_H
#define EBPF_STUDIO_OFFCPU_STATE_BPF_H

#define TASK_RUNNING 0
#define TASK_UNINTERRUPTIBLE 0x2
/* x86_64 system call numbers of the futex waits */
#define NR_futex 202
#define NR_futex_waitv 449

/* prev (being switched out) in system call nr: preempted, in I/O, waiting on a futex, or asleep. */
static __always_inline __u32 offcpu_state(struct task_struct *prev, long nr)
{
	long state = bpf_core_field_exists(prev->__state) ? prev->__state : task_state(prev);

	if (state == TASK_RUNNING)
		return OFFCPU_STATE_PREEMPTED;
	if (state & TASK_UNINTERRUPTIBLE)
		return OFFCPU_STATE_IO;
	if (nr == NR_futex || nr == NR_futex_waitv)
		return OFFCPU_STATE_LOCK;
	return OFFCPU_STATE_SLEEP;
}

/* task's user stack in stack_map: by its unwind tables when use_cfi and its code has them, else
 * by frame pointers. */
static __always_inline __s32 cfi_or_fp_user_stackid(void *ctx, void *stack_map, struct task_struct *task, bool use_cfi)
{
	struct pt_regs *regs;
	long id;

	if (use_cfi) {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		id = cfi_user_stackid(task->tgid, regs->ip, regs->sp, regs->bp, OFFCPU_MAX_DEPTH);
		if (id != -ENOENT)
			return id;
	}
	return bpf_get_stackid(ctx, stack_map, BPF_F_USER_STACK);
}

#endif
