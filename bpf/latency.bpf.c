// SPDX-License-Identifier: GPL-2.0
/* How long one user function takes (like bcc's funclatency): a uprobe on its first instruction and
 * a uretprobe on its return. Everything per call stays in the kernel: the log2 histogram of the
 * kit (hist_tracer.bpf.h, read and reset each interval), a finer log-linear histogram for
 * percentiles (32 steps per power of two: a percentile read from it is within ~3 %), the exact
 * count and total; only calls slower than `threshold_ns` reach user space (ring buffer), each with
 * its user stack taken at the return (its caller is the first frame then).
 *
 * Calls in flight are kept per thread as a small stack of (entry sp, entry time): a recursive call
 * has a lower sp than its caller's. A call a longjmp or an exception left never returns through its
 * uretprobe: its entry is found abandoned (its sp at or below that of a newer entry, or of the
 * frame a return lands in) and dropped, counted. A thread that exits mid-call is forgotten at
 * sched_process_exit; a thread id reused before that (never seen, but cheap to check) is told by
 * the task's start time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hist_tracer.bpf.h"
#include "task.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Calls in flight kept per thread; deeper recursion is not timed (counted). */
#define LAT_DEPTH 16
/* Fine histogram: values below 32 ns one slot each, then 32 slots per power of two. */
#define LAT_FINE_SUB_BITS 5
#define LAT_FINE_SUB 32
#define LAT_FINE_SLOTS 1920
/* Frames of a slow call's user stack. */
#define LAT_STACK_MAX 48

/* Indexes into `lat_stats` (per-CPU u64, summed in user space). */
#define LAT_CALLS 0      /* calls timed */
#define LAT_SUM_NS 1     /* their total duration */
#define LAT_ABANDONED 2  /* entries dropped: left by longjmp or an exception */
#define LAT_EXITED 3     /* entries dropped: the thread exited (or its id was reused) mid-call */
#define LAT_TOO_DEEP 4   /* calls not timed: recursion deeper than LAT_DEPTH */
#define LAT_SLOW_SENT 5  /* slow calls sent to user space */
#define LAT_SLOW_LOST 6  /* slow calls counted but not sent: the ring buffer was full */
#define LAT_MAX_NS 7     /* the slowest call (per CPU; user space takes the max) */
#define LAT_PROF_KEPT 8     /* profile_slow: outermost calls whose samples were kept (slow) */
#define LAT_PROF_DROPPED 9  /* profile_slow: outermost calls whose samples were dropped (fast) */
#define LAT_PROF_LOST 10    /* profile_slow: samples or totals not kept (a buffer or map full) */
#define LAT_CALLERS_FULL 11 /* by_caller: calls not split (the callers map was full) */
#define LAT_NR_STATS 12
/* by_caller: call sites (return addresses) kept apart */
#define LAT_CALLERS_MAX 1024

/* Calls slower than this are sent to user space with their stack; 0 = none. */
const volatile __u64 threshold_ns = 0;
/* lat_return is attached to the function's ret instructions (sp there is the entry's sp) rather
 * than as a uretprobe (sp there is 8 above it). A uretprobe swaps the return address on the stack
 * for its trampoline's, which C++ exception unwinding cannot step past (the program aborts with
 * std::terminate): user space chooses the ret instructions where an exception may pass (C++,
 * Go), the uretprobe elsewhere (it costs half: its trampoline returns by syscall, not a trap). */
const volatile bool ret_insns = false;
/* Also a histogram per call site (the return address: user space names its function). */
const volatile bool by_caller = false;
/* key_mode (hist_tracer.bpf.h): one histogram for everything, or one per cgroup v2 (the low 32
 * bits of its id, as runqlat keys them): the fleet agent probes a file machine-wide (pid -1) and
 * names each cgroup's container; a cgroup outlives its processes, so an exited one is still named. */
#define LAT_KEY_CGROUP 1

struct inflight {
	__u64 task_start; /* the thread's start time: tells a reused thread id */
	__u32 depth;
	__u32 pad;
	__u64 sp[LAT_DEPTH];
	__u64 ts[LAT_DEPTH];
	/* the return address at entry: at the ret another tool's uretprobe (bpftrace's) may have
	 * swapped it for its trampoline's */
	__u64 ra[LAT_DEPTH];
};

/* Slow-call record, 40 + 8 * LAT_STACK_MAX bytes: 0 duration_ns  8 end_ns  16 tid  20 depth
 * 24 stack_bytes (s32, < 0: no stack)  28 pad  32 ret_addr (at a ret instruction: the caller's
 * return address as read at entry, which the frame-pointer walk from the ret skips; 0 at a
 * uretprobe, whose ip is in the caller already)  40 user stack (leaf first). */
struct slow_call {
	__u64 duration_ns;
	__u64 end_ns;
	__u32 tid;
	__u32 depth;
	__s32 stack_bytes;
	__u32 pad;
	__u64 ret_addr;
	__u64 stack[LAT_STACK_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LAT_FINE_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} fine SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LAT_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} lat_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} slow SEC(".maps");

/* by_caller, per return address, cumulative, 280 bytes:  0 count  8 sum_ns  16 max_ns
 * 24 slots (u64[32], log2 of the duration in unit_ns as the main histogram) */
struct caller_val {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 slots[HIST_MAX_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LAT_CALLERS_MAX);
	__type(key, __u64);
	__type(value, struct caller_val);
} callers SEC(".maps");

static const struct caller_val empty_caller;

static const struct inflight empty_inflight;

static __always_inline __u64 *stat(__u32 idx)
{
	return bpf_map_lookup_elem(&lat_stats, &idx);
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *s = stat(idx);

	if (s && n)
		*s += n; /* per-CPU: no other writer */
}

#include "latency_slowprof.bpf.h"

static __always_inline __u32 fine_slot(__u64 v)
{
	__u32 o, idx;

	if (v < LAT_FINE_SUB)
		return v;
	o = log2_u64(v);
	idx = (o - (LAT_FINE_SUB_BITS - 1)) * LAT_FINE_SUB + ((v >> (o - LAT_FINE_SUB_BITS)) & (LAT_FINE_SUB - 1));
	return idx < LAT_FINE_SLOTS ? idx : LAT_FINE_SLOTS - 1;
}

static __always_inline __u64 task_start(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, start_time);
}

/* This thread's calls in flight, created empty (or emptied when its id belongs to a new thread). */
static __always_inline struct inflight *thread_calls(__u32 tid)
{
	__u64 start = task_start();
	struct inflight *f = bpf_map_lookup_elem(&inflight, &tid);

	if (!f) {
		if (bpf_map_update_elem(&inflight, &tid, &empty_inflight, BPF_NOEXIST) && !bpf_map_lookup_elem(&inflight, &tid)) {
			hist_count_loss(HIST_CTR_START_FULL);
			return NULL;
		}
		f = bpf_map_lookup_elem(&inflight, &tid);
		if (!f)
			return NULL;
		f->task_start = start;
	}
	if (f->task_start != start) {
		stat_add(LAT_EXITED, f->depth);
		f->depth = 0;
		f->task_start = start;
	}
	return f;
}

SEC("uprobe")
int BPF_KPROBE(lat_entry)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u32 d, tid = (__u32)id, dropped = 0;
	struct inflight *f;

	if (target_tgid && (id >> 32) != target_tgid)
		return 0;
	f = thread_calls(tid);
	if (!f)
		return 0;
	/* Entries at or below this sp are frames that no longer exist: left without a return. */
	d = f->depth;
	for (int i = 0; i < LAT_DEPTH && d > 0; i++) {
		if (f->sp[(d - 1) & (LAT_DEPTH - 1)] > sp)
			break;
		d--;
		dropped++;
	}
	stat_add(LAT_ABANDONED, dropped);
	if (d >= LAT_DEPTH) {
		f->depth = d;
		stat_add(LAT_TOO_DEEP, 1);
		return 0;
	}
	f->sp[d & (LAT_DEPTH - 1)] = sp;
	f->ts[d & (LAT_DEPTH - 1)] = now;
	if ((!threshold_ns && !by_caller) || !ret_insns || bpf_probe_read_user(&f->ra[d & (LAT_DEPTH - 1)], 8, (void *)sp))
		f->ra[d & (LAT_DEPTH - 1)] = 0;
	f->depth = d + 1;
	/* a new outermost call: the slow-call profile's buffer starts over */
	if (profile_slow && d == 0)
		prof_begin(tid, now);
	return 0;
}

static __always_inline void send_slow(struct pt_regs *ctx, __u64 delta, __u64 now, __u32 tid, __u32 depth, __u64 ra)
{
	struct slow_call *s = bpf_ringbuf_reserve(&slow, sizeof(*s), 0);

	if (!s) {
		stat_add(LAT_SLOW_LOST, 1);
		return;
	}
	s->duration_ns = delta;
	s->end_ns = now;
	s->tid = tid;
	s->depth = depth;
	s->pad = 0;
	s->ret_addr = ret_insns ? ra : 0;
	s->stack_bytes = bpf_get_stack(ctx, s->stack, sizeof(s->stack), BPF_F_USER_STACK);
	bpf_ringbuf_submit(s, 0);
	stat_add(LAT_SLOW_SENT, 1);
}

/* One call from the call site that returns to ra: several threads may add at once. */
static __always_inline void count_by_caller(__u64 ra, __u64 delta)
{
	struct caller_val *c = bpf_map_lookup_elem(&callers, &ra);

	if (!c) {
		if (bpf_map_update_elem(&callers, &ra, &empty_caller, BPF_NOEXIST) && !bpf_map_lookup_elem(&callers, &ra)) {
			stat_add(LAT_CALLERS_FULL, 1);
			return;
		}
		c = bpf_map_lookup_elem(&callers, &ra);
		if (!c)
			return;
	}
	__sync_fetch_and_add(&c->count, 1);
	__sync_fetch_and_add(&c->sum_ns, delta);
	if (delta > c->max_ns)
		c->max_ns = delta; /* a race may keep the smaller of two at once: the max is a hint */
	__sync_fetch_and_add(&c->slots[log2_slot(delta / unit_ns, HIST_MAX_SLOTS)], 1);
}

static __always_inline void count(struct pt_regs *ctx, __u64 delta, __u64 now, __u32 tid, __u32 depth, __u64 ra)
{
	__u32 slot = fine_slot(delta);
	__u64 *c = bpf_map_lookup_elem(&fine, &slot), *max = stat(LAT_MAX_NS);
	struct hist_value *h;

	if (c)
		*c += 1;
	stat_add(LAT_CALLS, 1);
	stat_add(LAT_SUM_NS, delta);
	if (max && delta > *max)
		*max = delta;
	h = hist_add(key_mode == LAT_KEY_CGROUP ? (__u32)bpf_get_current_cgroup_id() : HIST_KEY_NONE, delta);
	if (h && !h->comm[0])
		bpf_get_current_comm(h->comm, sizeof(h->comm));
	if (threshold_ns && delta >= threshold_ns)
		send_slow(ctx, delta, now, tid, depth, ra);
	/* at a uretprobe the ip is the return address already; at a ret, the one read at entry */
	if (by_caller)
		count_by_caller(ret_insns ? ra : PT_REGS_IP(ctx), delta);
}

/* At a ret instruction, or as a uretprobe (user space attaches it either way). */
SEC("uprobe")
int BPF_KPROBE(lat_return)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	/* After a return, the return address the entry's sp pointed at was popped. */
	__u64 want = ret_insns ? PT_REGS_SP(ctx) : PT_REGS_SP(ctx) - 8, delta;
	__u32 d, tid = (__u32)id, dropped = 0;
	struct inflight *f;

	if (target_tgid && (id >> 32) != target_tgid)
		return 0;
	f = bpf_map_lookup_elem(&inflight, &tid);
	if (!f)
		return 0;
	/* Entries below the frame returned to were left without a return (longjmp over them). */
	d = f->depth;
	for (int i = 0; i < LAT_DEPTH && d > 0; i++) {
		if (f->sp[(d - 1) & (LAT_DEPTH - 1)] >= want)
			break;
		d--;
		dropped++;
	}
	stat_add(LAT_ABANDONED, dropped);
	if (d == 0 || d > LAT_DEPTH || f->sp[(d - 1) & (LAT_DEPTH - 1)] != want) {
		/* a call entered before the probes were attached, or too deep to be kept */
		f->depth = d;
		if (profile_slow && d == 0)
			prof_end(tid, id >> 32, false);
		return 0;
	}
	d--;
	f->depth = d;
	delta = now - f->ts[d & (LAT_DEPTH - 1)];
	count(ctx, delta, now, tid, d, f->ra[d & (LAT_DEPTH - 1)]);
	if (profile_slow && d == 0)
		prof_end(tid, id >> 32, threshold_ns && delta >= threshold_ns);
	return 0;
}

/* sched_process_exit: (struct task_struct *p), fired for each exiting thread */
static __always_inline void on_exit(unsigned long long *ctx)
{
	struct task_struct *t = (struct task_struct *)ctx[0];
	__u32 tid = BPF_CORE_READ(t, pid);
	struct inflight *f;

	if (target_tgid && BPF_CORE_READ(t, tgid) != target_tgid)
		return;
	f = bpf_map_lookup_elem(&inflight, &tid);
	if (!f)
		return;
	stat_add(LAT_EXITED, f->depth);
	bpf_map_delete_elem(&inflight, &tid);
	if (profile_slow)
		bpf_map_delete_elem(&prof_threads, &tid);
}

HIST_TWIN(sched_process_exit, lat_exit, on_exit)
