// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time by stack, from the scheduler: when a traced thread is switched out, its kernel and
 * user stacks (frame pointers, as bcc's offcputime) and why it left (its state, or the futex
 * system call it sleeps in) are kept per thread; when it is switched in again the interval is
 * added, in nanoseconds, to a total per (thread, stacks, state). Nothing is sent per event: user
 * space reads the totals once at the end. Intervals shorter than min_block_ns are only counted.
 * Wall-clock mode adds a cpu-clock perf_event program that adds sample_ns per on-CPU sample of a
 * traced thread to the same totals (state ONCPU), so one document holds where time went on and
 * off the CPU. What is kept per thread lives in the thread's task storage (found from the task
 * in a few ns, where a hash lookup by tid costs tens, at every switch-out and switch-in; freed
 * with the thread), which user space reads through a task iterator (dump_threads). Needs tp_btf
 * and task storage in tracing programs (Linux 5.15+ for bpf_task_pt_regs). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "task.bpf.h"
#include "fpchain.bpf.h"
#include "cfi_walk.bpf.h"
#include "offcpu.h"
#include "offcpu_state.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define ENOSYS 38

/* 0 = every process; otherwise only threads of this tgid. */
const volatile __u32 target_tgid = 0;
/* The target's start on the boot clock, [lo, hi) ns: a later process that gets target_tgid is
 * never signalled and its on-CPU samples are not counted. Checked where a program signals or
 * samples, not at each context switch (what a switch costs stays as it was); user space ends the
 * session when the target exits. lo == hi: no check. */
const volatile __u64 target_start_lo = 0;
const volatile __u64 target_start_hi = 0;
/* Shorter off-CPU intervals are counted in stats but not added to the totals. */
const volatile __u64 min_block_ns = 1000;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
/* Wall clock: the weight of one cpu-clock sample (1e9 / frequency). */
const volatile __u64 sample_ns = 0;
/* JVM target with the JVMTI agent loaded: hold each interval that blocked in a system call until
 * the thread returns to user space, then signal it (SIGPROF) so the agent walks its Java stack
 * there, and send the interval for the join. A sleeping thread is never signalled. */
const volatile bool java_join = false;
/* The JVM owner's effective uid: a thread acting as anyone else is never signalled (see
 * task.bpf.h current_euid_is). (__u32)-1: no check. */
const volatile __u32 signal_euid = (__u32)-1;
/* Wall clock with the Java join: on-CPU samples are sent and signalled too (like the CPU
 * profiler's), so each carries its time and Java frames (a slow-call profile keeps only the
 * samples inside its windows); otherwise they are summed here without either. */
const volatile bool java_on_cpu = false;
/* Stack cache: a thread that blocks where it blocked last time (same signature, see
 * block_signature) reuses that switch-out's stack ids instead of walking both stacks again. A
 * place's reuses are checked by a real walk, which counts a mismatch if it found other stacks, so
 * the cache's exactness is measured in every session (OFFCPU_STAT_MISMATCH): the first check
 * after recheck_every reuses, then each after twice as many as the one before, up to
 * recheck_max (a mismatch starts again at recheck_every). A walk costs ~2.5 µs against ~0.3 µs
 * for a reuse: checks stay a few percent of the cost per switch while a place is new and under
 * one percent once it has held. */
const volatile bool reuse_stacks = true;
const volatile __u32 recheck_every = 64;
const volatile __u32 recheck_max = 1024;
/* User stacks of processes with unwind tables in cfi_procs walked by them (cfi_walk.bpf.h), so
 * code without frame pointers keeps its callers; other processes by frame pointers as before.
 * false: the verifier drops the table walk, and a switch costs what it did without it. */
const volatile bool cfi_unwind = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_java);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} java_samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, OFFCPU_MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* task's user stack, by its tables where it has them; across the whole host, a process without
 * tables or whose walk left its known mappings is asked for. Kernel threads have no user stack. */
static __always_inline __s32 user_stackid(void *ctx, struct task_struct *task)
{
	__s32 id = cfi_or_fp_user_stackid(ctx, &stacks, task, cfi_unwind);
	__u32 tgid = task->tgid;

	if (!cfi_unwind || target_tgid || !task->mm)
		return id;
	/* (cfi_wanted: see cfi_walk.bpf.h; user space reads it in whole-host sessions only) */
	if (!bpf_map_lookup_elem(&cfi_procs, &tgid))
		cfi_want(tgid, CFI_WANT_NEW);
	else if (id >= CFI_STACK_ID_BASE && cfi_last_stop() == CFI_STOP_NO_MAPPING)
		cfi_want(tgid, CFI_WANT_REMAP);
	return id;
}

/* Whether this CPU's last table walk stepped by frame pointers through a file whose table was
 * still compiling (a whole-host session): its stack may be cut short, so its place is walked again. */
static __always_inline bool cfi_last_walk_pending(void)
{
	__u32 zero = 0;
	struct cfi_state *s = bpf_map_lookup_elem(&cfi_scratch, &zero);

	return s && (s->flags & CFI_FLAG_PENDING);
}

/* Per traced thread: its open interval and running total (start) and its stack cache (places). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 40960);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
} totals SEC(".maps");

/* The clock of off-CPU intervals: the scheduler's own clock of this CPU (rq->clock, sched_clock
 * ns), which __schedule() has just updated, so at a switch it costs a few loads where
 * bpf_ktime_get_ns() costs a TSC read and the timekeeper's arithmetic (~45 ns of the ~340 per
 * switch here). The CPU's run queue is found from the task being switched out (its sched entity's
 * cfs_rq, which every task keeps pointing at its CPU's, belongs to that run queue): the per-CPU
 * variable `runqueues` would need a kernel with all symbols in kallsyms. An interval that starts on
 * one CPU and ends on another subtracts two CPUs' clocks, as the kernel's own run-delay accounting
 * does: the same clock where sched_clock is stable (a constant TSC, arm64's timer), otherwise
 * kept within about a tick of each other; a negative interval is dropped. The clock read may lag by
 * the µs between a wakeup that asked for this switch and the switch (the scheduler skips the
 * second update), which moves those µs from one thread's interval to the next one's. Each CPU
 * keeps a recent pair of this clock and CLOCK_MONOTONIC (renewed at a switch once the pair is
 * CLOCK_PAIR_NS old) for dump_threads to hand user space monotonic times. Without group scheduling (no cfs_rq in a sched entity),
 * bpf_ktime_get_ns() as before. */
#define CLOCK_PAIR_NS 100000000ULL

struct clock_pair {
	__u64 rq_ns;
	__u64 ktime_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct clock_pair);
} clocks SEC(".maps");

static __always_inline __u64 switch_clock(struct task_struct *prev)
{
	struct clock_pair *c;
	__u32 zero = 0;
	__u64 now;

	if (!bpf_core_field_exists(prev->se.cfs_rq))
		return bpf_ktime_get_ns();
	now = prev->se.cfs_rq->rq->clock;
	c = bpf_map_lookup_elem(&clocks, &zero);
	if (c && now - c->rq_ns >= CLOCK_PAIR_NS) {
		c->rq_ns = now;
		c->ktime_ns = bpf_ktime_get_ns();
	}
	return now;
}

/* A switch_clock() time as CLOCK_MONOTONIC, with this CPU's pair (renewed when this thread, the
 * reader, was switched in here, unless it was less than CLOCK_PAIR_NS old). */
static __always_inline __u64 switch_clock_to_ktime(struct task_struct *task, __u64 ts)
{
	struct clock_pair *c;
	__u32 zero = 0;

	if (!bpf_core_field_exists(task->se.cfs_rq))
		return ts;
	c = bpf_map_lookup_elem(&clocks, &zero);
	if (!c || !c->ktime_ns)
		return bpf_ktime_get_ns(); /* no pair yet: an interval that starts now */
	return ts - c->rq_ns + c->ktime_ns;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer while this program runs on this CPU */
}

#define PF_KTHREAD 0x00200000

/* Where the current thread (task, being switched out) blocks, cheaply: its user ip, sp and bp and
 * the hash of the frame-record chain from its bp (fpchain.bpf.h: the same signature means the same
 * user stack; with unwind tables, where frame pointers may not exist, the hash of the stack above
 * sp, cfi_stack_signature), the system call, its first argument (a file descriptor, a futex address) and ax
 * (-ENOSYS until the call returns, then its result); switch_out adds why it blocks (the state: a
 * page fault inside the same call sleeps uninterruptibly elsewhere in the kernel). The kernel
 * stack is not read (its depth is randomized per system call, CONFIG_RANDOMIZE_KSTACK_OFFSET):
 * the same system call from the same user stack, argument and state is taken to block on the same
 * kernel path, which the periodic checks measure. *done: the call has returned (the thread is on
 * its way back to user space). *deep: the frame chain is longer than FPCHAIN_MAX_FRAMES. Returns
 * the system call number (orig_ax; -1 outside one). */
static __always_inline long block_signature(struct task_struct *task, __u64 *sig, bool *done, bool *deep)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr = regs->orig_ax;
	__u64 ax = regs->ax;
	__u32 frames;

	sig[0] = regs->ip;
	sig[1] = regs->sp;
	sig[2] = regs->bp;
	if (cfi_unwind) {
		/* walked by tables: a frame-pointer chain need not exist */
		sig[3] = cfi_stack_signature(sig[1]);
		frames = 0;
		*deep = false;
	} else {
		sig[3] = fpchain_hash(sig[2], &frames, deep);
	}
	sig[4] = frames;
	sig[5] = nr << 8; /* switch_out adds the state in the low byte */
	sig[6] = regs->di;
	sig[7] = ax;
	*done = nr >= 0 && ax != (__u64)-ENOSYS;
	return nr;
}

static __always_inline void add_totals(struct offcpu_key *k, __u64 ns, __u64 count)
{
	struct offcpu_val one = { .total_ns = ns, .count = count }, *v;
	long ret;

	v = bpf_map_lookup_elem(&totals, k);
	if (!v) {
		ret = bpf_map_update_elem(&totals, k, &one, BPF_NOEXIST);
		if (!ret)
			return;
		if (ret != -EEXIST) {
			stat_add(OFFCPU_STAT_LOST_TOTALS);
			stat_add(OFFCPU_STAT_LOST);
			return;
		}
		/* another CPU inserted the same key between our lookup and update */
		v = bpf_map_lookup_elem(&totals, k);
		if (!v)
			return;
	}
	/* Plain adds, no atomics: a key holds its thread's id, and only one program at a time
	 * adds for a thread (its own switch-in, sys_exit or cpu-clock sample, which cannot overlap
	 * on two CPUs), so there is no concurrent writer; user space reads aligned u64s. */
	v->total_ns += ns;
	v->count += count;
}

static __always_inline void add_total(struct offcpu_key *k, __u64 ns)
{
	add_totals(k, ns, 1);
}

static __always_inline bool same_comm(const char *a, const char *b)
{
	__u64 x[2], y[2];

	__builtin_memcpy(x, a, sizeof(x));
	__builtin_memcpy(y, b, sizeof(y));
	return x[0] == y[0] && x[1] == y[1];
}

/* Moves the thread's running total (see struct offcpu_start) to the totals map. */
static __always_inline void flush_held(struct offcpu_start *sp, __u32 tid)
{
	struct offcpu_key k = {};

	k.pid = sp->agg_pid;
	k.tid = tid;
	k.user_stack_id = sp->agg_user_stack_id;
	k.kern_stack_id = sp->agg_kern_stack_id;
	k.state = sp->agg_state;
	__builtin_memcpy(k.comm, sp->agg_comm, sizeof(k.comm));
	add_totals(&k, sp->agg_total_ns, sp->agg_count);
	sp->agg_count = 0;
	sp->agg_total_ns = 0;
}

/* Adds an interval to the thread's running total when it has the same key, else starts one (the
 * old one goes to the totals map); a full running total goes to the totals map too. Saves the
 * totals lookup (a 40-byte key hashed and compared) on most switch-ins. */
static __always_inline void add_held(struct offcpu_start *sp, struct offcpu_key *k, __u64 ns)
{
	if (sp->agg_count && (sp->agg_user_stack_id != k->user_stack_id || sp->agg_kern_stack_id != k->kern_stack_id || sp->agg_state != k->state || sp->agg_pid != k->pid ||
			      !same_comm(sp->agg_comm, k->comm)))
		flush_held(sp, k->tid);
	if (!sp->agg_count) {
		sp->agg_user_stack_id = k->user_stack_id;
		sp->agg_kern_stack_id = k->kern_stack_id;
		sp->agg_state = k->state;
		sp->agg_pid = k->pid;
		__builtin_memcpy(sp->agg_comm, k->comm, sizeof(k->comm));
	}
	sp->agg_total_ns += ns;
	sp->agg_count++;
	if (sp->agg_count >= OFFCPU_AGG_MAX_COUNT || sp->agg_total_ns >= OFFCPU_AGG_MAX_NS)
		flush_held(sp, k->tid);
}

/* Java join: keeps the interval until the thread is back at sys_exit. A thread that blocks again
 * before it gets there (a futex retry loop) adds to the held interval when the stacks are the
 * same; otherwise the held one goes to the totals without Java frames. */
static __always_inline bool hold_for_java(struct offcpu_key *k, __u64 delta)
{
	struct offcpu_java *p = bpf_map_lookup_elem(&pending, &k->tid), j = {};
	struct offcpu_key old = {};

	if (p) {
		if (p->user_stack_id == k->user_stack_id && p->kern_stack_id == k->kern_stack_id && p->state == k->state) {
			p->total_ns += delta;
			p->count++;
			return true;
		}
		old = *k;
		old.user_stack_id = p->user_stack_id;
		old.kern_stack_id = p->kern_stack_id;
		old.state = p->state;
		add_total(&old, p->total_ns);
	}
	j.total_ns = delta;
	j.tid = k->tid;
	j.user_stack_id = k->user_stack_id;
	j.kern_stack_id = k->kern_stack_id;
	j.state = k->state;
	j.count = 1;
	return bpf_map_update_elem(&pending, &k->tid, &j, BPF_ANY) == 0;
}

/* Java join: the thread returns to user space with the user stack it blocked with; signal it
 * now (delivered on the way out, after the system call finished) and send the interval. */
static __always_inline void on_sys_exit(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct offcpu_java *p, *r;
	struct offcpu_key k = {};

	if ((id >> 32) != target_tgid)
		return;
	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p)
		return;
	if (!current_started_in(target_start_lo, target_start_hi) || !current_euid_is(signal_euid)) {
		bpf_map_delete_elem(&pending, &tid);
		return;
	}
	r = bpf_ringbuf_reserve(&java_samples, sizeof(*r), 0);
	if (!r) {
		k.pid = target_tgid;
		k.tid = tid;
		k.user_stack_id = p->user_stack_id;
		k.kern_stack_id = p->kern_stack_id;
		k.state = p->state;
		bpf_get_current_comm(k.comm, sizeof(k.comm));
		add_total(&k, p->total_ns);
		bpf_map_delete_elem(&pending, &tid);
		return;
	}
	*r = *p;
	r->ns_tid = current_ns_tid();
	r->ktime_ns = bpf_ktime_get_ns();
	bpf_map_delete_elem(&pending, &tid);
	bpf_send_signal_thread(27 /* SIGPROF */);
	bpf_ringbuf_submit(r, 0);
	stat_add(OFFCPU_STAT_JAVA);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf)
{
	on_sys_exit();
	return 0;
}

static __always_inline bool same_signature(const __u64 *a, const __u64 *b)
{
	for (int i = 0; i < OFFCPU_SIG_WORDS; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* prev, the current task, is switched out: note when, why, and its stacks (walked, or reused
 * when it blocks at a place where it blocked before). */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u64 now)
{
	struct offcpu_thread *t;
	struct offcpu_place *pl = NULL, *other;
	__u32 set;
	__s32 kid, uid;
	__u64 sig[OFFCPU_SIG_WORDS], h = 0;
	bool cacheable, reuse, done, deep, hit = false;
	__u32 state;
	long nr;

	stat_add(OFFCPU_STAT_SWITCHES);
	t = bpf_task_storage_get(&threads, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		stat_add(OFFCPU_STAT_LOST_START);
		return;
	}
	nr = block_signature(prev, sig, &done, &deep);
	state = offcpu_state(prev, nr);
	sig[5] |= state;
	/* Preempted inside a system call or in user code: the stacks are wherever the preemption came,
	 * so they are walked. Preempted once the call returned (a woken thread preempts its waker on
	 * the way out) is a fixed path, cached as a block is. */
	cacheable = reuse_stacks && !deep && (state != OFFCPU_STATE_PREEMPTED || done) && !(prev->flags & PF_KTHREAD);
	if (!cacheable)
		stat_add(OFFCPU_STAT_UNCACHED);
	else {
		for (int i = 0; i < OFFCPU_SIG_WORDS; i++)
			h = (h ^ sig[i]) * 0x9E3779B97F4A7C15ULL;
		set = (h >> 32) & (OFFCPU_PLACE_SLOTS / 2 - 1);
		pl = &t->places.slot[set * 2];
		other = &t->places.slot[set * 2 + 1];
		if (other->next_check && same_signature(other->sig, sig)) {
			pl = other;
			hit = true;
		} else if (pl->next_check && same_signature(pl->sig, sig)) {
			hit = true;
		} else if (!other->next_check || other->used_at < pl->used_at) {
			pl = other; /* a new place: the empty or the older slot of the set */
		}
		pl->used_at = ++t->places.switch_outs;
	}
	reuse = hit && !stack_lost(pl->user_stack_id) && !stack_lost(pl->kern_stack_id);
	if (reuse && ++pl->hits < pl->next_check) {
		stat_add(OFFCPU_STAT_REUSED);
		kid = pl->kern_stack_id;
		uid = pl->user_stack_id;
	} else {
		/* the kernel walk starts at this program (the call site's address): skip that frame, or
		 * each call site of the compiled program would make another stack of the same path */
		kid = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 1 & BPF_F_SKIP_FIELD_MASK) : -1;
		uid = user_stacks ? user_stackid(ctx, prev) : -1;
		stat_add(OFFCPU_STAT_WALKS);
		if (pl) {
			__u32 next_check = recheck_every;

			if (reuse) {
				stat_add(OFFCPU_STAT_CHECKS);
				/* a stack walked by frame pointers before the tables were in (or through a file
				 * whose table was: next_check 1, below) is replaced, not wrong */
				if (cfi_unwind && pl->user_stack_id >= 0 && (pl->user_stack_id < CFI_STACK_ID_BASE || pl->next_check == 1) && uid >= CFI_STACK_ID_BASE)
					next_check = recheck_every;
				else if (kid != pl->kern_stack_id || uid != pl->user_stack_id)
					stat_add(OFFCPU_STAT_MISMATCH);
				else if (pl->next_check < recheck_max)
					next_check = pl->next_check * 2;
				else
					next_check = pl->next_check;
			}
			/* walked by frame pointers while the unwind tables still compile: walk the
			 * place again next time rather than reuse a cut-short stack */
			if (cfi_unwind && uid >= 0 && (uid < CFI_STACK_ID_BASE || cfi_last_walk_pending()))
				next_check = 1;
			__builtin_memcpy(pl->sig, sig, sizeof(sig));
			pl->kern_stack_id = kid;
			pl->user_stack_id = uid;
			pl->hits = 0;
			pl->next_check = next_check ?: 1;
		}
	}
	t->start.kern_stack_id = kid;
	t->start.user_stack_id = uid;
	t->start.state = state;
	t->start.in_syscall = nr >= 0;
	t->start.ts = now;
}

/* java_on_cpu: an interval not held for the join (preempted, or blocked outside a system call)
 * goes with its time too, unsignalled: the thread is not current here. Its Java stack is the one
 * of the thread's next joined sample, in user space. False: add it here. */
static __always_inline bool send_timed(struct offcpu_key *k, __u64 delta, struct task_struct *next)
{
	struct offcpu_java *r = bpf_ringbuf_reserve(&java_samples, sizeof(*r), 0);

	if (!r)
		return false;
	r->ktime_ns = bpf_ktime_get_ns();
	r->total_ns = delta;
	r->tid = k->tid;
	r->ns_tid = task_ns_tid(next);
	r->user_stack_id = k->user_stack_id;
	r->kern_stack_id = k->kern_stack_id;
	r->state = k->state;
	r->count = 1;
	bpf_ringbuf_submit(r, 0);
	return true;
}

static __always_inline void on_switch(void *ctx, struct task_struct *prev, struct task_struct *next)
{
	struct offcpu_thread *t;
	struct offcpu_start *sp;
	struct offcpu_key k = {};
	__u32 tid = prev->pid, in_syscall;
	__u64 now = switch_clock(prev), delta;

	/* prev is the current task here: its stacks are the ones bpf_get_stackid reads */
	if (tid && (!target_tgid || prev->tgid == target_tgid))
		switch_out(ctx, prev, now);

	tid = next->pid;
	if (!tid || (target_tgid && next->tgid != target_tgid))
		return;
	t = bpf_task_storage_get(&threads, next, 0, 0);
	if (!t || !t->start.ts)
		return;
	sp = &t->start;
	delta = now - sp->ts;
	k.user_stack_id = sp->user_stack_id;
	k.kern_stack_id = sp->kern_stack_id;
	k.state = sp->state;
	in_syscall = sp->in_syscall;
	sp->ts = 0; /* on CPU again: no open interval */
	if ((__s64)delta < 0)
		return;
	if (delta < min_block_ns) {
		stat_add(OFFCPU_STAT_SHORT);
		return;
	}
	k.pid = next->tgid;
	k.tid = tid;
	__builtin_memcpy(k.comm, next->comm, sizeof(k.comm));
	stat_add(OFFCPU_STAT_BLOCKS);
	if (stack_lost(k.user_stack_id))
		stat_add(OFFCPU_STAT_LOST_USTACK);
	if (stack_lost(k.kern_stack_id))
		stat_add(OFFCPU_STAT_LOST_KSTACK);
	if (stack_lost(k.user_stack_id) || stack_lost(k.kern_stack_id))
		stat_add(OFFCPU_STAT_LOST);
	if (java_join && in_syscall && k.state != OFFCPU_STATE_PREEMPTED && hold_for_java(&k, delta))
		return;
	if (java_join && java_on_cpu && send_timed(&k, delta, next))
		return;
	add_held(sp, &k, delta);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch(ctx, prev, next);
	return 0;
}

/* A thread's running total would be freed with its task storage: an exiting thread moves it to
 * the totals map first (this runs in the exiting thread, before its storage goes). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct offcpu_thread *t;

	if (target_tgid && task->tgid != target_tgid)
		return 0;
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (t && t->start.agg_count)
		flush_held(&t->start, task->pid);
	return 0;
}

/* User space's view of the threads' storage (their open intervals and running totals): one
 * struct offcpu_thread_rec per traced thread that has switched out, written to the iterator's
 * output, its open interval's start as CLOCK_MONOTONIC. Run through a task iterator link, once
 * per read. */
SEC("iter/task")
int dump_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offcpu_thread_rec rec = {};
	struct offcpu_thread *t;

	if (!task || (target_tgid && task->tgid != target_tgid))
		return 0;
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (!t)
		return 0;
	rec.tid = task->pid;
	rec.pid = task->tgid;
	rec.start = t->start;
	if (rec.start.ts)
		rec.start.ts = switch_clock_to_ktime(task, rec.start.ts);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

/* Wall clock, java_on_cpu: the sample goes to the join with its time; the thread is signalled so
 * the agent walks its Java stack on the way back to user space. False: sum it here. */
static __always_inline bool send_on_cpu_java(struct offcpu_key *k)
{
	struct offcpu_java *r;

	if (!current_euid_is(signal_euid))
		return false;
	r = bpf_ringbuf_reserve(&java_samples, sizeof(*r), 0);
	if (!r)
		return false;
	r->ktime_ns = bpf_ktime_get_ns();
	r->total_ns = sample_ns;
	r->tid = k->tid;
	r->ns_tid = current_ns_tid();
	r->user_stack_id = k->user_stack_id;
	r->kern_stack_id = k->kern_stack_id;
	r->state = OFFCPU_STATE_ONCPU;
	r->count = 1;
	bpf_send_signal_thread(27 /* SIGPROF */);
	bpf_ringbuf_submit(r, 0);
	return true;
}

/* Wall clock: an on-CPU sample of a traced thread weighs sample_ns. */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct offcpu_key k = {};

	if (!tid || (target_tgid && (tgid != target_tgid || !current_started_in(target_start_lo, target_start_hi))))
		return 0;
	k.pid = tgid;
	k.tid = tid;
	k.state = OFFCPU_STATE_ONCPU;
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	k.kern_stack_id = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	k.user_stack_id = user_stacks ? user_stackid(ctx, bpf_get_current_task_btf()) : -1;
	stat_add(OFFCPU_STAT_SAMPLES);
	if (stack_lost(k.user_stack_id) || stack_lost(k.kern_stack_id))
		stat_add(OFFCPU_STAT_LOST);
	if (java_join && java_on_cpu && send_on_cpu_java(&k))
		return 0;
	add_total(&k, sample_ns);
	return 0;
}
