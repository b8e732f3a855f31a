/* Layout shared by bpf/runqlat.bpf.c and the TypeScript decoder (extension/tracers/runqlat/decode.ts).
 * Fixed size, no implicit padding: the decoder reads it by offset. */
#ifndef EBPF_STUDIO_RUNQLAT_H
#define EBPF_STUDIO_RUNQLAT_H

/* Slots in log2hist.ts convention (see log2.bpf.h); slot 31 collects >= 2^30 units (~18 min in µs). */
#define RUNQLAT_MAX_SLOTS 32
#define RUNQLAT_COMM_LEN 16

/* Values of the key_mode rodata variable: what a histogram is kept per. */
#define RUNQLAT_KEY_ALL 0      /* one histogram, key 0xffffffff (-1) */
#define RUNQLAT_KEY_PROCESS 1  /* per tgid */
#define RUNQLAT_KEY_THREAD 2   /* per tid */
#define RUNQLAT_KEY_PIDNS 3    /* per pid namespace inode number */
#define RUNQLAT_KEY_CGROUP 4   /* per cgroup v2 (low 32 bits of its id: the inode number of its directory) */

#define RUNQLAT_KEY_NONE 0xffffffffU

/* Indexes into the `counters` array map (u64 each). */
#define RUNQLAT_CTR_START_FULL 0 /* wakeups lost: the enqueue-timestamp map had no free entry */
#define RUNQLAT_CTR_HIST_FULL 1  /* waits lost: the histogram map had no free entry */
#define RUNQLAT_NR_COUNTERS 2

/* Histogram map key, 8 bytes:  0 key (u32)  4 epoch (u32), the epoch last as hist_epoch.bpf.h
 * wants: user space reads and deletes each interval's entries by it. */
struct runqlat_key {
	__u32 key;
	__u32 epoch;
};

#define RUNQLAT_KEY_SIZE 8

/* Histogram map value, 272 bytes:  0 slots (u64[32])  256 comm (char[16], NUL-terminated) */
struct runqlat_hist {
	__u64 slots[RUNQLAT_MAX_SLOTS];
	char comm[RUNQLAT_COMM_LEN];
};

#define RUNQLAT_HIST_SIZE 272

#endif
