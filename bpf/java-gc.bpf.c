// SPDX-License-Identifier: GPL-2.0
/* Java GC pauses from HotSpot's USDT probes in libjvm.so.
 *
 * gc__begin/gc__end bracket one GC pause on the VM thread; mem__pool__gc__begin/__end fire
 * inside that bracket, once per memory pool, with the pool's usage. The pause is measured
 * from gc__begin to gc__end of the same thread only: the pool probes update the thread's
 * in-flight record and never restart its clock (the seed tool fed them into the same start
 * map and so measured pool-to-pool intervals). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "java-gc.h"

char LICENSE[] SEC("license") = "GPL";

/* GCs shorter than this are not reported (--min-us). */
const volatile __u64 min_duration_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* One in-flight GC per thread (tid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct java_gc_event);
} inflight SEC(".maps");

/* A zeroed record to initialise in-flight entries from: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct java_gc_event);
} zero_event SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JAVA_GC_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("usdt")
int BPF_USDT(handle_gc_begin, int full)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct java_gc_event *rec, *tmpl;

	tmpl = bpf_map_lookup_elem(&zero_event, &zero);
	if (!tmpl)
		return 0;
	if (bpf_map_update_elem(&inflight, &tid, tmpl, BPF_ANY)) {
		count(JAVA_GC_CTR_INFLIGHT_FULL);
		return 0;
	}
	rec = bpf_map_lookup_elem(&inflight, &tid);
	if (!rec)
		return 0;
	rec->pid = id >> 32;
	rec->tid = tid;
	rec->full = (full & 0xff) != 0;
	/* Last: the pause starts once the record is ready. */
	rec->start_ns = bpf_ktime_get_ns();
	return 0;
}

/* The slot of the pool whose name pointer is `ptr`, or a fresh one; NULL when all are taken. */
static __always_inline struct java_gc_pool *pool_slot(struct java_gc_event *rec, __u64 ptr)
{
	__u32 n = rec->npools;

	for (int i = 0; i < JAVA_GC_MAX_POOLS; i++) {
		if (i >= n)
			break;
		if (rec->pools[i].name_ptr == ptr)
			return &rec->pools[i];
	}
	if (n >= JAVA_GC_MAX_POOLS) {
		count(JAVA_GC_CTR_POOLS_FULL);
		return NULL;
	}
	rec->npools = n + 1;
	rec->pools[n].name_ptr = ptr;
	return &rec->pools[n];
}

static __always_inline void read_name(struct java_gc_pool *p, __u64 ptr, __u64 len)
{
	__u32 size = len >= JAVA_GC_POOL_NAME_LEN ? JAVA_GC_POOL_NAME_LEN : (__u32)len + 1;

	if (p->name[0])
		return;
	bpf_probe_read_user_str(p->name, size, (const void *)ptr);
}

/* Arguments of both pool probes: manager name, its length, pool name, its length, then the
 * pool's MemoryUsage (initial, used, committed, max). */
SEC("usdt")
int BPF_USDT(handle_pool_begin, __u64 mgr, __u64 mgr_len, __u64 pool, __u64 pool_len, __u64 initial, __u64 used)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_gc_event *rec = bpf_map_lookup_elem(&inflight, &tid);
	struct java_gc_pool *p;

	/* Pool probes outside a gc__begin pause (e.g. G1's concurrent phases) are not pauses. */
	if (!rec)
		return 0;
	p = pool_slot(rec, pool);
	if (!p)
		return 0;
	/* When a GC escalates (young → full) the pools are reported twice: keep the first "before". */
	if (!(p->flags & JAVA_GC_POOL_HAS_BEFORE)) {
		p->used_before = used;
		p->flags |= JAVA_GC_POOL_HAS_BEFORE;
	}
	read_name(p, pool, pool_len);
	return 0;
}

SEC("usdt")
int BPF_USDT(handle_pool_end, __u64 mgr, __u64 mgr_len, __u64 pool, __u64 pool_len, __u64 initial, __u64 used, __u64 committed)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_gc_event *rec = bpf_map_lookup_elem(&inflight, &tid);
	struct java_gc_pool *p;

	if (!rec)
		return 0;
	p = pool_slot(rec, pool);
	if (!p)
		return 0;
	/* ... and the last "after". */
	p->used_after = used;
	p->committed_after = committed;
	p->flags |= JAVA_GC_POOL_HAS_AFTER;
	read_name(p, pool, pool_len);
	return 0;
}

SEC("usdt")
int BPF_USDT(handle_gc_end)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_gc_event *rec = bpf_map_lookup_elem(&inflight, &tid);
	__u64 now = bpf_ktime_get_ns();

	/* No record: the GC began before we attached. */
	if (!rec)
		return 0;
	if (rec->start_ns && now - rec->start_ns >= min_duration_ns) {
		rec->duration_ns = now - rec->start_ns;
		rec->cpu = bpf_get_smp_processor_id();
		if (bpf_ringbuf_output(&events, rec, sizeof(*rec), 0))
			count(JAVA_GC_CTR_RINGBUF_FULL);
	}
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}
