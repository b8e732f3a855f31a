// SPDX-License-Identifier: GPL-2.0
/* CPU profiler: a perf_event cpu-clock program on every online CPU counts samples keyed by
 * (pid, tid, user stack id, kernel stack id, comm). User space reads the counts and the stack
 * map once at the end, so the kernel side never copies stacks per sample. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"

char LICENSE[] SEC("license") = "GPL";

#define EEXIST 17
#define ENOMEM 12
#define E2BIG 7

/* 0 = every process; otherwise only samples of this tgid. */
const volatile __u32 target_pid = 0;
/* Whether samples of the idle task (pid 0) count; only meaningful system-wide. */
const volatile bool include_idle = false;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
/* Java agent (issue 14): signal the sampled thread so the JVMTI agent's SIGPROF handler walks
 * its Java stack now, and emit (tid, ktime, stack ids) for the join. Only with target_pid set,
 * and only once the agent's handler is installed (extension/tracers/javaAgent.ts). */
const volatile bool signal_target = false;

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

static __always_inline void stat_add(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer while this program runs on this CPU */
}

/* -EEXIST (hash-bucket collision without BPF_F_REUSE_STACKID) and -ENOMEM (map full) lose a
 * stack that existed; -EFAULT only says there was none (user stack of a kernel thread). */
static __always_inline bool stack_lost(long id)
{
	return id == -EEXIST || id == -ENOMEM;
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

	if (target_pid && tgid != target_pid)
		return 0;
	if (!target_pid && tid == 0 && !include_idle)
		return 0;
	stat_add(PROFILE_STAT_SAMPLES);

	key.pid = tgid;
	key.tid = tid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.user_stack_id = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;
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
	if (signal_target && target_pid) {
		struct profile_java_sample *js = bpf_ringbuf_reserve(&java_samples, sizeof(*js), 0);

		bpf_send_signal_thread(27 /* SIGPROF */);
		if (js) {
			js->tid = tid;
			js->user_stack_id = key.user_stack_id;
			js->kern_stack_id = key.kern_stack_id;
			js->pad = 0;
			js->ktime_ns = bpf_ktime_get_ns();
			bpf_ringbuf_submit(js, 0);
		} else {
			stat_add(PROFILE_STAT_LOST);
		}
	}
	return 0;
}
