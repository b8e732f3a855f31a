// SPDX-License-Identifier: GPL-2.0
/* Outstanding allocations by stack: user-space allocators through uprobes/uretprobes, the kernel
 * through kmem tracepoints. Each live allocation is a record keyed by address (size, time, stack);
 * per-stack totals are kept with atomic adds. User space reads both maps; nothing streams except
 * the exit-hold event.
 *
 * The stack is taken at the uretprobe, not at entry: the kernel unwinds by frame pointer, and at
 * a function's first instruction the caller's return address is on the stack but not yet in a
 * frame, so an entry stack skips the allocating caller. At the return, the first frame is the
 * return address inside the direct caller, i.e. the allocating source line. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memleak.h"
#include "stackcopy.bpf.h"
#include "task.bpf.h"
#include "cfi_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* 0 = any process (kernel mode); uprobes are attached per pid anyway, this double-checks. */
const volatile __u32 target_pid = 0;
/* The target's start on the boot clock, [lo, hi) ns: a later process that gets target_pid is
 * never stopped at exit nor counted by the kernel probes (the uprobes follow the target's own
 * memory, not its number). lo == hi: no check. */
const volatile __u64 target_start_lo = 0;
const volatile __u64 target_start_hi = 0;
const volatile __u64 min_size = 0;
const volatile __u64 max_size = (__u64)-1;
/* record every Nth allocation (1 = all) */
const volatile __u64 sample_rate = 1;
/* Byte-based Poisson sampling (0 = exact): the mean number of bytes between samples. Each
 * thread counts down bytes to its next sample point, drawn from an exponential distribution;
 * an allocation of size s that crosses one is recorded, which happens with probability
 * 1 - exp(-s/N) whatever came before (the exponential is memoryless). User space weighs each
 * recorded allocation by the inverse of that probability (extension/model/memleakSampling.ts),
 * as tcmalloc and Go's heap profiler do, so the estimates are unbiased. */
const volatile __u64 sample_bytes = 0;
const volatile __u64 page_size = 4096;
/* launch mode: stop the target with SIGSTOP when it calls exit(), so user space can read its
 * maps for symbolization before they are gone; user space sends SIGCONT. */
const volatile bool hold_at_exit = false;
/* user allocations: CFI stacks (a stack copy per recorded allocation, unwound in user space)
 * instead of the kernel's frame-pointer walk */
const volatile bool dwarf_stacks = false;
const volatile __u32 stack_copy_bytes = 8192;
/* user allocations: stacks walked here by the target's unwind tables (cfi_walk.bpf.h), nothing
 * copied; a process without tables in cfi_procs falls back to the frame-pointer walk */
const volatile bool cfi_unwind = false;

#define KIND_PLAIN 0   /* result is the returned pointer */
#define KIND_REALLOC 1 /* frees `ptr` when it returns non-NULL (or size == 0) */
#define KIND_MEMPTR 2  /* result is written to *ptr; return value 0 = success */
#define KIND_MMAP 3    /* MAP_FAILED is (void *)-1 */

/* An allocator call in flight on one thread. Allocators call each other (operator new → malloc,
 * realloc(NULL) → malloc, malloc → mmap): only the outermost call counts, identified by its
 * stack pointer at entry. A nested call has a lower sp; a stale entry (longjmp, exception
 * through the allocator) has a lower sp than a new outermost call and is replaced. */
struct pending {
	__u64 size;
	__u64 ptr;
	__u64 sp;
	__u32 kind;
	__u32 skip; /* filtered out (size range, sampling): still shadows nested calls */
	__s64 countdown; /* bytes to this thread's next sample point (sample_bytes) */
};

/* One entry per thread, kept between calls and marked idle (sp = 0) instead of deleted: a
 * delete and a fresh insert on every allocator call cost more than the probe logic around
 * them. LRU, so threads that have exited make room for new ones. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, struct pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1000000);
	/* a million preallocated records would pin ~80 MB of kernel memory for a quiet program */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct memleak_alloc);
} allocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __s64);
	__type(value, struct memleak_totals);
} stack_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MEMLEAK_MAX_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MEMLEAK_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} exits SEC(".maps");

static __u64 sample_counter = 0;
static __u64 dwarf_seq = 0;

/* One stack copy under construction per CPU (user space sets max_entries to the CPU count);
 * uprobe programs run with migration disabled. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct memleak_stack_copy);
} copy_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} stack_copies SEC(".maps");

/* log2(1 + (i + 0.5) / 64) in 1/65536 units: the mantissa part of log2 for the exponential draw
 * (BPF has no floating point). The bin midpoint keeps the draw's mean within 0.1% of N. */
static const __u16 log2_frac[64] = {
	736, 2190, 3623, 5034, 6425, 7795, 9146, 10477, 11791, 13086, 14363, 15624, 16868, 18096, 19308, 20505,
	21687, 22854, 24007, 25146, 26272, 27384, 28484, 29571, 30645, 31707, 32758, 33797, 34825, 35841, 36847, 37842,
	38827, 39802, 40767, 41722, 42667, 43603, 44530, 45448, 46357, 47258, 48150, 49034, 49909, 50776, 51636, 52488,
	53332, 54169, 54998, 55820, 56635, 57443, 58245, 59039, 59827, 60609, 61384, 62152, 62915, 63671, 64421, 65166,
};

/* Bytes to the next sample point: N * -ln(U), U uniform in (0, 1], from a random u32 as
 * -ln(u / 2^32) = (32 - log2 u) * ln 2, log2 u = msb + log2(mantissa) from the table. */
static __always_inline __s64 next_sample_gap(void)
{
	__u32 u = bpf_get_prandom_u32() | 1;
	__u32 msb = 0, x = u;
	__u64 neg_log2_q16, neg_ln_q16;

	if (x >> 16) { msb += 16; x >>= 16; }
	if (x >> 8) { msb += 8; x >>= 8; }
	if (x >> 4) { msb += 4; x >>= 4; }
	if (x >> 2) { msb += 2; x >>= 2; }
	if (x >> 1) { msb += 1; }
	/* the 6 bits below the msb (fewer for tiny u, which has probability < 2^-26) */
	__u32 frac = msb >= 6 ? (u >> (msb - 6)) & 63 : (u << (6 - msb)) & 63;
	neg_log2_q16 = ((__u64)(32 - msb) << 16) - log2_frac[frac & 63];
	neg_ln_q16 = (neg_log2_q16 * 45426) >> 16; /* × ln 2 */
	return (__s64)((sample_bytes * neg_ln_q16) >> 16) + 1;
}

/* Per-thread Poisson sampling: true when this allocation of `size` bytes is to be recorded. */
static __always_inline bool poisson_pick(__s64 *countdown, __u64 size)
{
	if (!sample_bytes)
		return true;
	*countdown -= (__s64)size;
	if (*countdown > 0)
		return false;
	*countdown = next_sample_gap();
	return true;
}

/* Kernel mode has no per-thread entry: one countdown per CPU (the programs run with migration
 * disabled), which samples with the same probabilities. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} kcountdown SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool is_target(void)
{
	return !target_pid || (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

static __always_inline bool wanted(__u64 size)
{
	if (size < min_size || size > max_size)
		return false;
	if (sample_rate > 1 && __sync_fetch_and_add(&sample_counter, 1) % sample_rate != 0)
		return false;
	return true;
}

static __always_inline void totals_add(__s64 stack_id, __u64 size)
{
	struct memleak_totals *t = bpf_map_lookup_elem(&stack_totals, &stack_id);

	if (!t) {
		struct memleak_totals zero = {};

		/* BPF_NOEXIST: another CPU may have created it meanwhile; then look it up again. */
		if (bpf_map_update_elem(&stack_totals, &stack_id, &zero, BPF_NOEXIST) && !bpf_map_lookup_elem(&stack_totals, &stack_id)) {
			count(MEMLEAK_CNT_TOTALS_FULL);
			return;
		}
		t = bpf_map_lookup_elem(&stack_totals, &stack_id);
		if (!t)
			return;
	}
	__sync_fetch_and_add(&t->bytes, size);
	__sync_fetch_and_add(&t->count, 1);
}

static __always_inline void totals_sub(__s64 stack_id, __u64 size)
{
	struct memleak_totals *t = bpf_map_lookup_elem(&stack_totals, &stack_id);

	if (!t)
		return;
	__sync_fetch_and_sub(&t->bytes, size);
	__sync_fetch_and_sub(&t->count, 1);
}

/* Sends the registers at the uretprobe and the top of the user stack to user space under a new
 * id (>= MEMLEAK_DWARF_ID_BASE); -1 when the ring buffer is full. */
static __always_inline long copy_user_stack(struct pt_regs *regs)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct memleak_stack_copy *c = bpf_map_lookup_elem(&copy_scratch, &cpu);
	__u64 id = MEMLEAK_DWARF_ID_BASE + __sync_fetch_and_add(&dwarf_seq, 1);
	__u64 tgid_tid = bpf_get_current_pid_tgid();
	__u64 len;

	if (!c)
		return -1;
	c->stack_id = id;
	c->pid = tgid_tid >> 32;
	c->tid = (__u32)tgid_tid;
	stackcopy_regs(regs, c->regs);
	len = STACKCOPY(c->stack, MEMLEAK_MAX_STACK_COPY, c->regs[7], stack_copy_bytes);
	c->stack_len = len;
	if (bpf_ringbuf_output(&stack_copies, c, MEMLEAK_STACK_COPY_HEADER_SIZE + len, 0)) {
		count(MEMLEAK_CNT_COPY_LOST);
		return -1;
	}
	return id;
}

static __always_inline void record(void *ctx, __u64 addr, __u64 size, __u64 stack_flags)
{
	struct memleak_alloc a = {
		.size = size,
		.timestamp_ns = bpf_ktime_get_ns(),
	};
	bool user = stack_flags & BPF_F_USER_STACK;
	long id = -ENOENT;
	struct memleak_alloc *old;

	/* At the uretprobe the registers are the caller's, just after the call returned: ip, sp and
	 * bp are where the walk starts (exact: ip is where the thread stands, not a return address).
	 * Walked ids (CFI_STACK_ID_BASE | hash) are one per distinct stack, so totals stay per stack. */
	if (cfi_unwind && user)
		id = cfi_user_stackid(bpf_get_current_pid_tgid() >> 32, PT_REGS_IP((struct pt_regs *)ctx), PT_REGS_SP((struct pt_regs *)ctx), PT_REGS_FP((struct pt_regs *)ctx), MEMLEAK_MAX_STACK_DEPTH);
	if (id == -ENOENT)
		id = dwarf_stacks && user ? copy_user_stack(ctx) : bpf_get_stackid(ctx, &stack_traces, stack_flags);

	if (id < 0)
		count(MEMLEAK_CNT_STACK_LOST);
	a.stack_id = id < 0 ? -1 : id;
	/* The common case first: a new address. Only when one is handed out again without a free
	 * we saw is the stale record dropped (its totals too) and the insert repeated. */
	if (bpf_map_update_elem(&allocs, &addr, &a, BPF_NOEXIST)) {
		old = bpf_map_lookup_elem(&allocs, &addr);
		if (old) {
			totals_sub(old->stack_id, old->size);
			bpf_map_delete_elem(&allocs, &addr);
		}
		if (bpf_map_update_elem(&allocs, &addr, &a, BPF_ANY)) {
			count(MEMLEAK_CNT_ALLOCS_FULL);
			return;
		}
	}
	count(MEMLEAK_CNT_ALLOCS);
	/* dwarf ids are one per allocation: user space totals them by unwound stack instead */
	if (a.stack_id < MEMLEAK_DWARF_ID_BASE)
		totals_add(a.stack_id, size);
}

static __always_inline void forget(__u64 addr)
{
	struct memleak_alloc *a = bpf_map_lookup_elem(&allocs, &addr);
	__s64 stack_id;
	__u64 size;

	if (!a)
		return;
	stack_id = a->stack_id;
	size = a->size;
	/* Only the CPU that deletes the record updates the totals (free racing realloc). */
	if (bpf_map_delete_elem(&allocs, &addr) == 0) {
		totals_sub(stack_id, size);
		count(MEMLEAK_CNT_FREES);
	}
}

/* ---- user space: entry / return pairs ------------------------------------------------- */

static __always_inline int enter(struct pt_regs *ctx, __u64 size, __u64 ptr, __u32 kind)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sp = PT_REGS_SP(ctx);
	struct pending *p, fresh = {};

	if (!is_target())
		return 0;
	p = bpf_map_lookup_elem(&pending, &tid);
	if (p && sp < p->sp)
		return 0; /* nested inside an allocator call already being traced */
	if (p) {
		/* This thread's entry, idle (sp 0) or left by a call that never returned: reuse it.
		 * sp last, so a nested probe never sees a half-written entry as active. */
		p->size = size;
		p->ptr = ptr;
		p->kind = kind;
		p->skip = !wanted(size) || !poisson_pick(&p->countdown, size);
		p->sp = sp;
		return 0;
	}
	fresh.size = size;
	fresh.ptr = ptr;
	fresh.sp = sp;
	fresh.kind = kind;
	fresh.countdown = sample_bytes ? next_sample_gap() : 0;
	fresh.skip = !wanted(size) || !poisson_pick(&fresh.countdown, size);
	if (bpf_map_update_elem(&pending, &tid, &fresh, BPF_ANY))
		count(MEMLEAK_CNT_PENDING_FULL);
	return 0;
}

static __always_inline int leave(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ret = PT_REGS_RC(ctx);
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);
	struct pending c;
	__u64 addr = ret;

	if (!p || !p->sp)
		return 0; /* no call of this thread in flight */
	/* At the return, sp is just above the return-address slot the entry saw. */
	if (PT_REGS_SP(ctx) <= p->sp)
		return 0; /* a nested call returning */
	c = *p;
	p->sp = 0;

	switch (c.kind) {
	case KIND_REALLOC:
		/* realloc moves the record: success (or size 0, which frees) releases the old block. */
		if (c.ptr && (ret || c.size == 0))
			forget(c.ptr);
		break;
	case KIND_MEMPTR:
		if (ret != 0)
			return 0;
		if (bpf_probe_read_user(&addr, sizeof(addr), (void *)c.ptr))
			return 0;
		break;
	case KIND_MMAP:
		if (ret == (__u64)-1)
			return 0;
		break;
	}
	if (!addr || c.skip)
		return 0;
	record(ctx, addr, c.size, BPF_F_USER_STACK);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(malloc_enter, size_t size)
{
	return enter(ctx, size, 0, KIND_PLAIN);
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, size_t nmemb, size_t size)
{
	return enter(ctx, nmemb * size, 0, KIND_PLAIN);
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, void *ptr, size_t size)
{
	return enter(ctx, size, (__u64)ptr, KIND_REALLOC);
}

SEC("uprobe")
int BPF_KPROBE(reallocarray_enter, void *ptr, size_t nmemb, size_t size)
{
	return enter(ctx, nmemb * size, (__u64)ptr, KIND_REALLOC);
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, void **memptr, size_t alignment, size_t size)
{
	return enter(ctx, size, (__u64)memptr, KIND_MEMPTR);
}

/* aligned_alloc and memalign: (alignment, size) */
SEC("uprobe")
int BPF_KPROBE(aligned_alloc_enter, size_t alignment, size_t size)
{
	return enter(ctx, size, 0, KIND_PLAIN);
}

/* pvalloc rounds up to whole pages; the block really occupies that much. */
SEC("uprobe")
int BPF_KPROBE(pvalloc_enter, size_t size)
{
	return enter(ctx, size ? (size + page_size - 1) & ~(page_size - 1) : page_size, 0, KIND_PLAIN);
}

SEC("uprobe")
int BPF_KPROBE(mmap_enter, void *addr, size_t length)
{
	return enter(ctx, length, 0, KIND_MMAP);
}

/* One return program serves every allocator: the pending entry says what to do. */
SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit)
{
	return leave(ctx);
}

SEC("uprobe")
int BPF_KPROBE(free_enter, void *ptr)
{
	if (is_target() && ptr)
		forget((__u64)ptr);
	return 0;
}

/* munmap of a whole mapping made by mmap; partial unmaps keep the record. */
SEC("uprobe")
int BPF_KPROBE(munmap_enter, void *addr)
{
	if (is_target() && addr)
		forget((__u64)addr);
	return 0;
}

/* libc's exit(): runs before atexit handlers and destructors, while every mapping is there. */
SEC("uprobe")
int BPF_KPROBE(exit_enter)
{
	struct memleak_exit_event *e;
	__u64 id = bpf_get_current_pid_tgid();

	if (!hold_at_exit || !is_target() || !current_started_in(target_start_lo, target_start_hi))
		return 0;
	e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);
	if (!e) {
		/* nobody would hear about the stop: better not to stop at all */
		count(MEMLEAK_CNT_EXIT_LOST);
		return 0;
	}
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	/* Stop first, announce second: user space answers with SIGCONT, which must not overtake
	 * the SIGSTOP. It also waits for the stopped state before reading the maps. */
	count(MEMLEAK_CNT_EXIT_HOLDS);
	bpf_send_signal(19 /* SIGSTOP */);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* ---- kernel: kmem tracepoints (field layouts checked in /sys/kernel/tracing/events/kmem) -- */

static __always_inline int kalloc(void *ctx, __u64 addr, __u64 size)
{
	__u32 zero = 0;
	__s64 *cd;

	if (!addr || !is_target() || !wanted(size))
		return 0;
	if (target_pid && !current_started_in(target_start_lo, target_start_hi))
		return 0;
	if (sample_bytes) {
		cd = bpf_map_lookup_elem(&kcountdown, &zero);
		if (!cd || !poisson_pick(cd, size))
			return 0;
	}
	record(ctx, addr, size, 0);
	return 0;
}

SEC("tracepoint/kmem/kmalloc")
int kmalloc_tp(struct trace_event_raw_kmalloc *ctx)
{
	return kalloc(ctx, (__u64)BPF_CORE_READ(ctx, ptr), BPF_CORE_READ(ctx, bytes_alloc));
}

SEC("tracepoint/kmem/kmem_cache_alloc")
int kmem_cache_alloc_tp(struct trace_event_raw_kmem_cache_alloc *ctx)
{
	return kalloc(ctx, (__u64)BPF_CORE_READ(ctx, ptr), BPF_CORE_READ(ctx, bytes_alloc));
}

SEC("tracepoint/kmem/mm_page_alloc")
int mm_page_alloc_tp(struct trace_event_raw_mm_page_alloc *ctx)
{
	/* pages are keyed by pfn: small numbers that never collide with slab addresses */
	return kalloc(ctx, BPF_CORE_READ(ctx, pfn), page_size << BPF_CORE_READ(ctx, order));
}

SEC("tracepoint/kmem/kfree")
int kfree_tp(struct trace_event_raw_kfree *ctx)
{
	__u64 p = (__u64)BPF_CORE_READ(ctx, ptr);

	if (p)
		forget(p);
	return 0;
}

SEC("tracepoint/kmem/kmem_cache_free")
int kmem_cache_free_tp(struct trace_event_raw_kmem_cache_free *ctx)
{
	__u64 p = (__u64)BPF_CORE_READ(ctx, ptr);

	if (p)
		forget(p);
	return 0;
}

SEC("tracepoint/kmem/mm_page_free")
int mm_page_free_tp(struct trace_event_raw_mm_page_free *ctx)
{
	forget(BPF_CORE_READ(ctx, pfn));
	return 0;
}
