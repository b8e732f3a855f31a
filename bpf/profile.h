/* Layout shared by bpf/profile.bpf.c and the TypeScript decoder (extension/tracers/profile.ts).
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
#define PROFILE_STAT_COUNT 5

/* Java agent join record (ring buffer java_samples), 24 bytes:
 *   0 tid (u32)   4 user_stack_id (s32)   8 kern_stack_id (s32)   12 pad   16 ktime_ns (u64) */
struct profile_java_sample {
	__u32 tid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	__u32 pad;
	__u64 ktime_ns;
};

#endif
