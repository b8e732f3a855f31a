/* Layout shared by bpf/selftest.bpf.c and the TypeScript decoder of the selftest tracer.
 * Fixed size, no implicit padding: the decoder reads it by offset. */
#ifndef EBPF_STUDIO_SELFTEST_H
#define EBPF_STUDIO_SELFTEST_H

#define SELFTEST_COMM_LEN 16

/* Which program produced an event, so a test can tell the attach modes apart. */
#define SELFTEST_SRC_TRACEPOINT 1
#define SELFTEST_SRC_RAW_TP 2
#define SELFTEST_SRC_TP_BTF 3

/* 40 bytes:   0 magic (u64)   8 pid (u32)   12 tgid (u32)   16 ppid (u32)
 *            20 source (u32) 24 comm (char[16], NUL-padded) */
struct selftest_event {
	__u64 magic;
	__u32 pid;
	__u32 tgid;
	__u32 ppid;
	__u32 source;
	char comm[SELFTEST_COMM_LEN];
};

#define SELFTEST_EVENT_SIZE 40

#endif
