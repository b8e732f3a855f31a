/* Layout shared by bpf/memleak.bpf.c and the TypeScript decoder (extension/tracers/memleak.ts).
 * Fixed size, no implicit padding: the decoder reads these by offset. */
#ifndef EBPF_STUDIO_MEMLEAK_H
#define EBPF_STUDIO_MEMLEAK_H

#define MEMLEAK_MAX_STACK_DEPTH 127

/* Value of the `allocs` map (key: the allocation's address, u64; for pages: the pfn).
 * 24 bytes:  0 size (u64)  8 timestamp_ns (u64, CLOCK_MONOTONIC)  16 stack_id (s64, <0: none) */
struct memleak_alloc {
	__u64 size;
	__u64 timestamp_ns;
	__s64 stack_id;
};
#define MEMLEAK_ALLOC_SIZE 24

/* Value of the `stack_totals` map (key: stack_id, s64): outstanding bytes and count per stack,
 * updated with atomic adds. 16 bytes: 0 bytes (u64)  8 count (u64) */
struct memleak_totals {
	__u64 bytes;
	__u64 count;
};
#define MEMLEAK_TOTALS_SIZE 16

/* Index into the `counters` array map (u64 each). */
#define MEMLEAK_CNT_ALLOCS_FULL 0  /* allocs table at capacity: allocation not recorded */
#define MEMLEAK_CNT_STACK_LOST 1   /* stack map full or hash collision: recorded without a stack */
#define MEMLEAK_CNT_TOTALS_FULL 2  /* stack_totals at capacity */
#define MEMLEAK_CNT_PENDING_FULL 3 /* per-thread in-flight table full: call not traced */
#define MEMLEAK_CNT_ALLOCS 4       /* allocations recorded */
#define MEMLEAK_CNT_FREES 5        /* frees that matched a recorded allocation */
#define MEMLEAK_CNT_EXIT_HOLDS 6   /* times the target was stopped at exit() for symbolization */
#define MEMLEAK_CNT_EXIT_LOST 7    /* exit events that found the ring buffer full (no hold) */
#define MEMLEAK_CNT_MAX 8

/* Ring-buffer event: the target called exit() and was stopped with SIGSTOP (hold_at_exit).
 * 8 bytes: 0 tgid (u32)  4 tid (u32) */
struct memleak_exit_event {
	__u32 tgid;
	__u32 tid;
};
#define MEMLEAK_EXIT_EVENT_SIZE 8

#endif
