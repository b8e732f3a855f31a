/* Log2 histogram slots computed in the kernel, in the convention of extension/model/log2hist.ts:
 * slot 0 holds v == 0, slot i (i >= 1) holds 2^(i-1) <= v < 2^i. Branch-free binary search
 * because BPF has no count-leading-zeros instruction and loops cost verifier budget. */
#ifndef EBPF_STUDIO_LOG2_BPF_H
#define EBPF_STUDIO_LOG2_BPF_H

/* floor(log2(v)) for v > 0; 0 for v == 0. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* Histogram slot of v, capped at max_slots - 1 (the last slot collects everything above). */
static __always_inline __u32 log2_slot(__u64 v, __u32 max_slots)
{
	__u32 slot = v ? log2_u64(v) + 1 : 0;

	return slot < max_slots ? slot : max_slots - 1;
}

#endif
