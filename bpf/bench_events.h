/* Layout shared by bpf/bench_events.bpf.c and bench/eventThroughput.ts. Fixed size, no padding. */
#ifndef EBPF_STUDIO_BENCH_EVENTS_H
#define EBPF_STUDIO_BENCH_EVENTS_H

/* Upper bound of events emitted per traced syscall (rodata events_per_hit). */
#define BENCH_EVENTS_MAX_PER_HIT 64

/* Indexes into the `counters` array map. */
#define BENCH_CTR_SUBMITTED 0 /* events written into the ring buffer */
#define BENCH_CTR_DROPPED 1   /* events lost: bpf_ringbuf_reserve found no room */
#define BENCH_NR_COUNTERS 2

/* 32 bytes:  0 seq (u64, per-CPU sequence)  8 ts (u64, ktime ns)
 *           16 pid (u32)  20 index (u32, 0..events_per_hit-1)  24 cpu (u32)  28 pad (u32) */
struct bench_event {
	__u64 seq;
	__u64 ts;
	__u32 pid;
	__u32 index;
	__u32 cpu;
	__u32 pad;
};

#define BENCH_EVENT_SIZE 32

#endif
