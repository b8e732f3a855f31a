/* The kernel half of a log2-histogram tracer (runqlat, biolatency, ...): the histogram map read
 * and reset each interval through the epoch protocol (hist_epoch.bpf.h), the loss counters, and
 * the twin programs of each tracepoint (tp_btf where the kernel has BTF for it, raw_tp otherwise;
 * user space loads whichever set the kernel takes). The user-space half is
 * extension/tracers/histTracer.ts; the layout below is what extension/tracers/histDecode.ts reads.
 * A tracer includes this once, sets `unit_ns` and calls hist_add() with a key and a duration. */
#ifndef EBPF_STUDIO_HIST_TRACER_BPF_H
#define EBPF_STUDIO_HIST_TRACER_BPF_H

#include "log2.bpf.h"
#include "hist_epoch.bpf.h"

/* Slots in log2hist.ts convention; slot 31 collects >= 2^30 units (~18 min in µs). */
#define HIST_MAX_SLOTS 32
#define HIST_COMM_LEN 16
/* The key of the one histogram of a tracer kept per nothing (user space shows -1). */
#define HIST_KEY_NONE 0xffffffffU

/* Indexes into the `counters` array map (u64 each): what was lost because a map was full. */
#define HIST_CTR_START_FULL 0 /* events lost: the start-timestamp map had no free entry */
#define HIST_CTR_HIST_FULL 1  /* events lost: the histogram map had no free entry */
#define HIST_NR_COUNTERS 2

/* Histogram map key, 8 bytes:  0 key (u32)  4 epoch (u32), the epoch last as hist_epoch.bpf.h wants. */
struct hist_key {
	__u32 key;
	__u32 epoch;
};

#define HIST_KEY_SIZE 8

/* Histogram map value, 272 bytes:  0 slots (u64[32])  256 name (char[16], NUL-terminated) */
struct hist_value {
	__u64 slots[HIST_MAX_SLOTS];
	char comm[HIST_COMM_LEN];
};

#define HIST_VALUE_SIZE 272

/* The start of an event in flight, for a tracer that times one from a hook to another (a block
 * request, a connect): when, and who started it (its name when keys are per process). */
struct hist_start {
	__u64 ts;
	__u32 tgid;
	__u32 pad;
	char comm[HIST_COMM_LEN];
};

/* Only this process (tgid); 0 = every process. The tracer applies it where it knows the process. */
const volatile __u32 target_tgid = 0;
/* What a histogram is kept per: the tracer's own values (runqlat.h's RUNQLAT_KEY_*), 0 = nothing. */
const volatile __u32 key_mode = 0;
/* Nanoseconds per histogram unit: 1000 (µs) or 1000000 (ms). */
const volatile __u64 unit_ns = 1000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, struct hist_key);
	__type(value, struct hist_value);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HIST_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Zero-filled template for new histogram entries: too big (272 bytes) to build on the stack. */
static const struct hist_value empty_hist;

static __always_inline void hist_count_loss(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
}

/* Counts one event of delta_ns under key in this epoch's histogram. Returns the entry, for the
 * caller to name it when its comm is still empty; NULL when the map was full (counted). */
static __always_inline struct hist_value *hist_add(__u32 key, __u64 delta_ns)
{
	struct hist_key k = { .key = key, .epoch = hist_epoch() };
	struct hist_value *h = hist_entry(&hists, &k, &empty_hist);

	if (!h) {
		hist_count_loss(HIST_CTR_HIST_FULL);
		return NULL;
	}
	__sync_fetch_and_add(&h->slots[log2_slot(delta_ns / unit_ns, HIST_MAX_SLOTS)], 1);
	return h;
}

/* At sched_process_exec (the new program's name is set): the calling process's histogram in this
 * epoch, if it has one, takes that name. For tracers that name a key from the task at its first
 * event: one run per exec keeps the newest name, where a name read per event would cost every
 * event. Per process the key is the tgid; per thread the exec'ing thread's tid, which exec has
 * made the tgid too. */
static __always_inline void hist_rename_on_exec(void)
{
	struct hist_key k = { .key = bpf_get_current_pid_tgid() >> 32, .epoch = hist_epoch() };
	struct hist_value *h = bpf_map_lookup_elem(&hists, &k);

	if (h)
		bpf_get_current_comm(&h->comm, sizeof(h->comm));
}

/* The twin programs of one tracepoint, named prog_btf and prog_raw, both calling
 * fn(unsigned long long *ctx): the tracepoint's arguments are ctx[0], ctx[1], ... in either kind
 * (what BPF_PROG unpacks), so one handler serves both. */
#define HIST_TWIN(tp, prog, fn)                         \
	SEC("tp_btf/" #tp)                              \
	int prog##_btf(unsigned long long *ctx)         \
	{                                               \
		fn(ctx);                                \
		return 0;                               \
	}                                               \
	SEC("raw_tp/" #tp)                              \
	int prog##_raw(unsigned long long *ctx)         \
	{                                               \
		fn(ctx);                                \
		return 0;                               \
	}

#endif
