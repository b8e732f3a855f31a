/* The leak-tracing interposer: LD_PRELOAD'ed into a program that `memleak -- COMMAND` (or "Run
 * with Leak Tracing") starts in preload mode. It wraps the allocator functions, keeps the table
 * of outstanding allocations and their interned stacks inside the target, in a file mapped
 * MAP_SHARED (layout: leak_table.h), which the helper reads whenever it likes and after the
 * target is gone. No kernel trap per call: this is what makes launch mode cost about what
 * heaptrack costs instead of ~12 µs per malloc+free pair through uprobes.
 *
 * Table in the target vs streaming events: the table. Measured with bench/workloads/mallocfree.c
 * (ns per malloc+free pair, 2 shared vCPUs, three rounds): untraced 12-14; the wrappers alone
 * 17-20; table without unwinding 30-33 (the table costs ~12 ns); unwinding and interning
 * without the table 118-141; everything 135-185. Streaming the same events instead (a 16-byte
 * free record and an address+size+frames malloc record, one write(2) each into a pipe read by
 * `cat`) cost 1,956-3,151 ns per pair: two system calls per pair, and a reader that must keep
 * up or make the target wait (a ring in shared memory avoids the calls but must either block
 * or lose events, and with them exactness, when the reader falls behind). A table cannot
 * overflow that way: it is sized for --max-outstanding blocks (2 slots each) and counts what
 * does not fit.
 *
 * Unwinder: return-address chains with CFI, so -O2 -fomit-frame-pointer code unwinds. Full
 * malloc+free pairs on an -O2 -fomit-frame-pointer build, 6 frames deep, same run: libunwind's
 * unw_backtrace (with its x86-64 frame cache) 120-150 ns; libgcc's _Unwind_Backtrace, which
 * interprets every frame's CFI on every call, 1,640-2,230 ns. Both give correct chains
 * (test/kernel/memleakPreload.test.ts checks one reaches main through three -O2
 * -fomit-frame-pointer callers with each). So libunwind is used when libunwind.so.8 can be
 * dlopen'ed, libgcc otherwise; the header records which (leak_header.unwinder). libunwind is
 * opened at run time, not linked, so a machine without it still traces (slower) instead of the
 * program failing to start; Debian's libunwind.a is not position independent and cannot be
 * linked into this library. EBPF_STUDIO_PRELOAD_UNWINDER=libgcc forces libgcc (tests, bench).
 *
 * Rules that keep a traced program working:
 * - Recursion: dlsym() may call calloc before the real functions are known; those calls are
 *   served from a static bootstrap arena (never freed to the real allocator). Anything the
 *   tracer itself allocates (unwinder caches, dlopen) runs with the per-thread `busy` count set
 *   and goes straight through untraced.
 * - Allocations before main (other libraries' constructors) are traced: setup happens on the
 *   first call, whenever that is.
 * - Threads: 256 table regions, each with its own spinlock (an address picks its region);
 *   stack interning reads without a lock and inserts under one.
 * - fork: the child shares the MAP_SHARED table with the parent, so the child stops tracing
 *   (pthread_atfork) and its calls go straight to the allocator. Its frees of inherited blocks
 *   leave the parent's records alone.
 * - exec: LD_PRELOAD (our entry only) and our variables are removed from the environment at
 *   start, so programs the target runs are not traced, unless EBPF_STUDIO_PRELOAD_CHILDREN=1;
 *   then each traced process writes its own PID.leak (the session reports the launched one).
 * - exit: an atexit handler (registered before main, so it runs after the program's own) tells
 *   the helper through a socket it may never block on (MSG_DONTWAIT | MSG_NOSIGNAL); it then
 *   waits at most 3 s for the helper to capture the process's modules for symbolization
 *   (libraries loaded since the last capture; their files stay readable after the exit). Without a helper it does not wait at all. Frees
 *   in later destructors still reach the table, so the final report is what was outstanding
 *   when the process ended.
 * - C++: with libstdc++ on glibc, operator new calls malloc and operator delete calls free, so
 *   the bytes are already seen; new/new[] are still wrapped (forwarded to the next definition,
 *   untraced inside) so the stack starts at the line calling `new`, as in the uprobe mode.
 *   Deletes are not wrapped: they reach free().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>
#include "leak_table.h"

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- the real functions ------------------------------------------------------------------ */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void *(*real_new)(size_t);
static void *(*real_new_array)(size_t);
static void *(*real_new_nothrow)(size_t, const void *);
static void *(*real_new_array_nothrow)(size_t, const void *);
static void *(*real_new_aligned)(size_t, size_t);
static void *(*real_new_array_aligned)(size_t, size_t);
static void *(*real_new_aligned_nothrow)(size_t, size_t, const void *);
static void *(*real_new_array_aligned_nothrow)(size_t, size_t, const void *);

/* ---- state ------------------------------------------------------------------------------- */

enum { INIT_NONE, INIT_BUSY, INIT_DONE };
static int init_state;
/* tracing on: setup succeeded, not a forked child */
static int active;
static __thread int busy __attribute__((tls_model("initial-exec")));
static __thread int initializing __attribute__((tls_model("initial-exec")));

static struct leak_header *hdr;
static struct leak_slot *slots;
static uint64_t region_slots; /* per region, a power of two */
static struct leak_stack_slot *sindex;
static struct leak_stack_dir *sdir;
static uint64_t *frames;
static int notify_fd = -1;
/* --min-size / --max-size: blocks outside are not recorded (no unwinding, no table slot) */
static uint64_t min_size, max_size = UINT64_MAX;
/* --sample-rate N: every Nth allocation of a thread; --sample-bytes N: byte-based Poisson
 * sampling as in bpf/memleak.bpf.c (per-thread exponential countdown; the helper weighs each
 * recorded block by 1/(1 - exp(-size/N))) */
static uint64_t sample_rate = 1;
static double sample_bytes;
static __thread uint64_t nth __attribute__((tls_model("initial-exec")));
static __thread double countdown __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));

static size_t page_size = 4096;

/* The stack tables' sizes, the same in every table. */
#define STACK_SLOTS (1ull << 17)
#define MAX_STACKS (1ull << 16)
#define MAX_FRAMES (1ull << 22)

/* Locks live in private memory: a forked child must never see one held. */
static struct {
	int lock;
	char pad[60];
} regions[LEAK_SHARDS] __attribute__((aligned(64)));
static int stack_lock;

static uintptr_t self_lo, self_hi; /* this library's text: its frames are not the caller's */
extern char __ehdr_start[] HIDDEN;
extern char __etext[] HIDDEN;

typedef int (*unw_backtrace_fn)(void **, int);
static unw_backtrace_fn unw_bt;

/* ---- bootstrap arena (dlsym during start-up) ---------------------------------------------- */

static char arena[64 * 1024] __attribute__((aligned(64)));
static size_t arena_used;

static void *arena_alloc(size_t n)
{
	size_t at = (arena_used + 15) & ~(size_t)15;
	if (at + n + 16 > sizeof arena)
		return NULL;
	arena_used = at + 16 + n;
	*(size_t *)(arena + at) = n;
	return arena + at + 16;
}

static bool in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

/* ---- small helpers (no libc allocation) -------------------------------------------------- */

static void spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static void spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t now_coarse(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Injected into a running process (ebpf-studio-inject), the settings come from a file the
 * tracer wrote, not from the environment the process started with. */
static bool injected;
static char conf_text[4096]; /* NAME=VALUE entries, each ending in a NUL */
static size_t conf_len;

static const char *conf(const char *name)
{
	if (!injected)
		return getenv(name);
	size_t n = strlen(name);
	for (size_t at = 0; at < conf_len; at += strlen(conf_text + at) + 1)
		if (strncmp(conf_text + at, name, n) == 0 && conf_text[at + n] == '=')
			return conf_text + at + n + 1;
	return NULL;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = conf(name);
	uint64_t v = 0;
	if (!s || !*s)
		return dflt;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	return v ? v : dflt;
}

static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* ---- the outstanding table --------------------------------------------------------------- */

/* An address's region (high bits of its hash) and home slot in it (low bits). Linear probing
 * inside the region; deletion shifts back, so there are no tombstones. */
static void locate(uint64_t addr, unsigned *region, uint64_t *home)
{
	uint64_t h = mix(addr);
	*region = (unsigned)(h >> 56) % LEAK_SHARDS;
	*home = h & (region_slots - 1);
}

static struct leak_slot *region_base(unsigned r)
{
	return slots + (uint64_t)r * region_slots;
}

static void table_insert(uint64_t addr, uint64_t size, int64_t stack_id)
{
	unsigned r;
	uint64_t i, n;
	struct leak_slot *base;

	locate(addr, &r, &i);
	base = region_base(r);
	spin_lock(&regions[r].lock);
	for (n = 0; n < region_slots; n++, i = (i + 1) & (region_slots - 1)) {
		struct leak_slot *s = &base[i];
		if (s->addr == 0 || s->addr == addr) {
			/* the same address again without a free we saw: the old record is stale */
			s->size = size;
			s->timestamp_ns = now_coarse();
			s->stack_id = stack_id;
			__atomic_store_n(&s->addr, addr, __ATOMIC_RELEASE);
			spin_unlock(&regions[r].lock);
			__atomic_fetch_add(&hdr->allocs, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	spin_unlock(&regions[r].lock);
	__atomic_fetch_add(&hdr->table_full, 1, __ATOMIC_RELAXED);
}

/* Removes addr's record; copies it to *out when given. True when there was one. */
static bool table_remove(uint64_t addr, struct leak_slot *out)
{
	unsigned r;
	uint64_t i, n, mask = region_slots - 1;
	struct leak_slot *base;

	locate(addr, &r, &i);
	base = region_base(r);
	spin_lock(&regions[r].lock);
	for (n = 0; n < region_slots; n++, i = (i + 1) & mask) {
		if (base[i].addr == addr)
			break;
		if (base[i].addr == 0) {
			spin_unlock(&regions[r].lock);
			return false;
		}
	}
	if (n == region_slots) {
		spin_unlock(&regions[r].lock);
		return false;
	}
	if (out)
		*out = base[i];
	/* backward-shift deletion: move later entries of the run into the hole when their home
	 * slot is not between the hole and themselves */
	for (uint64_t j = (i + 1) & mask;; j = (j + 1) & mask) {
		uint64_t a = base[j].addr, home;
		unsigned rr;
		if (a == 0)
			break;
		locate(a, &rr, &home);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			base[i] = base[j];
			i = j;
		}
	}
	__atomic_store_n(&base[i].addr, 0, __ATOMIC_RELEASE);
	spin_unlock(&regions[r].lock);
	__atomic_fetch_add(&hdr->frees, 1, __ATOMIC_RELAXED);
	return true;
}

/* ---- stacks ------------------------------------------------------------------------------ */

struct gcc_trace {
	void **buf;
	int n, max;
};

static _Unwind_Reason_Code gcc_step(struct _Unwind_Context *ctx, void *arg)
{
	struct gcc_trace *t = arg;
	if (t->n >= t->max)
		return _URC_END_OF_STACK;
	t->buf[t->n++] = (void *)_Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

static int unwind(void **buf, int max)
{
	if (LIKELY(unw_bt != NULL))
		return unw_bt(buf, max);
	struct gcc_trace t = { buf, 0, max };
	_Unwind_Backtrace(gcc_step, &t);
	return t.n;
}

static int64_t intern(uint64_t *pcs, uint32_t depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
	/* sizes are constants, never read from the table: a thread still in here after the table was
	 * retired (zero pages) must stay inside it */
	uint64_t mask = STACK_SLOTS - 1, i;

	for (uint32_t k = 0; k < depth; k++)
		h = mix(h ^ pcs[k]) + k;
	h |= 1;
	for (int locked = 0; locked < 2; locked++) {
		uint64_t n;
		if (locked)
			spin_lock(&stack_lock);
		for (i = h & mask, n = 0; n <= mask; n++, i = (i + 1) & mask) {
			struct leak_stack_slot *s = &sindex[i];
			uint32_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
			if (id == 0)
				break;
			if (s->hash == h && sdir[id - 1].depth == depth && memcmp(&frames[sdir[id - 1].first], pcs, depth * 8) == 0) {
				if (locked)
					spin_unlock(&stack_lock);
				return id - 1;
			}
		}
		if (!locked)
			continue;
		/* still absent, and we hold the lock: append */
		if (n > mask || hdr->stacks_used >= MAX_STACKS || hdr->frames_used + depth > MAX_FRAMES) {
			spin_unlock(&stack_lock);
			return -1;
		}
		uint64_t id = hdr->stacks_used, first = hdr->frames_used;
		memcpy(&frames[first], pcs, depth * 8);
		sdir[id].first = (uint32_t)first;
		sdir[id].depth = depth;
		sindex[i].hash = h;
		__atomic_store_n(&hdr->frames_used, first + depth, __ATOMIC_RELEASE);
		__atomic_store_n(&hdr->stacks_used, id + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&sindex[i].id, (uint32_t)id + 1, __ATOMIC_RELEASE);
		spin_unlock(&stack_lock);
		return (int64_t)id;
	}
	return -1;
}

/* The allocating stack: return addresses, leaf first, without this library's own frames. */
static __attribute__((noinline)) int64_t current_stack(void)
{
	void *buf[LEAK_MAX_DEPTH + 8];
	int n = unwind(buf, LEAK_MAX_DEPTH + 8), k = 0;

	while (k < n && (uintptr_t)buf[k] >= self_lo && (uintptr_t)buf[k] < self_hi)
		k++;
	if (n - k > LEAK_MAX_DEPTH)
		n = k + LEAK_MAX_DEPTH;
	if (n <= k) {
		__atomic_fetch_add(&hdr->stack_lost, 1, __ATOMIC_RELAXED);
		return -1;
	}
	int64_t id = intern((uint64_t *)&buf[k], (uint32_t)(n - k));
	if (id < 0)
		__atomic_fetch_add(&hdr->stack_lost, 1, __ATOMIC_RELAXED);
	return id;
}

/* Bytes to the next sample point: N * -ln(U), U uniform in (0, 1]. */
static double sample_gap(void)
{
	if (!rng)
		rng = mix((uint64_t)(uintptr_t)&rng ^ now_coarse()) | 1;
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return -sample_bytes * log((double)((rng >> 11) + 1) / 9007199254740992.0);
}

static bool sampled(size_t size)
{
	if (sample_rate > 1 && ++nth % sample_rate != 0)
		return false;
	if (sample_bytes <= 0)
		return true;
	if (countdown <= 0 && !rng)
		countdown = sample_gap(); /* a thread's first call */
	countdown -= (double)size;
	if (countdown > 0)
		return false;
	countdown = sample_gap();
	return true;
}

static void rescan_modules(void);

static void record(void *p, size_t size)
{
	if (!p || size < min_size || size > max_size || !sampled(size))
		return;
	rescan_modules();
	table_insert((uint64_t)p, size, current_stack());
}

/* ---- setup ------------------------------------------------------------------------------- */

static void resolve(void)
{
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_reallocarray = dlsym(RTLD_NEXT, "reallocarray");
	real_free = dlsym(RTLD_NEXT, "free");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	real_valloc = dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
}

/* operator new lives in libstdc++, which may be mapped later than the first malloc */
static void resolve_cxx(void)
{
	real_new = dlsym(RTLD_NEXT, "_Znwm");
	real_new_array = dlsym(RTLD_NEXT, "_Znam");
	real_new_nothrow = dlsym(RTLD_NEXT, "_ZnwmRKSt9nothrow_t");
	real_new_array_nothrow = dlsym(RTLD_NEXT, "_ZnamRKSt9nothrow_t");
	real_new_aligned = dlsym(RTLD_NEXT, "_ZnwmSt11align_val_t");
	real_new_array_aligned = dlsym(RTLD_NEXT, "_ZnamSt11align_val_t");
	real_new_aligned_nothrow = dlsym(RTLD_NEXT, "_ZnwmSt11align_val_tRKSt9nothrow_t");
	real_new_array_aligned_nothrow = dlsym(RTLD_NEXT, "_ZnamSt11align_val_tRKSt9nothrow_t");
}

static void child_after_fork(void)
{
	active = 0;
	notify_fd = -1; /* the parent's channel; the child says nothing on it */
}

static bool notify(char what)
{
	return notify_fd >= 0 && send(notify_fd, &what, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
}

static void keep_watch_fd(int fd);
static size_t table_len; /* of the table mapped at hdr; 0 once retired (inject mode) */
static uint64_t retired_region_slots, retired_at_ns; /* the last retired table's (retire_table) */
#define RETIRE_NS 10000000000ull
static uint64_t now_ns(void);

/* Files in the session's folder. That folder belongs to the user the program runs as, who may
 * plant anything there (a link to a file of root's, waiting for a process that became root by
 * exec'ing a setuid program, or for a root daemon with one thread switched to that user). So a
 * name is never followed: the folder is opened without following a link and must belong to the
 * uid we run as, writable by no one else, and each file in it is opened relative to it without
 * following a link and checked for what it must be before it is used. */
static int open_session_dir(const char *dir)
{
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* A regular file of the uid we run as with one link (no hard link to someone else's file); with
 * `empty`, nothing written in it yet. */
static bool session_file_ok(int fd, bool empty)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 && (!empty || st.st_size == 0);
}

/* Opens `name` in the session folder `dir`: made here, exclusively (preload mode: the program
 * makes its own table), or the empty file the tracer made for us (inject mode). -1 if refused. */
static int open_session_file(const char *dir, const char *name, int flags, bool create)
{
	int dfd = open_session_dir(dir);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
	close(dfd);
	if (fd >= 0 && !session_file_ok(fd, (flags & O_ACCMODE) != O_RDONLY)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool open_table(void)
{
	const char *dir = conf("EBPF_STUDIO_PRELOAD_DIR");
	char name[32], *p;
	uint64_t max_out = env_u64("EBPF_STUDIO_PRELOAD_MAX_OUTSTANDING", 1000000);
	uint64_t per = pow2_at_least((max_out * 2 + LEAK_SHARDS - 1) / LEAK_SHARDS);
	uint64_t nslots, stack_slots = STACK_SLOTS, max_stacks = MAX_STACKS, max_frames = MAX_FRAMES;
	uint64_t off, size;
	int fd;

	if (!dir || !*dir)
		return false;
	if (per < 16)
		per = 16;
	/* Injected again soon after a stop: a thread may still be inside a wrapper of the last
	 * session, with that table's slots (retire_table), so the regions do not grow past it for
	 * as long as its placeholder is kept. */
	if (injected && retired_region_slots && per > retired_region_slots && now_ns() - retired_at_ns < RETIRE_NS)
		per = retired_region_slots;
	region_slots = per;
	nslots = per * LEAK_SHARDS;
	p = put_u64(name, (uint64_t)getpid());
	memcpy(p, ".leak", 6);
	/* injected: the tracer made the file (as our user) and holds it; launched: ours to make */
	fd = open_session_file(dir, name, O_RDWR, !injected);
	if (fd < 0)
		return false;
	off = sizeof(struct leak_header);
	uint64_t slots_off = off;
	off += nslots * sizeof(struct leak_slot);
	uint64_t index_off = off;
	off += stack_slots * sizeof(struct leak_stack_slot);
	uint64_t dir_off = off;
	off += max_stacks * sizeof(struct leak_stack_dir);
	uint64_t frames_off = off;
	off += max_frames * 8;
	size = off;
	/* sparse: only the pages that are written take memory */
	if (ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		return false;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return false;
	}
	table_len = size;
	keep_watch_fd(fd);
	hdr = m;
	slots = (struct leak_slot *)((char *)m + slots_off);
	sindex = (struct leak_stack_slot *)((char *)m + index_off);
	sdir = (struct leak_stack_dir *)((char *)m + dir_off);
	frames = (uint64_t *)((char *)m + frames_off);
	hdr->version = LEAK_VERSION;
	hdr->pid = (uint32_t)getpid();
	hdr->slots = nslots;
	hdr->slots_off = slots_off;
	hdr->stack_slots = stack_slots;
	hdr->index_off = index_off;
	hdr->max_stacks = max_stacks;
	hdr->dir_off = dir_off;
	hdr->max_frames = max_frames;
	hdr->frames_off = frames_off;
	{
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		hdr->started_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	__atomic_store_n(&hdr->magic, LEAK_MAGIC, __ATOMIC_RELEASE);
	return true;
}

static void setup(void)
{
	initializing = 1;
	resolve();
	initializing = 0;
	if (!real_malloc || !real_free || !real_calloc || !real_realloc)
		abort(); /* no allocator to forward to: nothing sensible can run */
	busy++;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	/* our text, from the ELF header to the end of .text (symbols the linker defines) */
	self_lo = (uintptr_t)__ehdr_start;
	self_hi = (uintptr_t)__etext;
	min_size = env_u64("EBPF_STUDIO_PRELOAD_MIN_SIZE", 0);
	max_size = env_u64("EBPF_STUDIO_PRELOAD_MAX_SIZE", UINT64_MAX);
	sample_rate = env_u64("EBPF_STUDIO_PRELOAD_SAMPLE_RATE", 1);
	sample_bytes = (double)env_u64("EBPF_STUDIO_PRELOAD_SAMPLE_BYTES", 0);
	if (open_table())
		active = 1;
	busy--;
}

static inline bool ready(void)
{
	int s = __atomic_load_n(&init_state, __ATOMIC_ACQUIRE);
	if (LIKELY(s == INIT_DONE))
		return true;
	if (initializing)
		return false;
	if (s == INIT_NONE && __atomic_compare_exchange_n(&init_state, &s, INIT_BUSY, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		setup();
		__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
		return true;
	}
	while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
		sched_yield();
	return true;
}

/* Removes our entry from LD_PRELOAD (in place: the strings are the process's own) and our
 * variables, so programs the target execs run untraced. */
static void scrub_environment(void)
{
	extern char **environ;
	char **e, *v;
	static const char *ours[] = { "EBPF_STUDIO_PRELOAD_DIR=", "EBPF_STUDIO_PRELOAD_FD=", "EBPF_STUDIO_PRELOAD_MAX_OUTSTANDING=", "EBPF_STUDIO_PRELOAD_MIN_SIZE=", "EBPF_STUDIO_PRELOAD_MAX_SIZE=",
				      "EBPF_STUDIO_PRELOAD_SAMPLE_RATE=", "EBPF_STUDIO_PRELOAD_SAMPLE_BYTES=", NULL };

	for (e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			continue;
		/* entries are separated by ':' or ' '; drop those naming this library */
		char *src = *e + 11, *dst = src;
		v = src;
		while (*src) {
			char *start = src;
			while (*src && *src != ':' && *src != ' ')
				src++;
			size_t len = (size_t)(src - start);
			bool mine = len >= 25 && memmem(start, len, "libebpf-studio-preload.so", 25) != NULL;
			if (!mine && len) {
				if (dst != v)
					*dst++ = ':';
				memmove(dst, start, len);
				dst += len;
			}
			while (*src == ':' || *src == ' ')
				src++;
		}
		*dst = 0;
	}
	if (getenv("LD_PRELOAD") && !*getenv("LD_PRELOAD"))
		unsetenv("LD_PRELOAD");
	for (int i = 0; ours[i]; i++) {
		char name[64];
		size_t l = strlen(ours[i]) - 1;
		memcpy(name, ours[i], l);
		name[l] = 0;
		unsetenv(name);
	}
}

static void at_exit(void)
{
	if (!active || !hdr)
		return;
	busy++;
	__atomic_store_n(&hdr->state, LEAK_STATE_EXITING, __ATOMIC_RELEASE);
	if (notify('x')) {
		/* bounded: the helper captures the modules in milliseconds; a helper that is gone must
		 * never keep the program from exiting */
		for (int i = 0; i < 30000 && __atomic_load_n(&hdr->state, __ATOMIC_ACQUIRE) != LEAK_STATE_RELEASED; i++) {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
	busy--;
}

static void open_unwinder(void)
{
	void *h;
	const char *u = conf("EBPF_STUDIO_PRELOAD_UNWINDER"); /* "libgcc": for tests and the bench */
	h = u && strcmp(u, "libgcc") == 0 ? NULL : dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h)
		unw_bt = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
	hdr->unwinder = unw_bt ? 1 : 2;
}

__attribute__((constructor(101))) static void preload_start(void)
{
	/* Loaded by dlopen into a running process (ebpf-studio-inject): nothing happens until
	 * ebpf_studio_inject_start; the wrappers are not reached before it patches the GOTs. */
	if (!getenv("EBPF_STUDIO_PRELOAD_DIR"))
		return;
	ready();
	if (!active)
		return;
	busy++;
	/* libunwind: opened, not linked (see the header comment) */
	open_unwinder();
	resolve_cxx();
	{
		uint64_t fd = env_u64("EBPF_STUDIO_PRELOAD_FD", 0);
		if (fd > 2) {
			/* moved out of the program's way, closed on exec */
			int nfd = fcntl((int)fd, F_DUPFD_CLOEXEC, 1000);
			if (nfd >= 0) {
				close((int)fd);
				notify_fd = nfd;
			}
		}
	}
	if (!getenv("EBPF_STUDIO_PRELOAD_CHILDREN"))
		scrub_environment();
	pthread_atfork(NULL, NULL, child_after_fork);
	atexit(at_exit);
	notify('s');
	busy--;
}

/* ---- the wrappers ------------------------------------------------------------------------ */

/* Entered by a traced call: false when the call must go straight through. */
#define TRACING() (LIKELY(ready()) && LIKELY(active) && LIKELY(busy == 0))

static void leave_busy(int *b)
{
	(void)b;
	busy--;
}
#define ENTER() int _b __attribute__((cleanup(leave_busy))) = (busy++, 0)

EXPORT void *malloc(size_t size)
{
	if (UNLIKELY(!ready()))
		return arena_alloc(size);
	if (!active || busy)
		return real_malloc(size);
	ENTER();
	void *p = real_malloc(size);
	record(p, size);
	return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (UNLIKELY(!ready())) {
		/* the arena is zeroed static memory, used once */
		size_t total;
		if (__builtin_mul_overflow(n, size, &total))
			return NULL;
		return arena_alloc(total);
	}
	if (!active || busy)
		return real_calloc(n, size);
	ENTER();
	void *p = real_calloc(n, size);
	record(p, n * size);
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (TRACING()) {
		ENTER();
		table_remove((uint64_t)p, NULL);
		real_free(p);
		return;
	}
	if (UNLIKELY(!real_free))
		return;
	real_free(p);
}

/* The old block's record goes before the call (so another thread cannot get the address back
 * and record it first), and comes back if the call fails. */
static void *realloc_traced(void *old, size_t size, size_t nmemb, bool array)
{
	struct leak_slot was;
	bool had = old && table_remove((uint64_t)old, &was);
	void *p = array ? real_reallocarray(old, nmemb, size) : real_realloc(old, size);
	size_t total = array ? nmemb * size : size;

	if (p)
		record(p, total);
	else if (had && total != 0)
		table_insert(was.addr, was.size, was.stack_id); /* failed: the old block lives on */
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	if (UNLIKELY(!ready()) || in_arena(old)) {
		void *p;
		if (!in_arena(old))
			return arena_alloc(size);
		/* a bootstrap block grows into a real one */
		p = real_malloc ? malloc(size) : arena_alloc(size);
		if (p) {
			size_t was = *(size_t *)((char *)old - 16);
			memcpy(p, old, was < size ? was : size);
		}
		return p;
	}
	if (!active || busy)
		return real_realloc(old, size);
	ENTER();
	return realloc_traced(old, size, 1, false);
}

EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(nmemb, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (UNLIKELY(!ready()) || in_arena(old) || !real_reallocarray)
		return realloc(old, total);
	if (!active || busy)
		return real_reallocarray(old, nmemb, size);
	ENTER();
	return realloc_traced(old, size, nmemb, true);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (UNLIKELY(!ready()))
		return ENOMEM;
	if (!active || busy)
		return real_posix_memalign(out, align, size);
	ENTER();
	int r = real_posix_memalign(out, align, size);
	if (r == 0)
		record(*out, size);
	return r;
}

#define ALIGNED_WRAPPER(name)                                   \
	EXPORT void *name(size_t align, size_t size)            \
	{                                                       \
		if (UNLIKELY(!ready()))                         \
			return NULL;                            \
		if (!active || busy)                            \
			return real_##name(align, size);        \
		ENTER();                                        \
		void *p = real_##name(align, size);             \
		record(p, size);                                \
		return p;                                       \
	}
ALIGNED_WRAPPER(aligned_alloc)
ALIGNED_WRAPPER(memalign)

EXPORT void *valloc(size_t size)
{
	if (UNLIKELY(!ready()))
		return NULL;
	if (!active || busy)
		return real_valloc(size);
	ENTER();
	void *p = real_valloc(size);
	record(p, size);
	return p;
}

/* pvalloc rounds up to whole pages: the block really occupies that much (as the uprobe mode) */
EXPORT void *pvalloc(size_t size)
{
	if (UNLIKELY(!ready()))
		return NULL;
	if (!active || busy)
		return real_pvalloc(size);
	ENTER();
	void *p = real_pvalloc(size);
	record(p, size ? (size + page_size - 1) & ~(page_size - 1) : page_size);
	return p;
}

/* C++ operator new family: forwarded to the next definition (libstdc++, or an allocator
 * library's own), whose inner malloc goes through untraced; recorded here so the first frame
 * is the caller of `new`. A throwing new unwinds through this frame: built with -fexceptions,
 * the cleanup puts `busy` back. */
#define NEW_WRAPPER(sym, fn, params, args, size)                                   \
	EXPORT void *sym params                                                     \
	{                                                                           \
		if (UNLIKELY(!fn)) {                                                \
			resolve_cxx();                                              \
			if (!fn)                                                    \
				abort();                                            \
		}                                                                   \
		if (!TRACING())                                                     \
			return fn args;                                             \
		ENTER();                                                            \
		void *p = fn args;                                                  \
		record(p, size);                                                    \
		return p;                                                           \
	}
NEW_WRAPPER(_Znwm, real_new, (size_t n), (n), n)
NEW_WRAPPER(_Znam, real_new_array, (size_t n), (n), n)
NEW_WRAPPER(_ZnwmRKSt9nothrow_t, real_new_nothrow, (size_t n, const void *t), (n, t), n)
NEW_WRAPPER(_ZnamRKSt9nothrow_t, real_new_array_nothrow, (size_t n, const void *t), (n, t), n)
NEW_WRAPPER(_ZnwmSt11align_val_t, real_new_aligned, (size_t n, size_t a), (n, a), n)
NEW_WRAPPER(_ZnamSt11align_val_t, real_new_array_aligned, (size_t n, size_t a), (n, a), n)
NEW_WRAPPER(_ZnwmSt11align_val_tRKSt9nothrow_t, real_new_aligned_nothrow, (size_t n, size_t a, const void *t), (n, a, t), n)
NEW_WRAPPER(_ZnamSt11align_val_tRKSt9nothrow_t, real_new_array_aligned_nothrow, (size_t n, size_t a, const void *t), (n, a, t), n)

/* ---- injected into a running process ------------------------------------------------------
 *
 * ebpf-studio-inject dlopens this library into a running process, then calls
 * ebpf_studio_inject_start(config). A dlopen'ed library interposes nothing by name: calls already
 * bound to the C library stay bound. So the start rewrites, in every loaded module, the GOT
 * entries (JUMP_SLOT and GLOB_DAT relocations) of the malloc family and C++ operator new to the
 * wrappers above, after saving what they held; ebpf_studio_inject_stop() writes the saved values
 * back and leaves the library idle (it is never unloaded: a thread may still be inside a wrapper).
 * Modules loaded later are found by the loader's load counter (dlpi_adds), checked at most every
 * 100 ms from recorded allocations, and patched the same way. Blocks allocated before the start
 * are unknown: their frees find no record and go straight to the allocator. A module loaded
 * while nothing allocates is patched with the next recorded allocations (one in 64 per thread
 * reads the clock): allocations a new module makes in its first ~100 ms can be missed. */

#include <link.h>

struct got_patch {
	uint64_t *slot;
	uint64_t old;
	bool relro;
};
static struct got_patch patches[16384];
static unsigned npatches;
static int patch_lock;
static uintptr_t self_base;
static unsigned long long seen_adds;
static uint64_t next_rescan_ns;

/* Our wrappers' own addresses. Inside this library a plain `malloc` names the global scope's
 * definition (the C library's, once dlopen'ed), so the GOT entries get hidden aliases, which
 * always mean the functions defined here. */
#define OWN(fn) extern __typeof__(fn) own_##fn __attribute__((alias(#fn), copy(fn), visibility("hidden")));
OWN(malloc)
OWN(calloc)
OWN(realloc)
OWN(reallocarray)
OWN(free)
OWN(posix_memalign)
OWN(aligned_alloc)
OWN(memalign)
OWN(valloc)
OWN(pvalloc)
OWN(_Znwm)
OWN(_Znam)
OWN(_ZnwmRKSt9nothrow_t)
OWN(_ZnamRKSt9nothrow_t)
OWN(_ZnwmSt11align_val_t)
OWN(_ZnamSt11align_val_t)
OWN(_ZnwmSt11align_val_tRKSt9nothrow_t)
OWN(_ZnamSt11align_val_tRKSt9nothrow_t)

static void *wrapper_of(const char *name)
{
#define W(fn) { #fn, (void *)own_##fn }
	static const struct {
		const char *name;
		void *fn;
	} table[] = {
		W(malloc), W(calloc), W(realloc), W(reallocarray), W(free), W(posix_memalign), W(aligned_alloc), W(memalign), W(valloc), W(pvalloc),
		W(_Znwm), W(_Znam), W(_ZnwmRKSt9nothrow_t), W(_ZnamRKSt9nothrow_t), W(_ZnwmSt11align_val_t), W(_ZnamSt11align_val_t),
		W(_ZnwmSt11align_val_tRKSt9nothrow_t), W(_ZnamSt11align_val_tRKSt9nothrow_t),
	};
#undef W
	if (name[0] != 'm' && name[0] != 'c' && name[0] != 'r' && name[0] != 'f' && name[0] != 'p' && name[0] != 'a' && name[0] != 'v' && name[0] != '_')
		return NULL;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].name, name) == 0)
			return table[i].fn;
	return NULL;
}

static void write_slot(uint64_t *slot, uint64_t value, uintptr_t relro_lo, uintptr_t relro_hi)
{
	if ((uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi) {
		/* RELRO: read-only after the loader's relocations; writable just for this store */
		uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(page_size - 1);
		if (mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) != 0)
			return;
		__atomic_store_n(slot, value, __ATOMIC_RELEASE);
		mprotect((void *)page, page_size, PROT_READ);
		return;
	}
	__atomic_store_n(slot, value, __ATOMIC_RELEASE);
}

static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	/* the loader relocates most d_ptr entries in place; a small value is still an offset */
	return v < base ? v + base : v;
}

static void patch_relocs(uintptr_t base, const Elf64_Rela *rel, size_t bytes, const Elf64_Sym *symtab, const char *strtab, uintptr_t relro_lo, uintptr_t relro_hi)
{
	for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
		unsigned type = ELF64_R_TYPE(rel[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		const char *name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
		void *w = wrapper_of(name);
		if (!w)
			continue;
		uint64_t *slot = (uint64_t *)(base + rel[i].r_offset);
		uint64_t was = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (was == (uint64_t)(uintptr_t)w || npatches >= sizeof patches / sizeof patches[0])
			continue;
		patches[npatches].slot = slot;
		patches[npatches].old = was;
		patches[npatches].relro = (uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi;
		npatches++;
		write_slot(slot, (uint64_t)(uintptr_t)w, relro_lo, relro_hi);
	}
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	seen_adds = info->dlpi_adds;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (info->dlpi_addr == self_base || strstr(name, "linux-vdso") || strstr(name, "/ld-linux"))
		return 0;
	const Elf64_Dyn *dyn = NULL;
	uintptr_t base = info->dlpi_addr, relro_lo = 0, relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(base + info->dlpi_phdr[i].p_vaddr);
		else if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			relro_lo = base + info->dlpi_phdr[i].p_vaddr;
			relro_hi = relro_lo + info->dlpi_phdr[i].p_memsz;
		}
	}
	if (!dyn)
		return 0;
	const Elf64_Sym *symtab = NULL;
	const char *strtab = NULL;
	const Elf64_Rela *jmprel = NULL, *rela = NULL;
	size_t jmprel_sz = 0, rela_sz = 0;
	long pltrel = DT_RELA;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const Elf64_Sym *)dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const Elf64_Rela *)dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmprel_sz = dyn->d_un.d_val; break;
		case DT_RELA: rela = (const Elf64_Rela *)dyn_ptr(base, dyn->d_un.d_ptr); break;
		case DT_RELASZ: rela_sz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab || pltrel != DT_RELA)
		return 0;
	patch_relocs(base, jmprel, jmprel_sz, symtab, strtab, relro_lo, relro_hi);
	patch_relocs(base, rela, rela_sz, symtab, strtab, relro_lo, relro_hi);
	return 0;
}

static void patch_all(void)
{
	spin_lock(&patch_lock);
	busy++;
	dl_iterate_phdr(patch_module, NULL);
	busy--;
	spin_unlock(&patch_lock);
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* The tracer's liveness. The tracer holds a shared flock on the table file for as long as it
 * runs (it took it before the start); the kernel drops that lock when the tracer's last copy of
 * the file is closed, which SIGKILL does too. So the library probes it at the rescan point: an
 * exclusive lock that can be taken means nobody reads the table any more, and the entries go back
 * as ebpf_studio_inject_stop would put them. A flock needs no pid, clock or path, so it works
 * from inside another pid or mount namespace (a container) as well, and a tracer that is merely
 * slow (a long symbolization, a loaded machine) never looks gone. The probe fd is moved high,
 * and checked to be still the table's file before each probe: a program that closes fds it did
 * not open must never have us lock one of its own files. */
static int watch_fd = -1;
static dev_t watch_dev;
static ino_t watch_ino;
static int watch_lock; /* one thread at a time probes or replaces watch_fd */

static void keep_watch_fd_locked(int fd);

static void keep_watch_fd(int fd)
{
	spin_lock(&watch_lock);
	keep_watch_fd_locked(fd);
	spin_unlock(&watch_lock);
}

static void keep_watch_fd_locked(int fd)
{
	struct stat st;
	/* an earlier attach's probe fd, if it is still that file */
	if (watch_fd >= 0 && fstat(watch_fd, &st) == 0 && st.st_dev == watch_dev && st.st_ino == watch_ino)
		close(watch_fd);
	watch_fd = -1;
	const char *w = conf("EBPF_STUDIO_PRELOAD_WATCH");
	if (fd < 0)
		return; /* only the earlier one dropped */
	if (!injected || !w || strcmp(w, "1") != 0 || fstat(fd, &st) != 0) {
		close(fd);
		return;
	}
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	watch_dev = st.st_dev;
	watch_ino = st.st_ino;
	watch_fd = fd;
}

static int restore_entries(void);

/* True when the tracer is gone (its lock released); then the entries are back and the library idle. */
static bool tracer_gone(void)
{
	struct stat st;
	bool gone = false;
	/* one thread probes; the others go on */
	if (watch_fd < 0 || __atomic_exchange_n(&watch_lock, 1, __ATOMIC_ACQUIRE))
		return false;
	if (watch_fd < 0) {
		/* another thread found it gone meanwhile */
	} else if (fstat(watch_fd, &st) != 0 || st.st_dev != watch_dev || st.st_ino != watch_ino) {
		watch_fd = -1; /* closed by the program, or the number reused: never touched again */
	} else if (flock(watch_fd, LOCK_EX | LOCK_NB) == 0) {
		/* taken: the tracer's shared lock is gone */
		flock(watch_fd, LOCK_UN);
		close(watch_fd);
		watch_fd = -1;
		restore_entries(); /* and the table is released: nobody will read it */
		gone = true;
	}
	__atomic_store_n(&watch_lock, 0, __ATOMIC_RELEASE);
	return gone;
}

/* Called from recorded allocations: patches modules loaded since the last pass, and notices a
 * tracer that is gone. */
static void rescan_modules(void)
{
	/* the clock is read once per 64 recorded allocations of a thread, not on every one */
	static __thread unsigned tick __attribute__((tls_model("initial-exec")));
	if (LIKELY(!injected) || LIKELY(++tick & 63))
		return;
	uint64_t now = now_coarse();
	if (now < __atomic_load_n(&next_rescan_ns, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&next_rescan_ns, now + 100000000ull, __ATOMIC_RELAXED);
	if (tracer_gone())
		return;
	unsigned long long adds = 0;
	busy++;
	dl_iterate_phdr(count_adds, &adds);
	busy--;
	if (adds != seen_adds && __atomic_load_n(&active, __ATOMIC_ACQUIRE))
		patch_all();
}

/* Reads the tracer's settings (KEY=VALUE lines, the names of the launch environment), from a
 * file of ours in a folder of ours (open_session_file). */
static bool read_conf(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path || (size_t)(slash - path) >= sizeof dir || !slash[1])
		return false;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	int fd = open_session_file(dir, slash + 1, O_RDONLY, false);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, conf_text, sizeof conf_text - 1);
	close(fd);
	if (n <= 0)
		return false;
	conf_text[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (conf_text[i] == '\n')
			conf_text[i] = 0;
	conf_len = (size_t)n;
	return true;
}

/* The table, once the session is over (stop, or the tracer gone). The tracer reads it through
 * its own fd, so the mapping here only costs the process memory. But a thread may still be inside
 * a wrapper that passed its `active` check before the stop, and write into it at any time after:
 * a thread preempted there on a loaded machine can stay for longer than a whole detach and
 * re-attach. So the table is never simply unmapped: its range is replaced, in one mmap, by fresh anonymous pages (the file's
 * pages are released, a late write lands in zeroes nobody reads), and that placeholder is
 * unmapped only at a later start at least 10 s after. The pointers are never NULL in between:
 * they go from the old range to the new table. */
static struct {
	void *at;
	size_t len;
	uint64_t since_ns;
} retired[64];
static unsigned nretired;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void retire_table(void)
{
	if (!hdr || !table_len)
		return;
	uint64_t now = now_ns();
	unsigned kept = 0;
	for (unsigned i = 0; i < nretired; i++) {
		if (now - retired[i].since_ns >= RETIRE_NS)
			munmap(retired[i].at, retired[i].len);
		else
			retired[kept++] = retired[i];
	}
	nretired = kept;
	size_t len = table_len;
	table_len = 0;
	retired_region_slots = region_slots;
	retired_at_ns = now;
	if (mmap(hdr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		return; /* the old table stays as it is: mapped, only not released */
	/* more than 64 attaches within 10 s: the oldest placeholder stays, address space only */
	if (nretired < sizeof retired / sizeof retired[0])
		retired[nretired++] = (typeof(retired[0])){ hdr, len, now };
}

/* Results of ebpf_studio_inject_start: 0 tracing; others name what failed. */
enum { INJECT_OK = 0, INJECT_NO_CONFIG = 2, INJECT_NO_ALLOCATOR = 3, INJECT_NO_TABLE = 4, INJECT_LAUNCHED = 5 };

EXPORT int ebpf_studio_inject_start(const char *config_path)
{
	Dl_info self;

	if (getenv("EBPF_STUDIO_PRELOAD_DIR"))
		return INJECT_LAUNCHED; /* already traced from its start by the preload mode */
	busy++;
	injected = true;
	if (!read_conf(config_path)) {
		busy--;
		return INJECT_NO_CONFIG;
	}
	/* The definitions every module is bound to: the global scope's (the program's own, an
	 * allocator library such as jemalloc, or the C library's). This library is RTLD_LOCAL and
	 * not in that scope. */
	real_malloc = dlsym(RTLD_DEFAULT, "malloc");
	real_calloc = dlsym(RTLD_DEFAULT, "calloc");
	real_realloc = dlsym(RTLD_DEFAULT, "realloc");
	real_reallocarray = dlsym(RTLD_DEFAULT, "reallocarray");
	real_free = dlsym(RTLD_DEFAULT, "free");
	real_posix_memalign = dlsym(RTLD_DEFAULT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_DEFAULT, "aligned_alloc");
	real_memalign = dlsym(RTLD_DEFAULT, "memalign");
	real_valloc = dlsym(RTLD_DEFAULT, "valloc");
	real_pvalloc = dlsym(RTLD_DEFAULT, "pvalloc");
	real_new = dlsym(RTLD_DEFAULT, "_Znwm");
	real_new_array = dlsym(RTLD_DEFAULT, "_Znam");
	real_new_nothrow = dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
	real_new_array_nothrow = dlsym(RTLD_DEFAULT, "_ZnamRKSt9nothrow_t");
	real_new_aligned = dlsym(RTLD_DEFAULT, "_ZnwmSt11align_val_t");
	real_new_array_aligned = dlsym(RTLD_DEFAULT, "_ZnamSt11align_val_t");
	real_new_aligned_nothrow = dlsym(RTLD_DEFAULT, "_ZnwmSt11align_val_tRKSt9nothrow_t");
	real_new_array_aligned_nothrow = dlsym(RTLD_DEFAULT, "_ZnamSt11align_val_tRKSt9nothrow_t");
	if (!real_malloc || !real_free || !real_calloc || !real_realloc) {
		busy--;
		return INJECT_NO_ALLOCATOR;
	}
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	self_lo = (uintptr_t)__ehdr_start;
	self_hi = (uintptr_t)__etext;
	if (dladdr((void *)ebpf_studio_inject_start, &self))
		self_base = (uintptr_t)self.dli_fbase;
	min_size = env_u64("EBPF_STUDIO_PRELOAD_MIN_SIZE", 0);
	max_size = env_u64("EBPF_STUDIO_PRELOAD_MAX_SIZE", UINT64_MAX);
	sample_rate = env_u64("EBPF_STUDIO_PRELOAD_SAMPLE_RATE", 1);
	sample_bytes = (double)env_u64("EBPF_STUDIO_PRELOAD_SAMPLE_BYTES", 0);
	spin_lock(&patch_lock);
	retire_table(); /* a table still mapped (a start without a stop) */
	spin_unlock(&patch_lock);
	if (!open_table()) {
		busy--;
		return INJECT_NO_TABLE;
	}
	if (!unw_bt)
		open_unwinder();
	else
		hdr->unwinder = 1;
	__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	static bool atfork_set;
	if (!atfork_set)
		pthread_atfork(NULL, NULL, child_after_fork);
	atfork_set = true;
	busy--;
	patch_all();
	return INJECT_OK;
}

/* Puts every patched entry back; the library stays loaded and idle. Returns how many. */
EXPORT int ebpf_studio_inject_stop(void)
{
	int n = restore_entries();
	/* the probe fd too: it alone would keep the unlinked table's pages once the tracer closed its own */
	keep_watch_fd(-1);
	return n;
}

static int restore_entries(void)
{
	int n = 0;
	spin_lock(&patch_lock);
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < npatches; i++) {
		uintptr_t at = (uintptr_t)patches[i].slot;
		write_slot(patches[i].slot, patches[i].old, patches[i].relro ? at : 0, patches[i].relro ? at + 8 : 0);
		n++;
	}
	npatches = 0;
	/* The tracer reads the table through its own fd, which keeps the file: our mapping can go. */
	retire_table();
	spin_unlock(&patch_lock);
	return n;
}
