// SPDX-License-Identifier: GPL-2.0
/* CPU profiler: a perf_event cpu-clock program on every online CPU. Two ways to get user stacks:
 *  - frame pointers (unwind_dwarf = false): samples are counted in the kernel keyed by
 *    (pid, tid, user stack id, kernel stack id, comm); user space reads the counts and the stack
 *    map once at the end, so no stack is copied per sample.
 *  - DWARF/CFI (unwind_dwarf = true): each sample goes to user space through a ring buffer with the
 *    user registers and a copy of the top of the user stack; user space unwinds it with the CFI of
 *    each module (libdw). Kernel stacks come from bpf_get_stackid in both modes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "stackcopy.bpf.h"
#include "task.bpf.h"
#include "cfi_walk.bpf.h"
#include "profile.h"

char LICENSE[] SEC("license") = "GPL";

#define E2BIG 7

/* 0 = every process; otherwise only samples of this tgid. */
const volatile __u32 target_pid = 0;
/* The target's start on the boot clock, [lo, hi) ns (its start tick from /proc/PID/stat): a later
 * process that gets target_pid is neither sampled nor signalled. lo == hi: no check. */
const volatile __u64 target_start_lo = 0;
const volatile __u64 target_start_hi = 0;
/* Whether samples of the idle task (pid 0) count; only meaningful system-wide. */
const volatile bool include_idle = false;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
const volatile bool unwind_dwarf = false;
/* Counted mode with user stacks walked by unwind tables in the kernel (cfi_walk.bpf.h) for
 * processes that have them in cfi_procs, by frame pointers for the rest. */
const volatile bool unwind_cfi = false;
/* bytes of user stack copied per sample in dwarf mode (<= PROFILE_MAX_STACK_COPY) */
const volatile __u32 stack_copy_bytes = 16384;
/* Java agent: signal the sampled thread so the JVMTI agent's SIGPROF handler walks
 * its Java stack now, and emit (tid, ktime, stack ids) for the join (frame-pointer mode; in dwarf
 * mode the sample record carries tid and ktime already). Only with target_pid set,
 * and only once the agent's handler is installed (extension/tracers/javaAgent/agent.ts). */
const volatile bool signal_target = false;
/* The JVM owner's effective uid: a thread acting as anyone else (the target exec'd a setuid
 * program, a thread changed its credentials) is never signalled. (__u32)-1: no check. */
const volatile __u32 signal_euid = (__u32)-1;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} java_samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 40960);
	__type(key, struct profile_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* One sample under construction per CPU. Not a per-CPU array: those cap a value at 32 KiB, less
 * than a sample's header plus the largest copy. User space sets max_entries to the number of
 * possible CPUs; a perf_event program is not preempted, so its CPU's slot is its own. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_sample);
} scratch SEC(".maps");

/* dwarf-mode samples; user space sizes it (setMaxEntries) before load */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} samples SEC(".maps");

static __always_inline void stat_add(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer while this program runs on this CPU */
}

static __always_inline void emit_sample(__u32 tgid, __u32 tid, __s32 kern_stack_id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct profile_sample *s;
	struct pt_regs *regs;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 sp, len = 0;
	long ret;

	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!s)
		return;
	s->ts = bpf_ktime_get_ns();
	s->pid = tgid;
	s->tid = tid;
	s->kern_stack_id = kern_stack_id;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	/* the Java agent's join key (its records carry gettid() as seen in the JVM's namespace) */
	s->ns_tid = signal_target ? current_ns_tid() : 0;
	s->reserved = 0;
	__builtin_memset(s->regs, 0, sizeof(s->regs));
	if (user_stacks && BPF_CORE_READ(task, mm)) {
		/* the user-mode registers saved on entry to the kernel, whether this sample
		 * interrupted user code or a system call */
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		stackcopy_regs(regs, s->regs);
		sp = s->regs[7];
		len = STACKCOPY(s->stack, PROFILE_MAX_STACK_COPY, sp, stack_copy_bytes);
	} else {
		stat_add(PROFILE_STAT_NO_USER_REGS);
	}
	s->stack_len = len;
	ret = bpf_ringbuf_output(&samples, s, PROFILE_SAMPLE_HEADER_SIZE + len, 0);
	if (ret) {
		stat_add(PROFILE_STAT_LOST_RINGBUF);
		stat_add(PROFILE_STAT_LOST);
	} else {
		stat_add(PROFILE_STAT_SAMPLES_DWARF);
	}
}


/* The user stack: by the process's unwind tables when it has them, else by frame pointers. The
 * user-mode registers are the ones saved on entry to the kernel, whether this sample interrupted
 * user code or a system call. */
static __always_inline __s32 user_stackid(void *ctx, __u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	long id;

	/* kernel threads have no user stack (bpf_get_stackid says so with -EFAULT) */
	if (unwind_cfi && BPF_CORE_READ(task, mm)) {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		id = cfi_user_stackid(tgid, regs->ip, regs->sp, regs->bp, PROFILE_MAX_DEPTH);
		if (!target_pid && id == -ENOENT)
			cfi_want(tgid, CFI_WANT_NEW);
		else if (!target_pid && id >= 0 && cfi_last_stop() == CFI_STOP_NO_MAPPING)
			cfi_want(tgid, CFI_WANT_REMAP);
		if (id != -ENOENT)
			return id;
	}
	return bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profile_key key = {};
	__u64 one = 1, *val;
	bool lost = false;
	long ret;

	if (target_pid && (tgid != target_pid || !current_started_in(target_start_lo, target_start_hi)))
		return 0;
	if (!target_pid && tid == 0 && !include_idle)
		return 0;
	stat_add(PROFILE_STAT_SAMPLES);

	if (unwind_dwarf) {
		long kid = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -1;

		if (stack_lost(kid))
			stat_add(PROFILE_STAT_LOST_KSTACK);
		emit_sample(tgid, tid, kid);
		/* the sample record itself (tid, ts) is the join record: no java_samples entry */
		if (signal_target && target_pid && current_euid_is(signal_euid))
			bpf_send_signal_thread(27 /* SIGPROF */);
		return 0;
	}

	key.pid = tgid;
	key.tid = tid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.user_stack_id = user_stacks ? user_stackid(ctx, tgid) : -1;
	key.kern_stack_id = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	if (stack_lost(key.user_stack_id)) {
		stat_add(PROFILE_STAT_LOST_USTACK);
		lost = true;
	}
	if (stack_lost(key.kern_stack_id)) {
		stat_add(PROFILE_STAT_LOST_KSTACK);
		lost = true;
	}

	val = bpf_map_lookup_elem(&counts, &key);
	if (val) {
		__sync_fetch_and_add(val, 1);
	} else {
		ret = bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
		if (ret == -EEXIST) {
			/* another CPU inserted the same key between our lookup and update */
			val = bpf_map_lookup_elem(&counts, &key);
			if (val)
				__sync_fetch_and_add(val, 1);
		} else if (ret) {
			stat_add(PROFILE_STAT_LOST_COUNTS);
			lost = true;
		}
	}
	if (lost)
		stat_add(PROFILE_STAT_LOST);
	if (signal_target && target_pid && current_euid_is(signal_euid)) {
		struct profile_java_sample *js = bpf_ringbuf_reserve(&java_samples, sizeof(*js), 0);

		bpf_send_signal_thread(27 /* SIGPROF */);
		if (js) {
			js->tid = tid;
			js->user_stack_id = key.user_stack_id;
			js->kern_stack_id = key.kern_stack_id;
			js->ns_tid = current_ns_tid();
			js->ktime_ns = bpf_ktime_get_ns();
			bpf_ringbuf_submit(js, 0);
		} else {
			stat_add(PROFILE_STAT_LOST);
		}
	}
	return 0;
}
