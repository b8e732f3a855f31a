// SPDX-License-Identifier: GPL-2.0
/* TCP latency from tracepoints alone (no kprobes): connect latency, the time an active open
 * spends in SYN_SENT until ESTABLISHED (sock:inet_sock_set_state), or with `rtt` the smoothed
 * round-trip time each received segment leaves in the socket (tcp:tcp_probe, where
 * tcp_rcv_established starts); log2 histograms for everything, per remote address or per
 * process (connect only: an RTT sample arrives in softirq, owned by no process), on the
 * log2-histogram kit (hist_tracer.bpf.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "hist_tracer.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define STATE_ESTABLISHED 1
#define STATE_SYN_SENT 2

/* key_mode values, in the order of the tracer's `per` list (extension/tracers/tcplat.ts) */
#define TCPL_KEY_ADDRESS 1
#define TCPL_KEY_PROCESS 2

/* Round-trip times (tcprtt) instead of connect latency (tcpconnlat). */
const volatile bool rtt = false;

/* Connects in flight, by socket address, with who started each and when (the SYN leaves in the
 * connecting process's context, the handshake ends in softirq); removed when the socket leaves
 * SYN_SENT either way. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, struct hist_start);
} start SEC(".maps");

/* The remote IPv4 address in network order (an IPv4-mapped IPv6 one too); other IPv6 peers fold
 * into one u32 and are named "IPv6". */
static __always_inline __u32 remote_key(struct sock *sk, bool *v6)
{
	__u32 w[4];

	*v6 = false;
	if (BPF_CORE_READ(sk, __sk_common.skc_family) != AF_INET6)
		return BPF_CORE_READ(sk, __sk_common.skc_daddr);
	BPF_CORE_READ_INTO(&w, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
	if (w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0xffff))
		return w[3];
	*v6 = true;
	return w[0] ^ w[1] ^ w[2] ^ w[3];
}

static __always_inline void count(struct sock *sk, __u64 delta_ns, struct hist_start *s)
{
	static const char ipv6[] = "IPv6";
	struct hist_value *h;
	bool v6 = false;
	__u32 key = HIST_KEY_NONE;

	if (key_mode == TCPL_KEY_ADDRESS)
		key = remote_key(sk, &v6);
	else if (key_mode == TCPL_KEY_PROCESS && s)
		key = s->tgid;
	h = hist_add(key, delta_ns);
	if (!h)
		return;
	/* A process is named by its newest connect, so one that exec'd shows the program it became
	 * (a 16-byte copy per connect); an IPv4 address is named in user space from the key. */
	if (key_mode == TCPL_KEY_PROCESS && s)
		__builtin_memcpy(h->comm, s->comm, sizeof(h->comm));
	else if (v6 && !h->comm[0])
		__builtin_memcpy(h->comm, ipv6, sizeof(ipv6));
}

static __always_inline void syn_sent(__u64 sk, __u64 now)
{
	struct hist_start s = { .ts = now };

	s.tgid = bpf_get_current_pid_tgid() >> 32;
	if (target_tgid && s.tgid != target_tgid)
		return;
	if (key_mode == TCPL_KEY_PROCESS)
		bpf_get_current_comm(&s.comm, sizeof(s.comm));
	if (bpf_map_update_elem(&start, &sk, &s, BPF_ANY))
		hist_count_loss(HIST_CTR_START_FULL);
}

/* inet_sock_set_state: (const struct sock *sk, int oldstate, int newstate) */
static __always_inline void on_state(unsigned long long *ctx)
{
	/* The clock first, at both ends: what follows is not the handshake's time. */
	__u64 now = bpf_ktime_get_ns();
	struct sock *sk = (struct sock *)ctx[0];
	int old = (int)ctx[1], new = (int)ctx[2];
	__u64 key = ctx[0];
	struct hist_start *s;
	__s64 delta;

	/* Most state changes neither begin nor end a connect: they return before reading the socket. */
	if (rtt || (new != STATE_SYN_SENT && old != STATE_SYN_SENT) || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return;
	if (new == STATE_SYN_SENT) {
		syn_sent(key, now);
		return;
	}
	if (old != STATE_SYN_SENT)
		return;
	s = bpf_map_lookup_elem(&start, &key);
	if (!s)
		return;
	delta = now - s->ts;
	/* A refused or timed-out connect leaves SYN_SENT for CLOSE: no latency to count. */
	if (new == STATE_ESTABLISHED && delta >= 0)
		count(sk, delta, s);
	bpf_map_delete_elem(&start, &key);
}

/* tcp_probe: (struct sock *sk, struct sk_buff *skb); srtt_us holds 8 times the smoothed RTT. */
static __always_inline void on_probe(unsigned long long *ctx)
{
	struct tcp_sock *tp = (struct tcp_sock *)ctx[0];
	__u32 srtt8;

	if (!rtt)
		return;
	srtt8 = BPF_CORE_READ(tp, srtt_us);
	if (srtt8)
		count((struct sock *)tp, (__u64)(srtt8 >> 3) * 1000, NULL);
}

HIST_TWIN(inet_sock_set_state, tcp_state, on_state)
HIST_TWIN(tcp_probe, tcp_probe, on_probe)
