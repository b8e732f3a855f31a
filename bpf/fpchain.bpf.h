/* Where a user stack is, without walking it: a hash of the chain of frame records above a frame
 * pointer (each record's saved bp and return address: exactly what the kernel's frame-pointer
 * walk reads, so the same chain from the same ip and bp means the same stack). For tracers that
 * cache stack ids per place and check the cache with a real walk now and then (offcpu: where a
 * thread blocks). Needs vmlinux.h and <bpf/bpf_helpers.h> first; declares the per-CPU map
 * fpchain_window. */
#ifndef EBPF_STUDIO_FPCHAIN_BPF_H
#define EBPF_STUDIO_FPCHAIN_BPF_H

/* Bytes above bp copied at once to read the frame records from (u64 words). */
#define FPCHAIN_WINDOW_WORDS 64
/* Frame records read: a deeper chain is reported as deep (not to be cached: always walked). */
#define FPCHAIN_MAX_FRAMES 24

/* Scratch for reading the records with one copy (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[FPCHAIN_WINDOW_WORDS]);
} fpchain_window SEC(".maps");

/* The hash of the chain from fp; *frames: records read; *deep: the chain goes on past
 * FPCHAIN_MAX_FRAMES. The frame records of a user stack lie at rising addresses above bp, most
 * within a few hundred bytes: one copy of that window (one helper call, whose cost here does not
 * depend on its size, instead of one per frame) and a walk inside it; a record outside the window,
 * or a window that cannot be read whole (the end of the stack), is read alone. */
static __always_inline __u64 fpchain_hash(__u64 fp, __u32 *frames, bool *deep)
{
	__u64 frame[2], h = 0, base = fp, (*win)[FPCHAIN_WINDOW_WORDS];
	__u32 zero = 0;
	int i;

	*deep = true;
	win = bpf_map_lookup_elem(&fpchain_window, &zero);
	if (!win || fp < 4096 || bpf_probe_read_user(*win, sizeof(*win), (void *)base))
		base = 0;
	for (i = 0; i < FPCHAIN_MAX_FRAMES; i++) {
		__u64 off = fp - base;

		/* the outermost frame's saved bp is 0, or, below code without frame pointers, a small
		 * integer: reading there faults, which costs as much as a walk, and the kernel's walk
		 * stops there as well */
		if (fp < 4096) {
			*deep = false;
			break;
		}
		if (base && win && fp >= base && off <= (FPCHAIN_WINDOW_WORDS - 2) * 8 && !(off & 7)) {
			off /= 8;
			if (off > FPCHAIN_WINDOW_WORDS - 2)
				break; /* not reached: keeps the verifier's bounds */
			frame[0] = (*win)[off];
			frame[1] = (*win)[off + 1];
		} else if (bpf_probe_read_user(frame, sizeof(frame), (void *)fp)) {
			*deep = false;
			break;
		}
		h = (h ^ frame[0]) * 0x9E3779B97F4A7C15ULL;
		h = (h ^ frame[1]) * 0x9E3779B97F4A7C15ULL;
		fp = frame[0];
	}
	*frames = i;
	return h;
}

#endif
