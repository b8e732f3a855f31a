/* Layout shared by bpf/memleak.bpf.c and the TypeScript decoder (extension/tracers/memleak/decode.ts).
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
#define MEMLEAK_CNT_COPY_LOST 8    /* dwarf stacks: stack copy ring buffer full (recorded without a stack) */
#define MEMLEAK_CNT_MAX 9

/* CFI (dwarf) stacks for user allocations: instead of a frame-pointer stack id, each
 * recorded allocation gets an id MEMLEAK_DWARF_ID_BASE + n, and the user registers and a copy of
 * the top of the stack at the uretprobe go to the `stack_copies` ring buffer under that id; user
 * space unwinds them by CFI. Ids below the base are stack-map ids as before. */
#define MEMLEAK_DWARF_ID_BASE (1LL << 40)
#define MEMLEAK_NREGS 17
#define MEMLEAK_MAX_STACK_COPY 16384

/* Ring-buffer record of `stack_copies`: this header, then stack_len bytes from regs[7] (rsp).
 * 160 bytes: 0 stack_id (s64)  8 pid  12 tid  16 stack_len (u32)  20 pad  24 regs[17] (u64,
 * x86_64 DWARF order, rip = regs[16]: the return address into the allocating function) */
struct memleak_stack_copy {
	__s64 stack_id;
	__u32 pid;
	__u32 tid;
	__u32 stack_len;
	__u32 pad;
	__u64 regs[MEMLEAK_NREGS];
	__u8 stack[MEMLEAK_MAX_STACK_COPY];
};
#define MEMLEAK_STACK_COPY_HEADER_SIZE 160

/* Ring-buffer event: the target called exit() and was stopped with SIGSTOP (hold_at_exit).
 * 8 bytes: 0 tgid (u32)  4 tid (u32) */
struct memleak_exit_event {
	__u32 tgid;
	__u32 tid;
};
#define MEMLEAK_EXIT_EVENT_SIZE 8

#endif
