// SPDX-License-Identifier: GPL-2.0
/* Block I/O latency: the time from a request being issued to the device (or, with `queued`,
 * inserted into the I/O scheduler's queue) to its completion, in log2 histograms kept for all
 * disks, per disk or per process (the one whose context started the request) by the
 * log2-histogram kit (hist_tracer.bpf.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hist_tracer.bpf.h"
#include "cgroup_filter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* key_mode values, in the order of the tracer's `per` list (extension/tracers/biolatency.ts) */
#define BIO_KEY_DISK 1
#define BIO_KEY_PROCESS 2

/* Count from insertion into the scheduler's queue (libbpf-tools biolatency -Q), not from issue. */
const volatile bool queued = false;
/* Requests told apart by who started them (a pid, a container, per process) are judged at
 * block_io_start, in the context that made the request from a bio: the issue that starts the clock
 * may run in another task's, when a busy queue is run from a completion or a kworker. */
const volatile bool by_starter = false;

/* Start of each request in flight, by its address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, struct request *);
	__type(value, struct hist_start);
} start SEC(".maps");

/* Whether the current task is one whose requests are counted, and who it is (into s). */
static __always_inline bool current_starter(struct hist_start *s)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (target_tgid && tgid != target_tgid)
		return false;
	if (!in_target_cgroup((struct task_struct *)bpf_get_current_task()))
		return false;
	s->tgid = tgid;
	if (key_mode == BIO_KEY_PROCESS)
		bpf_get_current_comm(&s->comm, sizeof(s->comm));
	return true;
}

static __always_inline void io_start(struct request *rq, bool issue)
{
	struct hist_start s = {}, *made;
	__u64 now;

	/* Queued mode times from the insert; a queue without a scheduler has no insert, so its
	 * requests are timed from issue. */
	if (issue && queued && BPF_CORE_READ(rq, q, elevator))
		return;
	/* The clock first: what comes after is not the device's time. */
	now = bpf_ktime_get_ns();
	if (by_starter) {
		/* judged when it was made; a request no one counted made has no entry */
		made = bpf_map_lookup_elem(&start, &rq);
		if (made)
			made->ts = now;
		return;
	}
	s.ts = now;
	if (!current_starter(&s))
		return;
	if (bpf_map_update_elem(&start, &rq, &s, BPF_ANY))
		hist_count_loss(HIST_CTR_START_FULL);
}

/* block_io_start (struct request *rq): in the context that made the request (by_starter only). */
static __always_inline void on_made(unsigned long long *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	struct hist_start s = {};

	/* a request at an address reused since is judged afresh: ts 0 until it is issued */
	if (!current_starter(&s)) {
		bpf_map_delete_elem(&start, &rq);
		return;
	}
	if (bpf_map_update_elem(&start, &rq, &s, BPF_ANY))
		hist_count_loss(HIST_CTR_START_FULL);
}

/* The disk as the kernel's dev_t (major << 20 | first minor), what /sys/dev/block names. */
static __always_inline __u32 disk_key(struct gendisk *disk)
{
	return disk ? ((__u32)BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor) : 0;
}

static __always_inline void io_done(struct request *rq)
{
	__u64 now = bpf_ktime_get_ns();
	struct gendisk *disk;
	struct hist_value *h;
	struct hist_start *s;
	__s64 delta;
	__u32 key;

	s = bpf_map_lookup_elem(&start, &rq);
	if (!s)
		return;
	/* made by a counted task but ended before it was issued (never reached the device) */
	if (!s->ts) {
		bpf_map_delete_elem(&start, &rq);
		return;
	}
	delta = now - s->ts;
	/* the disk only when keys are disks: two pointer reads per I/O otherwise spent for nothing */
	disk = key_mode == BIO_KEY_DISK ? BPF_CORE_READ(rq, q, disk) : NULL;
	key = key_mode == BIO_KEY_DISK ? disk_key(disk) : key_mode == BIO_KEY_PROCESS ? s->tgid : HIST_KEY_NONE;
	h = delta >= 0 ? hist_add(key, delta) : NULL;
	/* A process is named by its newest request, so one that exec'd shows the program it became
	 * (a 16-byte copy per I/O); a disk's name does not change. */
	if (h && key_mode == BIO_KEY_PROCESS)
		__builtin_memcpy(h->comm, s->comm, sizeof(h->comm));
	else if (h && !h->comm[0] && key_mode == BIO_KEY_DISK && disk)
		BPF_CORE_READ_STR_INTO(&h->comm, disk, disk_name);
	bpf_map_delete_elem(&start, &rq);
}

/* block_rq_insert, block_rq_issue, block_rq_complete: (struct request *rq, ...) */
static __always_inline void on_insert(unsigned long long *ctx)
{
	if (queued)
		io_start((struct request *)ctx[0], false);
}

static __always_inline void on_issue(unsigned long long *ctx)
{
	io_start((struct request *)ctx[0], true);
}

static __always_inline void on_complete(unsigned long long *ctx)
{
	io_done((struct request *)ctx[0]);
}

HIST_TWIN(block_io_start, rq_start, on_made)
HIST_TWIN(block_rq_insert, rq_insert, on_insert)
HIST_TWIN(block_rq_issue, rq_issue, on_issue)
HIST_TWIN(block_rq_complete, rq_complete, on_complete)
