/* Layout shared by bpf/java-gc.bpf.c and the TypeScript decoder (extension/tracers/javaGc.ts).
 * Fixed size, no implicit padding: the decoder reads it by offset. The same struct is the
 * per-thread in-flight record (hash map value) and the ring-buffer event, so the kernel emits
 * it with one bpf_ringbuf_output and never builds a large copy on its 512-byte stack. */
#ifndef EBPF_STUDIO_JAVA_GC_H
#define EBPF_STUDIO_JAVA_GC_H

/* HotSpot reports every memory pool (heap and non-heap) at each GC: 8 with SerialGC on JDK 17. */
#define JAVA_GC_MAX_POOLS 16
/* Longest JDK 17 pool name is "CodeHeap 'non-profiled nmethods'" (32 chars). */
#define JAVA_GC_POOL_NAME_LEN 48

/* Indexes into the `counters` array map. */
#define JAVA_GC_CTR_RINGBUF_FULL 0   /* events lost: ring buffer had no room */
#define JAVA_GC_CTR_INFLIGHT_FULL 1  /* GCs lost: in-flight map had no free entry */
#define JAVA_GC_CTR_POOLS_FULL 2     /* pool records dropped: more than JAVA_GC_MAX_POOLS pools */
#define JAVA_GC_NR_COUNTERS 3

/* Flags of struct java_gc_pool */
#define JAVA_GC_POOL_HAS_BEFORE 1
#define JAVA_GC_POOL_HAS_AFTER 2

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

/* 40-byte header, then JAVA_GC_MAX_POOLS pools (88 bytes each) = 1448 bytes:
 *   0 start_ns (u64, bpf_ktime_get_ns at gc__begin)   8 duration_ns (u64)
 *  16 pid (u32)  20 tid (u32)  24 cpu (u32, at gc__end)  28 full (u8)  29 pad[3]
 *  32 npools (u32)  36 pad (u32)  40 pools[JAVA_GC_MAX_POOLS] */
struct java_gc_event {
	__u64 start_ns;
	__u64 duration_ns;
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u8 full;
	__u8 _pad1[3];
	__u32 npools;
	__u32 _pad2;
	struct java_gc_pool pools[JAVA_GC_MAX_POOLS];
};

#define JAVA_GC_HEADER_SIZE 40
#define JAVA_GC_EVENT_SIZE (JAVA_GC_HEADER_SIZE + JAVA_GC_MAX_POOLS * JAVA_GC_POOL_SIZE)

_Static_assert(sizeof(struct java_gc_pool) == JAVA_GC_POOL_SIZE, "java_gc_pool layout");
_Static_assert(sizeof(struct java_gc_event) == JAVA_GC_EVENT_SIZE, "java_gc_event layout");

#endif
