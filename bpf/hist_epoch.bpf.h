/* Histograms that user space reads and resets every interval without stopping the programs that
 * fill them: the epoch protocol. The histogram map's key ends with a __u32 epoch; programs add to
 * the entry of the current epoch (ctl[0]). Each interval user space writes a new epoch, waits
 * for programs that read the old one to finish (microseconds), then dumps and deletes the old
 * epoch's entries: no increment can land in an entry while it is being read. The reader is
 * extension/tracers/histEpochs.ts; slots are log2 (log2.bpf.h). Include once per program. */
#ifndef EBPF_STUDIO_HIST_EPOCH_BPF_H
#define EBPF_STUDIO_HIST_EPOCH_BPF_H

/* Slot 0: the current epoch, written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ctl SEC(".maps");

static __always_inline __u32 hist_epoch(void)
{
	__u32 zero = 0, *epoch = bpf_map_lookup_elem(&ctl, &zero);

	return epoch ? *epoch : 0;
}

/* The histogram entry of key in map, created from the zero-filled `empty` template when new
 * (too big to build on the 512-byte stack). NULL when the map has no free entry: the caller
 * counts the loss. */
static __always_inline void *hist_entry(void *map, const void *key, const void *empty)
{
	void *h = bpf_map_lookup_elem(map, key);
	long err;

	if (h)
		return h;
	err = bpf_map_update_elem(map, key, empty, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: another CPU created it first */)
		return NULL;
	return bpf_map_lookup_elem(map, key);
}

#endif
