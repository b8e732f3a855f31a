/* SPDX-License-Identifier: GPL-2.0 */
/* "Profile the slow calls" for bpf/latency.bpf.c: a wall-clock profile (on-CPU samples of a
 * cpu-clock perf event, off-CPU intervals from sched_switch with why the thread was off, as
 * bpf/offcpu.bpf.c's wall mode) that keeps only what happened inside calls slower than the
 * threshold. While a thread is inside a call of the function (its outermost call in flight; a
 * recursive call is inside it), its samples and intervals are summed per (stacks, state) in a
 * small buffer of its own; at the return of that call the buffer goes to the totals map when the
 * call was slow and is dropped otherwise, so nothing per sample crosses to user space and a fast
 * call costs the buffer's two lookups. The outermost call lasts at least as long as any call it
 * contains, so every slow call's samples are kept. Totals use offcpu.h's key and value, read by
 * the off-CPU tracer's decoders. */
#ifndef EBPF_STUDIO_LATENCY_SLOWPROF_BPF_H
#define EBPF_STUDIO_LATENCY_SLOWPROF_BPF_H

#include "offcpu.h"
#include "cfi_walk.bpf.h"
#include "offcpu_state.bpf.h"

/* Profiling on (the programs below are loaded and the maps sized only then). */
const volatile bool profile_slow = false;
/* The weight of one on-CPU sample (1e9 / frequency). */
const volatile __u64 prof_sample_ns = 0;
/* User stacks walked by the target's unwind tables (cfi_walk.bpf.h): the measured function often
 * blocks in a libc routine built without frame pointers, and a frame-pointer walk from there
 * skips the routine's caller, which may be the function itself. false: frame pointers. */
const volatile bool prof_cfi = false;

/* Distinct (stacks, state) kept per call; more are counted lost. */
#define PROF_SLOTS 32

struct prof_entry {
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 state;
	__u32 count;
	__u64 ns;
};

struct prof_thread {
	__u64 call_start; /* entry time of the outermost call in flight; 0: outside any */
	__u64 out_ts;     /* switched out inside a call at (bpf_ktime_get_ns); 0: on CPU */
	__s32 out_user_stack_id;
	__s32 out_kern_stack_id;
	__u32 out_state;
	__u32 n;
	struct prof_entry e[PROF_SLOTS];
};

/* max_entries 1 each unless profiling (user space sizes them). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct prof_thread);
} prof_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, OFFCPU_MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
} totals SEC(".maps");

static const struct prof_thread empty_prof_thread;

/* A new outermost call: whatever the buffer held belonged to a call that ended without a return. */
static __always_inline void prof_begin(__u32 tid, __u64 now)
{
	struct prof_thread *t = bpf_map_lookup_elem(&prof_threads, &tid);

	if (!t) {
		if (bpf_map_update_elem(&prof_threads, &tid, &empty_prof_thread, BPF_NOEXIST) && !bpf_map_lookup_elem(&prof_threads, &tid)) {
			stat_add(LAT_PROF_LOST, 1);
			return;
		}
		t = bpf_map_lookup_elem(&prof_threads, &tid);
		if (!t)
			return;
	}
	t->call_start = now;
	t->out_ts = 0;
	t->n = 0;
}

static __always_inline void prof_add(struct prof_thread *t, __s32 uid, __s32 kid, __u32 state, __u64 ns)
{
	__u32 n = t->n, slot;
	struct prof_entry *e;

	for (int i = 0; i < PROF_SLOTS; i++) {
		e = &t->e[i & (PROF_SLOTS - 1)];
		if (i >= n)
			break;
		if (e->user_stack_id == uid && e->kern_stack_id == kid && e->state == state) {
			e->ns += ns;
			e->count++;
			return;
		}
	}
	if (n >= PROF_SLOTS) {
		stat_add(LAT_PROF_LOST, 1);
		return;
	}
	slot = n & (PROF_SLOTS - 1);
	/* keep the masked index: the compiler would index by n, which the verifier cannot bound */
	__asm__ volatile("" : "+r"(slot));
	e = &t->e[slot & (PROF_SLOTS - 1)];
	e->user_stack_id = uid;
	e->kern_stack_id = kid;
	e->state = state;
	e->count = 1;
	e->ns = ns;
	t->n = n + 1;
}

static __always_inline void prof_keep(struct prof_entry *e, struct offcpu_key *k)
{
	struct offcpu_val one = { .total_ns = e->ns, .count = e->count }, *v;

	k->user_stack_id = e->user_stack_id;
	k->kern_stack_id = e->kern_stack_id;
	k->state = e->state;
	v = bpf_map_lookup_elem(&totals, k);
	if (v) {
		/* one thread's key: only this thread's return adds to it */
		v->total_ns += e->ns;
		v->count += e->count;
	} else if (bpf_map_update_elem(&totals, k, &one, BPF_NOEXIST)) {
		stat_add(LAT_PROF_LOST, 1);
	}
}

/* The outermost call in flight returned (or was left): its samples kept when it was slow. */
static __always_inline void prof_end(__u32 tid, __u32 tgid, bool slow)
{
	struct prof_thread *t = bpf_map_lookup_elem(&prof_threads, &tid);
	struct offcpu_key k = {};
	__u32 n;

	if (!t || !t->call_start)
		return;
	n = t->n;
	t->call_start = 0;
	t->n = 0;
	if (!slow) {
		stat_add(LAT_PROF_DROPPED, 1);
		return;
	}
	k.pid = tgid;
	k.tid = tid;
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	for (int i = 0; i < PROF_SLOTS; i++) {
		if (i >= n)
			break;
		prof_keep(&t->e[i & (PROF_SLOTS - 1)], &k);
	}
	stat_add(LAT_PROF_KEPT, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lat_prof_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct prof_thread *t;
	__u32 tid = prev->pid;
	__u64 now;

	if (tid && prev->tgid == target_tgid) {
		t = bpf_map_lookup_elem(&prof_threads, &tid);
		if (t && t->call_start) {
			/* the kernel walk starts here: skip this program's frame */
			t->out_kern_stack_id = bpf_get_stackid(ctx, &stacks, 1 & BPF_F_SKIP_FIELD_MASK);
			t->out_user_stack_id = cfi_or_fp_user_stackid(ctx, &stacks, prev, prof_cfi);
			t->out_state = offcpu_state(prev, ((struct pt_regs *)bpf_task_pt_regs(prev))->orig_ax);
			t->out_ts = bpf_ktime_get_ns();
		}
	}
	tid = next->pid;
	if (!tid || next->tgid != target_tgid)
		return 0;
	t = bpf_map_lookup_elem(&prof_threads, &tid);
	if (!t || !t->out_ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (t->call_start && now > t->out_ts)
		prof_add(t, t->out_user_stack_id, t->out_kern_stack_id, t->out_state, now - t->out_ts);
	t->out_ts = 0;
	return 0;
}

/* On-CPU: a cpu-clock sample of a thread inside a call weighs prof_sample_ns. */
SEC("perf_event")
int lat_prof_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct prof_thread *t;

	if (!tid || (id >> 32) != target_tgid)
		return 0;
	t = bpf_map_lookup_elem(&prof_threads, &tid);
	if (!t || !t->call_start)
		return 0;
	prof_add(t, cfi_or_fp_user_stackid(ctx, &stacks, bpf_get_current_task_btf(), prof_cfi), bpf_get_stackid(ctx, &stacks, 0), OFFCPU_STATE_ONCPU, prof_sample_ns);
	return 0;
}

#endif
