/* Layout shared by bpf/profile.bpf.c and the TypeScript decoder (extension/tracers/profile/decode.ts and dwarf.ts).
 * Fixed size, no implicit padding: the decoder reads it by offset. */
#ifndef EBPF_STUDIO_PROFILE_H
#define EBPF_STUDIO_PROFILE_H

#define PROFILE_COMM_LEN 16
/* Deepest stack kept per sample (the kernel's own limit is sysctl kernel.perf_event_max_stack, 127). */
#define PROFILE_MAX_DEPTH 127

/* Key of the counts map, 32 bytes:
 *   0 pid (u32, tgid)   4 tid (u32)   8 user_stack_id (s32)   12 kern_stack_id (s32)
 *  16 comm (char[16], NUL-padded)
 * A stack id < 0 means "no stack": the errno bpf_get_stackid returned (e.g. -EFAULT for the user
 * stack of a kernel thread, or for the kernel stack of a sample taken in user mode). */
struct profile_key {
	__u32 pid;
	__u32 tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	char comm[PROFILE_COMM_LEN];
};

#define PROFILE_KEY_SIZE 32

/* Indices of the per-CPU "stats" array (u64 each). */
#define PROFILE_STAT_SAMPLES 0       /* samples that passed the pid filter */
#define PROFILE_STAT_LOST_USTACK 1   /* user stack dropped: stack map full or hash collision */
#define PROFILE_STAT_LOST_KSTACK 2   /* kernel stack dropped: same reasons */
#define PROFILE_STAT_LOST_COUNTS 3   /* sample dropped: counts map full */
#define PROFILE_STAT_LOST 4          /* samples that lost anything of the above (each once) */
#define PROFILE_STAT_SAMPLES_DWARF 5 /* samples sent to user space with registers and a stack copy */
#define PROFILE_STAT_LOST_RINGBUF 6  /* dwarf samples dropped: ring buffer full (user space behind) */
#define PROFILE_STAT_NO_USER_REGS 7  /* dwarf samples without user registers (kernel threads) */
#define PROFILE_STAT_COUNT 8

/* DWARF (CFI) unwinding: the kernel copies the user registers and the top
 * of the user stack with each sample; user space unwinds it with elfutils libdw against the
 * .eh_frame/.debug_frame of each mapped module, as perf --call-graph dwarf does. */

/* Registers in DWARF numbering for x86_64 (the order libdw's dwfl_thread_state_registers takes):
 * 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 rip (the return-address column). */
#define PROFILE_NREGS 17

/* Largest stack copy. Measured on this project's fixtures and a JDK 17 JVM (bench "profile unwind"):
 * C programs reach main within 1-3 KiB; JVM threads need ~10-14 KiB to reach thread start.
 * The copy size is rodata (stack_copy_bytes) up to this bound. */
#define PROFILE_MAX_STACK_COPY 32768

/* One ring-buffer record per sample in dwarf mode: this header, then stack_len bytes copied from
 * the user stack at regs[7] (rsp). 184 bytes, no implicit padding:
 *   0 ts (u64, bpf_ktime_get_ns)  8 pid  12 tid  16 kern_stack_id (s32)  20 stack_len (u32)
 *  24 comm[16]  40 regs[17] (u64 each)  176 ns_tid (u32: the tid in the thread's own pid
 *  namespace, for the Java agent's join in a container; 0 = unknown)  180 reserved
 *  184 stack bytes */
struct profile_sample {
	__u64 ts;
	__u32 pid;
	__u32 tid;
	__s32 kern_stack_id;
	__u32 stack_len;
	char comm[PROFILE_COMM_LEN];
	__u64 regs[PROFILE_NREGS];
	__u32 ns_tid;
	__u32 reserved;
	__u8 stack[PROFILE_MAX_STACK_COPY];
};

#define PROFILE_SAMPLE_HEADER_SIZE 184

/* Java agent join record (ring buffer java_samples), 24 bytes:
 *   0 tid (u32, host)   4 user_stack_id (s32)   8 kern_stack_id (s32)
 *   12 ns_tid (u32: the tid in the thread's own pid namespace, what gettid() returns inside a
 *      container and so what the agent records; 0 = could not be read)   16 ktime_ns (u64) */
struct profile_java_sample {
	__u32 tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 ns_tid;
	__u64 ktime_ns;
};

#endif
