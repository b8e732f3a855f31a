/* Layout shared by bpf/java-gc.bpf.c and the TypeScript decoder (extension/tracers/javaGc/decode.ts).
 * Fixed size, no implicit padding: the decoder reads it by offset. The same struct is the
 * per-thread in-flight record (hash map value) and the ring-buffer event, so the kernel emits
 * it with one bpf_ringbuf_output and never builds a large copy on its 512-byte stack. */
#ifndef EBPF_STUDIO_JAVA_GC_H
#define EBPF_STUDIO_JAVA_GC_H

/* HotSpot reports every memory pool (heap and non-heap) at each GC: 8 with SerialGC on JDK 17. */
#define JAVA_GC_MAX_POOLS 16
/* Longest JDK 17 pool name is "CodeHeap 'non-profiled nmethods'" (32 chars). */
#define JAVA_GC_POOL_NAME_LEN 48
/* GarbageCollectorMXBean names: longest on JDK 17-21 is "G1 Young Generation" (19 chars). */
#define JAVA_GC_MANAGER_LEN 32
/* VM operation names: "Shenandoah Final Mark and Start Evacuation" is 42 chars. */
#define JAVA_GC_VMOP_LEN 48

/* Indexes into the `counters` array map. */
#define JAVA_GC_CTR_RINGBUF_FULL 0   /* events lost: ring buffer had no room */
#define JAVA_GC_CTR_INFLIGHT_FULL 1  /* GCs lost: in-flight map had no free entry */
#define JAVA_GC_CTR_POOLS_FULL 2     /* pool records dropped: more than JAVA_GC_MAX_POOLS pools */
#define JAVA_GC_CTR_SAFEPOINT_LOST 3 /* safepoints lost: ring buffer or state map full */
#define JAVA_GC_CTR_EXECS_FULL 4    /* execs not noted: the execs map was full (user space scans all) */
#define JAVA_GC_CTR_HIST_FULL 5     /* pauses or safepoints not counted: the histogram map was full */
#define JAVA_GC_NR_COUNTERS 6

/* Flags of struct java_gc_pool */
#define JAVA_GC_POOL_HAS_BEFORE 1
#define JAVA_GC_POOL_HAS_AFTER 2

/* Flags of struct java_gc_event */
#define JAVA_GC_EV_CYCLE 1 /* pool probes outside any gc__begin/gc__end pause: a concurrent cycle */

/* 80 bytes:  0 name_ptr (u64, the JVM's pool-name pointer: identifies the pool within a GC)
 *            8 used_before (u64)  16 used_after (u64)  24 committed_after (u64)
 *           32 flags (u32)  36 pad (u32)  40 name (char[48], NUL-terminated) */
struct java_gc_pool {
	__u64 name_ptr;
	__u64 used_before;
	__u64 used_after;
	__u64 committed_after;
	__u32 flags;
	__u32 _pad;
	char name[JAVA_GC_POOL_NAME_LEN];
};

#define JAVA_GC_POOL_SIZE 88

/* One collection as the JVM counts it (one memory manager's run), 144-byte header, then
 * JAVA_GC_MAX_POOLS pools (88 bytes each) = 1552 bytes:
 *   0 start_ns (u64, bpf_ktime_get_ns: gc__begin, or the manager's first pool probe)
 *   8 duration_ns (u64)
 *  16 pause_start_ns (u64, gc__begin of the pause this collection ran in; 0 for a cycle)
 *  24 mgr_ptr (u64, the JVM's manager-name pointer; 0 = no pool probe in this pause)
 *  32 pid (u32)  36 tid (u32)  40 cpu (u32, at the end)
 *  44 full (u8, gc__begin's flag)  45 flags (u8, JAVA_GC_EV_*)  46 seq (u8, 0 = first
 *     collection of its pause, 1 = the one it escalated into)  47 pad (u8)
 *  48 npools (u32)  52 pools_ended (u32)  56 last_end_ns (u64, the last pool end probe)
 *  64 manager (char[32])  96 vmop (char[48], the VM operation running the pause)
 * 144 pools[JAVA_GC_MAX_POOLS] */
struct java_gc_event {
	__u64 start_ns;
	__u64 duration_ns;
	__u64 pause_start_ns;
	__u64 mgr_ptr;
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u8 full;
	__u8 flags;
	__u8 seq;
	__u8 _pad1;
	__u32 npools;
	__u32 pools_ended;
	__u64 last_end_ns;
	char manager[JAVA_GC_MANAGER_LEN];
	char vmop[JAVA_GC_VMOP_LEN];
	struct java_gc_pool pools[JAVA_GC_MAX_POOLS];
};

#define JAVA_GC_HEADER_SIZE 144
#define JAVA_GC_EVENT_SIZE (JAVA_GC_HEADER_SIZE + JAVA_GC_MAX_POOLS * JAVA_GC_POOL_SIZE)

/* A safepoint (hs_private:safepoint__begin/__end on the VM thread), 80 bytes:
 *   0 start_ns (u64, safepoint__begin)  8 sync_ns (u64, safepoint__begin → the first
 *   vmops__begin inside it: time to safepoint; 0 when no VM operation ran)
 *  16 duration_ns (u64, safepoint__begin → safepoint__end)
 *  24 pid (u32)  28 tid (u32)  32 vmop (char[48], the first VM operation run in it) */
struct java_safepoint_event {
	__u64 start_ns;
	__u64 sync_ns;
	__u64 duration_ns;
	__u32 pid;
	__u32 tid;
	char vmop[JAVA_GC_VMOP_LEN];
};

#define JAVA_SAFEPOINT_EVENT_SIZE 80

/* Per VM thread: the VM operation named last (vmops__begin; there is no need to watch vmops__end:
 * each pause runs inside a VM operation) and the safepoint in progress. */
struct java_vm_state {
	__u64 sp_start_ns;
	__u64 sp_sync_ns;
	char vmop[JAVA_GC_VMOP_LEN];
	char sp_vmop[JAVA_GC_VMOP_LEN];
};

/* Metrics-only mode (the agent): pauses and safepoints are counted in the kernel, in histograms
 * per JVM and per (collector, VM operation), read and reset by user space through the epoch
 * protocol (hist_epoch.bpf.h), instead of one ring-buffer record each. The buckets are the
 * agent's Prometheus `le` bounds (1-2-5 steps from 10 µs to 10 s) so its series stay exact:
 * slot i counts durations <= edge i, the last slot those above 10 s. */
#define JAVA_GC_HIST_EDGES_NS                                                                      \
	10000ULL, 20000ULL, 50000ULL, 100000ULL, 200000ULL, 500000ULL, 1000000ULL, 2000000ULL,    \
	5000000ULL, 10000000ULL, 20000000ULL, 50000000ULL, 100000000ULL, 200000000ULL,            \
	500000000ULL, 1000000000ULL, 2000000000ULL, 5000000000ULL, 10000000000ULL
#define JAVA_GC_HIST_NR_EDGES 19
#define JAVA_GC_HIST_SLOTS (JAVA_GC_HIST_NR_EDGES + 1)

/* What a histogram counts */
#define JAVA_GC_HIST_PAUSE 0     /* collections in a pause (concurrent cycles are not counted) */
#define JAVA_GC_HIST_SAFEPOINT 1 /* safepoints: manager and vmop are empty */

/* 92 bytes:  0 pid (u32)  4 what (u32, JAVA_GC_HIST_*)  8 manager (char[32])  40 vmop (char[48])
 *           88 epoch (u32, last as hist_epoch.bpf.h wants). Strings zero-padded: one entry per name. */
struct java_gc_hist_key {
	__u32 pid;
	__u32 what;
	char manager[JAVA_GC_MANAGER_LEN];
	char vmop[JAVA_GC_VMOP_LEN];
	__u32 epoch;
};

#define JAVA_GC_HIST_KEY_SIZE 92

/* 168 bytes:  0 slots (u64[20])  160 sum_ns (u64) */
struct java_gc_hist_value {
	__u64 slots[JAVA_GC_HIST_SLOTS];
	__u64 sum_ns;
};

#define JAVA_GC_HIST_VALUE_SIZE 168

_Static_assert(sizeof(struct java_gc_hist_key) == JAVA_GC_HIST_KEY_SIZE, "java_gc_hist_key layout");
_Static_assert(sizeof(struct java_gc_hist_value) == JAVA_GC_HIST_VALUE_SIZE, "java_gc_hist_value layout");
_Static_assert(sizeof(struct java_gc_pool) == JAVA_GC_POOL_SIZE, "java_gc_pool layout");
_Static_assert(sizeof(struct java_gc_event) == JAVA_GC_EVENT_SIZE, "java_gc_event layout");
_Static_assert(sizeof(struct java_safepoint_event) == JAVA_SAFEPOINT_EVENT_SIZE, "java_safepoint_event layout");

#endif
