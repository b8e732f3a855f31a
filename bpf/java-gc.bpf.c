// SPDX-License-Identifier: GPL-2.0
/* Java GC collections, as the JVM counts them, from HotSpot's USDT probes in libjvm.so.
 *
 * What fires, measured with bpftrace on OpenJDK 17.0.15 (Debian) against GcCollectors.java,
 * -Xmx64m, per collector (the JVM's own GarbageCollectorMXBean counts agreed in every case):
 *  - Serial: each pause is one gc__begin/gc__end on the VM thread, with mem__pool__gc__begin/end
 *    inside it once per pool, naming the manager: "Copy" or "MarkSweepCompact". A young
 *    collection that escalates runs both managers inside ONE pause (Copy's pool probes, then
 *    MarkSweepCompact's): the JVM counts two collections. gc__begin's `full` flag is 0 even for
 *    a full collection the heap decided on by itself; only System.gc() sets it.
 *  - Parallel: "PS Scavenge" and "PS MarkSweep", each its own gc__begin/gc__end pause (an
 *    escalation is two pauses).
 *  - G1: "G1 Young Generation" (young and mixed) and "G1 Old Generation" (full) pauses carry pool
 *    probes; Remark and Cleanup pauses are gc__begin/gc__end with no pool probe (JDK 17 has no
 *    "G1 Concurrent GC" manager; JDK 20+ counts them as that one).
 *  - ZGC: "ZGC Cycles" pool probes bracket each concurrent cycle on the ZDriver thread, outside
 *    any pause; the pauses (Mark Start, Mark End, Relocate Start) are gc__begin/gc__end with no
 *    pool probe, counted by the JVM as "ZGC Pauses".
 *  - Shenandoah: the same shape, "Shenandoah Cycles" and pauses counted as "Shenandoah Pauses".
 *  - Every pause runs inside a VM operation (vmops__begin names it: G1PauseRemark, ZMarkStart,
 *    "Shenandoah Init Marking", GenCollectForAllocation, ...) on the same thread, which is how
 *    user space names the manager of a pause without pool probes.
 *  - hs_private:safepoint__begin/__end bracket each safepoint on the VM thread; the first
 *    vmops__begin inside it comes once all threads are stopped (time to safepoint).
 *
 * So one event is emitted per manager run: within a pause, a pool probe naming another manager
 * than the one running ends the first collection at its last pool end and starts the next.
 * Pool probes outside a pause make a concurrent-cycle event, ended when all its pools ended. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "java-gc.h"
#include "hist_epoch.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* GCs shorter than this are not reported (--min-us). */
const volatile __u64 min_duration_ns = 0;
/* false: every record wakes the reader (the ring buffer's default). true: records wait for the
 * reader's own poll timeout (the addon's poller collects them every 100 ms) unless the ring is
 * half full: a JVM making hundreds of GCs and safepoints a second then costs the reader a few
 * wakeups a second instead of one per record. */
const volatile bool lazy_wakeup = false;
/* true: one ring-buffer record per collection and safepoint (the CLI and the editor show each).
 * false with `histograms`: nothing goes through the ring buffers (metrics only: the agent). */
const volatile bool records = true;
/* true: pauses and safepoints are also counted in the `hists` map (see java-gc.h). */
const volatile bool histograms = false;

#define EVENTS_RING_BYTES (256 * 1024)
#define SAFEPOINTS_RING_BYTES (64 * 1024)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EVENTS_RING_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SAFEPOINTS_RING_BYTES);
} safepoints SEC(".maps");

/* The flags of a ring buffer output (see lazy_wakeup). */
static __always_inline __u64 wakeup_flags(void *ring, __u64 ring_bytes)
{
	if (!lazy_wakeup)
		return 0;
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= ring_bytes / 2 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* One in-flight pause per thread (tid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct java_gc_event);
} inflight SEC(".maps");

/* One in-flight concurrent cycle per thread (tid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct java_gc_event);
} cycles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct java_vm_state);
} vmstate SEC(".maps");

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

/* Processes that exec'd since user space last drained this map (tgid -> 1): all mode looks for
 * new JVMs among them rather than reading every process in /proc each second. With launcher
 * names set, only execs of a program so named land here (looked at within a second); every
 * other exec lands in `other_execs`, which user space drains only every few tens of seconds: a
 * host's shells, compilers and scripts then cost no user-space work per exec. */
#define JAVA_GC_EXECS_MAX 4096
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JAVA_GC_EXECS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} execs SEC(".maps");

#define JAVA_GC_OTHER_EXECS_MAX 16384
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JAVA_GC_OTHER_EXECS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u8);
} other_execs SEC(".maps");

/* The program names (comm after the exec: the file's base name, 15 bytes at most, NUL-padded)
 * whose execs go to `execs`; all zero: every exec does. */
#define JAVA_GC_LAUNCHERS 32
const volatile __u64 launchers[JAVA_GC_LAUNCHERS][2] = {};

/* true (a metrics service): each launcher's exec also rings `launched`, whose reader sleeps until
 * the kernel wakes it, instead of user space looking at `execs` on a timer. The record (the tgid)
 * is only a doorbell: `execs` stays the list of what exec'd, so a ring that is full (its reader
 * already woken and behind) loses nothing. */
const volatile bool launch_wakeups = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} launched SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		__sync_fetch_and_add(v, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct java_gc_hist_key);
	__type(value, struct java_gc_hist_value);
} hists SEC(".maps");

/* Zero-filled template for new histogram entries (too big for the stack next to the key). */
static const struct java_gc_hist_value empty_hist;

/* The slot of a duration: the first edge it does not exceed (Prometheus `le`), else the last. */
static __always_inline __u32 hist_slot(__u64 ns)
{
	static const __u64 edges[JAVA_GC_HIST_NR_EDGES] = { JAVA_GC_HIST_EDGES_NS };

#pragma unroll
	for (int i = 0; i < JAVA_GC_HIST_NR_EDGES; i++)
		if (ns <= edges[i])
			return i;
	return JAVA_GC_HIST_NR_EDGES;
}

/* Counts one pause (manager and vmop name it; NULL for a safepoint) of `ns` for process `pid`. */
static __always_inline void hist_count(__u32 what, __u32 pid, const char *manager, const char *vmop, __u64 ns)
{
	struct java_gc_hist_key k;
	struct java_gc_hist_value *h;

	__builtin_memset(&k, 0, sizeof(k));
	k.pid = pid;
	k.what = what;
	if (manager)
		__builtin_memcpy(k.manager, manager, JAVA_GC_MANAGER_LEN);
	if (vmop)
		__builtin_memcpy(k.vmop, vmop, JAVA_GC_VMOP_LEN);
	k.epoch = hist_epoch();
	h = hist_entry(&hists, &k, &empty_hist);
	if (!h) {
		count(JAVA_GC_CTR_HIST_FULL);
		return;
	}
	__sync_fetch_and_add(&h->slots[hist_slot(ns)], 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
}

static __always_inline struct java_gc_event *fresh_record(void *map, __u32 tid)
{
	__u32 zero = 0;
	struct java_gc_event *tmpl = bpf_map_lookup_elem(&zero_event, &zero);

	if (!tmpl)
		return NULL;
	if (bpf_map_update_elem(map, &tid, tmpl, BPF_ANY)) {
		count(JAVA_GC_CTR_INFLIGHT_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(map, &tid);
}

static __always_inline void emit(struct java_gc_event *rec, __u64 end)
{
	if (!rec->start_ns || end < rec->start_ns || end - rec->start_ns < min_duration_ns)
		return;
	rec->duration_ns = end - rec->start_ns;
	/* A concurrent cycle runs beside the application: no pause to count. */
	if (histograms && !(rec->flags & JAVA_GC_EV_CYCLE))
		hist_count(JAVA_GC_HIST_PAUSE, rec->pid, rec->manager, rec->vmop, rec->duration_ns);
	if (!records)
		return;
	rec->cpu = bpf_get_smp_processor_id();
	if (bpf_ringbuf_output(&events, rec, sizeof(*rec), wakeup_flags(&events, EVENTS_RING_BYTES)))
		count(JAVA_GC_CTR_RINGBUF_FULL);
}

SEC("usdt")
int BPF_USDT(handle_gc_begin, int full)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct java_gc_event *rec = fresh_record(&inflight, tid);
	struct java_vm_state *vm;

	if (!rec)
		return 0;
	rec->pid = id >> 32;
	rec->tid = tid;
	rec->full = (full & 0xff) != 0;
	vm = bpf_map_lookup_elem(&vmstate, &tid);
	if (vm)
		__builtin_memcpy(rec->vmop, vm->vmop, JAVA_GC_VMOP_LEN);
	/* Last: the pause starts once the record is ready. */
	rec->start_ns = bpf_ktime_get_ns();
	rec->pause_start_ns = rec->start_ns;
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

static __always_inline void set_manager(struct java_gc_event *rec, __u64 mgr, __u64 mgr_len)
{
	__u32 size = mgr_len >= JAVA_GC_MANAGER_LEN ? JAVA_GC_MANAGER_LEN : (__u32)mgr_len + 1;

	rec->mgr_ptr = mgr;
	bpf_probe_read_user_str(rec->manager, size, (const void *)mgr);
}

/* The record a pool probe belongs to: the thread's pause, else its concurrent cycle (created at
 * a begin probe). Inside a pause, a second manager ends the first one's collection. */
static __always_inline struct java_gc_event *record_for(__u64 mgr, __u64 mgr_len, bool begin)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct java_gc_event *rec = bpf_map_lookup_elem(&inflight, &tid), *tmpl;
	__u64 pause_start, full, now;
	char vmop[JAVA_GC_VMOP_LEN];
	__u8 seq;

	if (rec) {
		if (!rec->mgr_ptr) {
			set_manager(rec, mgr, mgr_len);
		} else if (begin && rec->mgr_ptr != mgr) {
			/* Escalation: the first collection ends at its last pool end. */
			emit(rec, rec->last_end_ns ? rec->last_end_ns : bpf_ktime_get_ns());
			tmpl = bpf_map_lookup_elem(&zero_event, &zero);
			if (!tmpl)
				return NULL;
			pause_start = rec->pause_start_ns;
			full = rec->full;
			seq = rec->seq + 1;
			__builtin_memcpy(vmop, rec->vmop, JAVA_GC_VMOP_LEN);
			bpf_probe_read_kernel(rec, sizeof(*rec), tmpl);
			rec->pid = id >> 32;
			rec->tid = tid;
			rec->full = full;
			rec->seq = seq;
			rec->pause_start_ns = pause_start;
			__builtin_memcpy(rec->vmop, vmop, JAVA_GC_VMOP_LEN);
			set_manager(rec, mgr, mgr_len);
			rec->start_ns = bpf_ktime_get_ns();
		}
		return rec;
	}
	rec = bpf_map_lookup_elem(&cycles, &tid);
	if (rec || !begin)
		return rec;
	rec = fresh_record(&cycles, tid);
	if (!rec)
		return NULL;
	rec->pid = id >> 32;
	rec->tid = tid;
	rec->flags = JAVA_GC_EV_CYCLE;
	set_manager(rec, mgr, mgr_len);
	now = bpf_ktime_get_ns();
	rec->start_ns = now;
	return rec;
}

/* Arguments of both pool probes: manager name, its length, pool name, its length, then the
 * pool's MemoryUsage (initial, used, committed, max). */
SEC("usdt")
int BPF_USDT(handle_pool_begin, __u64 mgr, __u64 mgr_len, __u64 pool, __u64 pool_len, __u64 initial, __u64 used)
{
	struct java_gc_event *rec = record_for(mgr, mgr_len, true);
	struct java_gc_pool *p;

	if (!rec)
		return 0;
	p = pool_slot(rec, pool);
	if (!p)
		return 0;
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
	struct java_gc_event *rec = record_for(mgr, mgr_len, false);
	struct java_gc_pool *p;
	__u64 now = bpf_ktime_get_ns();

	if (!rec)
		return 0;
	rec->last_end_ns = now;
	p = pool_slot(rec, pool);
	if (!p)
		return 0;
	p->used_after = used;
	p->committed_after = committed;
	p->flags |= JAVA_GC_POOL_HAS_AFTER;
	read_name(p, pool, pool_len);
	/* A concurrent cycle ends with the end probe of its last pool. */
	if (rec->flags & JAVA_GC_EV_CYCLE) {
		rec->pools_ended++;
		if (rec->pools_ended >= rec->npools) {
			emit(rec, now);
			bpf_map_delete_elem(&cycles, &tid);
		}
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(handle_gc_end)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_gc_event *rec = bpf_map_lookup_elem(&inflight, &tid);

	/* No record: the GC began before we attached. */
	if (!rec)
		return 0;
	emit(rec, bpf_ktime_get_ns());
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

static const struct java_vm_state empty_vm_state;

static __always_inline struct java_vm_state *vm_state(__u32 tid)
{
	struct java_vm_state *vm = bpf_map_lookup_elem(&vmstate, &tid);

	if (vm)
		return vm;
	if (bpf_map_update_elem(&vmstate, &tid, &empty_vm_state, BPF_NOEXIST))
		return NULL;
	return bpf_map_lookup_elem(&vmstate, &tid);
}

/* vmops__begin(name, name_len, mode) */
SEC("usdt")
int BPF_USDT(handle_gc_vmop_begin, __u64 name, __u64 len)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_vm_state *vm = vm_state(tid);
	__u32 size = len >= JAVA_GC_VMOP_LEN ? JAVA_GC_VMOP_LEN : (__u32)len + 1;

	if (!vm)
		return 0;
	/* Zero-padded: the name is part of a histogram key in metrics-only mode. */
	__builtin_memset(vm->vmop, 0, JAVA_GC_VMOP_LEN);
	bpf_probe_read_user_str(vm->vmop, size, (const void *)name);
	if (vm->sp_start_ns && !vm->sp_sync_ns) {
		vm->sp_sync_ns = bpf_ktime_get_ns();
		__builtin_memcpy(vm->sp_vmop, vm->vmop, JAVA_GC_VMOP_LEN);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(handle_gc_sp_begin)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct java_vm_state *vm = vm_state(tid);

	if (!vm) {
		count(JAVA_GC_CTR_SAFEPOINT_LOST);
		return 0;
	}
	vm->sp_sync_ns = 0;
	vm->sp_vmop[0] = 0;
	vm->sp_start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("usdt")
int BPF_USDT(handle_gc_sp_end)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)id;
	struct java_vm_state *vm = bpf_map_lookup_elem(&vmstate, &tid);
	struct java_safepoint_event *e;

	if (!vm || !vm->sp_start_ns)
		return 0;
	if (histograms)
		hist_count(JAVA_GC_HIST_SAFEPOINT, id >> 32, NULL, NULL, now - vm->sp_start_ns);
	if (!records) {
		vm->sp_start_ns = 0;
		return 0;
	}
	e = bpf_ringbuf_reserve(&safepoints, sizeof(*e), 0);
	if (!e) {
		count(JAVA_GC_CTR_SAFEPOINT_LOST);
	} else {
		e->start_ns = vm->sp_start_ns;
		e->sync_ns = vm->sp_sync_ns ? vm->sp_sync_ns - vm->sp_start_ns : 0;
		e->duration_ns = now - vm->sp_start_ns;
		e->pid = id >> 32;
		e->tid = tid;
		__builtin_memcpy(e->vmop, vm->sp_vmop, JAVA_GC_VMOP_LEN);
		bpf_ringbuf_submit(e, wakeup_flags(&safepoints, SAFEPOINTS_RING_BYTES));
	}
	vm->sp_start_ns = 0;
	return 0;
}

/* Whether the current task's name is one of `launchers` (true when none is set). */
static __always_inline bool launcher_named(void)
{
	__u64 comm[2] = {};

	if (!launchers[0][0])
		return true;
	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < JAVA_GC_LAUNCHERS; i++) {
		if (!launchers[i][0])
			break;
		if (launchers[i][0] == comm[0] && launchers[i][1] == comm[1])
			return true;
	}
	return false;
}

/* Loaded in all mode only. An exec is rare next to a GC: one map update each. */
SEC("tracepoint/sched/sched_process_exec")
int handle_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 one = 1;
	long err;

	if (launcher_named()) {
		err = bpf_map_update_elem(&execs, &tgid, &one, BPF_ANY);
		if (launch_wakeups)
			bpf_ringbuf_output(&launched, &tgid, sizeof(tgid), 0);
	} else {
		err = bpf_map_update_elem(&other_execs, &tgid, &one, BPF_ANY);
	}
	if (err)
		count(JAVA_GC_CTR_EXECS_FULL);
	return 0;
}
