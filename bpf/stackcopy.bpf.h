/* SPDX-License-Identifier: GPL-2.0 */
/* User registers and a copy of the top of the user stack, for CFI unwinding in user space.
 * Shared by every tracer that offers dwarf stacks (profile; memleak's uprobe mode).
 * The layout user space reads is in each tracer's X.h; this only fills a regs array in x86_64
 * DWARF register order (STACKCOPY_NREGS u64) and a byte buffer. */
#ifndef EBPF_STUDIO_STACKCOPY_BPF_H
#define EBPF_STUDIO_STACKCOPY_BPF_H

#include <bpf/bpf_core_read.h>

#define STACKCOPY_NREGS 17
#define STACKCOPY_PAGE 4096

/* DWARF order: 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 rip. */
static __always_inline void stackcopy_regs(struct pt_regs *regs, __u64 *out)
{
	out[0] = BPF_CORE_READ(regs, ax);
	out[1] = BPF_CORE_READ(regs, dx);
	out[2] = BPF_CORE_READ(regs, cx);
	out[3] = BPF_CORE_READ(regs, bx);
	out[4] = BPF_CORE_READ(regs, si);
	out[5] = BPF_CORE_READ(regs, di);
	out[6] = BPF_CORE_READ(regs, bp);
	out[7] = BPF_CORE_READ(regs, sp);
	out[8] = BPF_CORE_READ(regs, r8);
	out[9] = BPF_CORE_READ(regs, r9);
	out[10] = BPF_CORE_READ(regs, r10);
	out[11] = BPF_CORE_READ(regs, r11);
	out[12] = BPF_CORE_READ(regs, r12);
	out[13] = BPF_CORE_READ(regs, r13);
	out[14] = BPF_CORE_READ(regs, r14);
	out[15] = BPF_CORE_READ(regs, r15);
	out[16] = BPF_CORE_READ(regs, ip);
}

/* Bytes readable from sp upwards, up to `want` (<= max_pages pages past sp's): the stack ends at a
 * page boundary (the top of its VMA), so probe one byte per page instead of letting one large
 * copy fail as a whole. */
static __always_inline __u64 stackcopy_readable(__u64 sp, __u64 want, int max_pages)
{
	__u64 end = (sp & ~(__u64)(STACKCOPY_PAGE - 1)) + STACKCOPY_PAGE;
	char b;

	for (int k = 0; k < max_pages; k++) {
		if (end >= sp + want)
			break;
		if (bpf_probe_read_user(&b, 1, (void *)end))
			break;
		end += STACKCOPY_PAGE;
	}
	return end - sp < want ? end - sp : want;
}

/* Copies up to `want` bytes (<= max) from the user stack at sp into buf; returns the length. */
#define STACKCOPY(buf, max, sp, want)                                                          \
	({                                                                                     \
		__u64 __len = stackcopy_readable((sp), (want), (max) / STACKCOPY_PAGE);         \
		if (__len > (max))                                                             \
			__len = (max);                                                         \
		if (bpf_probe_read_user((buf), __len, (void *)(sp)))                           \
			__len = 0;                                                             \
		__len;                                                                         \
	})

#endif
