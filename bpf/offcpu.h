/* Layout shared by bpf/offcpu.bpf.c and the TypeScript decoder (extension/tracers/offcpu/decode.ts).
 * Fixed size, no implicit padding: the decoder reads it by offset. */
#ifndef EBPF_STUDIO_OFFCPU_H
#define EBPF_STUDIO_OFFCPU_H

#define OFFCPU_COMM_LEN 16
#define OFFCPU_MAX_DEPTH 127

/* Why a thread was off CPU, from its state when it was switched out (and, for a futex wait, the
 * system call it was in). ONCPU marks cpu-clock samples of the wall-clock mode. */
#define OFFCPU_STATE_ONCPU 0
#define OFFCPU_STATE_SLEEP 1     /* TASK_INTERRUPTIBLE and other sleeps (nanosleep, poll, pipe read) */
#define OFFCPU_STATE_IO 2        /* TASK_UNINTERRUPTIBLE: disk I/O, page faults, kernel locks */
#define OFFCPU_STATE_LOCK 3      /* asleep in futex() / futex_waitv(): mutexes, condition variables, parks */
#define OFFCPU_STATE_PREEMPTED 4 /* still runnable when switched out: waited in the run queue */
#define OFFCPU_STATE_COUNT 5

/* Key of the totals map, 40 bytes:
 *   0 pid (u32, tgid)   4 tid (u32)   8 user_stack_id (s32)   12 kern_stack_id (s32)
 *  16 state (u32, OFFCPU_STATE_*)   20 reserved (u32, 0)   24 comm (char[16])
 * A stack id < 0 is the errno bpf_get_stackid returned (no stack, or a dropped one). */
struct offcpu_key {
	__u32 pid;
	__u32 tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 state;
	__u32 reserved;
	char comm[OFFCPU_COMM_LEN];
};

#define OFFCPU_KEY_SIZE 40

/* Value of the totals map, 16 bytes: 0 total_ns (u64: off-CPU time, or on-CPU samples × period)
 *  8 count (u64: intervals, or samples) */
struct offcpu_val {
	__u64 total_ns;
	__u64 count;
};

/* Per thread, kept while it lives (in its task storage; an exiting thread moves its running total
 * to the totals map): when and how it last left the CPU, and its intervals not yet added to the
 * totals, 72 bytes:
 *   0 ts (u64: when it left, on the scheduler's clock, see switch_clock in offcpu.bpf.c; in
 *     struct offcpu_thread_rec as CLOCK_MONOTONIC; 0 while the thread is on CPU)
 *   8 user_stack_id   12 kern_stack_id   16 state
 *  20 in_syscall (it left from inside a system call, so it returns to user space through sys_exit
 *     with the user stack it had)
 *  24 agg_total_ns (u64)   32 agg_count (u64: 0 = nothing held)   40 agg_user_stack_id
 *  44 agg_kern_stack_id   48 agg_state   52 agg_pid   56 agg_comm (char[16])
 * The agg_* fields are a running total for the thread's latest totals key: consecutive intervals
 * with the same stacks and state (a thread that blocks at the same place again and again) are
 * summed here, in the entry the switch-in reads anyway, and added to the totals map only when the
 * key changes or the sum reaches OFFCPU_AGG_MAX_COUNT intervals or OFFCPU_AGG_MAX_NS. User space
 * adds what is held to the totals it reads. */
struct offcpu_start {
	__u64 ts;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 state;
	__u32 in_syscall;
	__u64 agg_total_ns;
	__u64 agg_count;
	__s32 agg_user_stack_id;
	__s32 agg_kern_stack_id;
	__u32 agg_state;
	__u32 agg_pid;
	char agg_comm[OFFCPU_COMM_LEN];
};

#define OFFCPU_START_SIZE 72

/* What the dump_threads iterator writes per thread, 80 bytes: 0 tid (u32)  4 pid (u32, tgid)
 *  8 struct offcpu_start */
struct offcpu_thread_rec {
	__u32 tid;
	__u32 pid;
	struct offcpu_start start;
};

#define OFFCPU_THREAD_REC_SIZE 80
#define OFFCPU_AGG_MAX_COUNT 64
#define OFFCPU_AGG_MAX_NS 10000000ULL

/* Stack cache, BPF-only: the places where a thread blocked (its task storage), each with its
 * signature (user ip, sp, bp, a hash of the frame-record chain and its length, system call << 8 |
 * state, first argument, ax; see block_signature in offcpu.bpf.c) and the stack ids walked there,
 * so that a thread blocking at the same place again reuses them instead of walking both stacks
 * (the walks are most of the cost per switch). A place takes one of the two slots of the set its
 * signature's hash picks, so two or three places of one thread seldom push each other out. */
#define OFFCPU_SIG_WORDS 8
#define OFFCPU_PLACE_SLOTS 8 /* four sets of two: a place may take either slot of the set its hash picks */

struct offcpu_place {
	__u64 sig[OFFCPU_SIG_WORDS];
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 hits;       /* reuses since the last walk */
	__u32 next_check; /* reuses before the next checking walk; 0 until a walk filled the slot */
	__u32 used_at;    /* the thread's switch-out count when the slot was last used (the older of a set is replaced) */
	__u32 reserved;
};

struct offcpu_places {
	__u32 switch_outs;
	__u32 reserved;
	struct offcpu_place slot[OFFCPU_PLACE_SLOTS];
};

/* A thread's task storage (BPF-only): its start entry and its stack cache. */
struct offcpu_thread {
	struct offcpu_start start;
	struct offcpu_places places;
};

/* Java join (java_join): an off-CPU interval of a JVM thread that blocked in a system call, held
 * until the thread returns to user space (sys_exit), then sent through the java_samples ring as
 * the thread is signalled, so the JVMTI agent's handler walks its Java stack then: the stack it
 * blocked with, the sleep itself never interrupted. 40 bytes:
 *   0 ktime_ns (u64: when the signal was sent)   8 total_ns (u64)   16 tid (host)   20 ns_tid
 *  24 user_stack_id   28 kern_stack_id   32 state   36 count (intervals joined into this one) */
struct offcpu_java {
	__u64 ktime_ns;
	__u64 total_ns;
	__u32 tid;
	__u32 ns_tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 state;
	__u32 count;
};

#define OFFCPU_JAVA_SIZE 40

/* Indices of the per-CPU "stats" array (u64 each). */
#define OFFCPU_STAT_SWITCHES 0   /* switch-outs of traced threads */
#define OFFCPU_STAT_BLOCKS 1     /* off-CPU intervals counted (at least min_block_ns) */
#define OFFCPU_STAT_SHORT 2      /* intervals shorter than min_block_ns, not counted */
#define OFFCPU_STAT_LOST_USTACK 3 /* user stack dropped: stack map full or hash collision */
#define OFFCPU_STAT_LOST_KSTACK 4 /* kernel stack dropped: same reasons */
#define OFFCPU_STAT_LOST_TOTALS 5 /* interval dropped: totals map full */
#define OFFCPU_STAT_LOST_START 6  /* switch-out not recorded: no memory for the thread's storage */
#define OFFCPU_STAT_SAMPLES 7     /* wall clock: on-CPU samples counted */
#define OFFCPU_STAT_LOST 8        /* intervals or samples that lost anything above (each once) */
#define OFFCPU_STAT_JAVA 9        /* Java join: intervals sent with a signal at sys_exit */
#define OFFCPU_STAT_WALKS 10      /* switch-outs whose stacks were walked */
#define OFFCPU_STAT_REUSED 11     /* switch-outs that reused the stack ids of the same place */
#define OFFCPU_STAT_CHECKS 12     /* reuses checked by a walk (see recheck_every) */
#define OFFCPU_STAT_MISMATCH 13   /* checks whose walk found other stacks than the reused ids */
#define OFFCPU_STAT_UNCACHED 14   /* switch-outs not cacheable (preempted in a call or user code, a chain deeper than the signature reads, a kernel thread): always walked */
#define OFFCPU_STAT_COUNT 15

#endif
