/* User stacks walked in the kernel by unwind tables compiled from .eh_frame (see
 * extension/sys/elf/cfiTable.ts), so code built without frame pointers (the default of gcc -O2,
 * Debian's libc) still gives whole stacks without copying the stack to user space. User space
 * loads each file's rows once into cfi_rows (shared by every process that maps the file) and each
 * traced process's executable mappings into cfi_procs; a mapping without a table (JIT code with
 * frame pointers, a file without .eh_frame) is walked by frame pointers. Each frame costs a binary
 * search over the process's mappings, one over its file's rows, and one or two user reads; the
 * frames loop runs under bpf_loop so the verifier checks one iteration, not CFI_MAX_FRAMES.
 * A walked stack goes to cfi_stacks under a hash-derived id (CFI_STACK_ID_BASE | 30 bits), which
 * fits the s32 stack-id fields tracers already carry. Needs vmlinux.h, <bpf/bpf_helpers.h> first. */
#ifndef EBPF_STUDIO_CFI_WALK_BPF_H
#define EBPF_STUDIO_CFI_WALK_BPF_H

#include "cfi_walk.h"

#ifndef ENOENT
#define ENOENT 2
#endif
#ifndef ENOSPC
#define ENOSPC 28
#endif

/* Binary search steps over one page's rows (the page index narrows each search to one 4 KiB page
 * of code, which never holds more than a few hundred rows; a page with more than 2^12 stops the
 * walk): few steps keep the verifier's work within its limits inside the callers' programs. */
#define CFI_ROW_STEPS 12
#define CFI_MAPPING_STEPS 9

/* Every file's rows, one range per file, in blocks (user space sizes it to what it loads). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_row_block);
} cfi_rows SEC(".maps");

static __always_inline struct cfi_row *cfi_row_at(__u32 i)
{
	__u32 b = i / CFI_BLOCK_ROWS;
	struct cfi_row_block *blk = bpf_map_lookup_elem(&cfi_rows, &b);

	return blk ? &blk->rows[i % CFI_BLOCK_ROWS] : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_page_block);
} cfi_pages SEC(".maps");

static __always_inline __u32 *cfi_page_at(__u32 i)
{
	__u32 b = i / CFI_BLOCK_PAGES;
	struct cfi_page_block *blk = bpf_map_lookup_elem(&cfi_pages, &b);

	return blk ? &blk->row[i % CFI_BLOCK_PAGES] : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct cfi_proc);
} cfi_procs SEC(".maps");

/* Whole-host sessions: each file's table by slot (a mapping's file field), and when a walk last
 * used it and how many did, which user space reads to compile the files walks meet most, and to
 * evict the least recently used when the table memory cap is reached. One entry each otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_file);
} cfi_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_file_use);
} cfi_file_use SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cfi_stack);
} cfi_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CFI_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} cfi_stats SEC(".maps");

/* Bytes of stack above the first sp copied at once (one helper call) for the walk's reads; a read
 * outside it is a helper call of its own. */
#define CFI_WIN_WORDS 512

/* The walk's registers and the stack being built (too big for the BPF stack). */
struct cfi_state {
	struct cfi_stack st;
	__u64 ip, sp, bp;
	__u64 win_base, win_len;
	__u64 now; /* when the walk began: the use stamp of the files it meets */
	__u32 max_frames;
	__u8 exact; /* ip is where the thread was interrupted, not a return address */
	__u8 flags; /* CFI_FLAG_* */
	__u8 pad[2];
	__u64 win[CFI_WIN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_state);
} cfi_scratch SEC(".maps");

/* Words of user stack above sp hashed by cfi_stack_signature. */
#define CFI_SIG_WORDS 64

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[CFI_SIG_WORDS]);
} cfi_sig_window SEC(".maps");

/* Where a thread stands, for code without frame pointers (where a frame-pointer chain says
 * nothing: two callers of the same libc call block with the same ip, sp and bp): a hash of the
 * 512 bytes above sp, which hold the innermost frames' return addresses (and locals, whose
 * changes only cost a walk). One read, no walk; callers further up differ in sp or are told
 * apart by the tracer's periodic check walks. Near the top of the stack, 128 bytes. */
static __always_inline __u64 cfi_stack_signature(__u64 sp)
{
	__u64 (*w)[CFI_SIG_WORDS], h = 0;
	__u32 zero = 0;
	int n = CFI_SIG_WORDS;

	w = bpf_map_lookup_elem(&cfi_sig_window, &zero);
	if (!w)
		return 0;
	if (bpf_probe_read_user(*w, sizeof(*w), (void *)sp)) {
		n = 16;
		if (bpf_probe_read_user(*w, 16 * 8, (void *)sp))
			return 0;
	}
	for (int i = 0; i < CFI_SIG_WORDS; i++) {
		if (i >= n)
			break;
		h = (h ^ (*w)[i]) * 0x9E3779B97F4A7C15ULL;
	}
	return h;
}

static __always_inline void cfi_stat(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&cfi_stats, &idx);

	if (v)
		*v += n; /* per-CPU slot */
}

/* The mapping holding pc, or NULL. */
static __always_inline struct cfi_mapping *cfi_find_mapping(struct cfi_proc *p, __u64 pc)
{
	__u32 lo = 0, n = p->count, half;
	struct cfi_mapping *m;

	/* no clamp to a constant: a known n makes the verifier walk every path of the search with
	 * known indexes, which multiplies its work past its limit inside the callers */
	if (!n || n > CFI_MAX_MAPPINGS)
		return NULL;
	for (int i = 0; i < CFI_MAPPING_STEPS && n > 1; i++) {
		half = n / 2;
		if (p->m[(lo + half) & (CFI_MAX_MAPPINGS - 1)].start <= pc) {
			lo += half;
			n -= half;
		} else {
			n = half;
		}
	}
	m = &p->m[lo & (CFI_MAX_MAPPINGS - 1)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* The last row at or below rel in [start, start + len), or NULL. */
static __always_inline struct cfi_row *cfi_find_row(__u32 start, __u32 len, __u32 rel)
{
	__u32 lo = start, n = len, half, mid;
	struct cfi_row *row;

	for (int i = 0; i < CFI_ROW_STEPS && n > 1; i++) {
		half = n / 2;
		mid = lo + half;
		row = cfi_row_at(mid);
		if (!row)
			return NULL;
		if (row->pc <= rel) {
			lo = mid;
			n -= half;
		} else {
			n = half;
		}
	}
	row = cfi_row_at(lo);
	return row && row->pc <= rel ? row : NULL;
}

/* A word of user stack: from the window when it is there, else read alone. */
static __always_inline long cfi_read(struct cfi_state *s, __u64 addr, __u64 *out)
{
	__u64 off = addr - s->win_base;

	if (addr >= s->win_base && off + 8 <= s->win_len && !(off & 7)) {
		*out = s->win[(off / 8) & (CFI_WIN_WORDS - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, 8, (void *)addr);
}

/* The row for rel through the file's page index: a search over one page's rows. */
static __always_inline struct cfi_row *cfi_find_row_paged(struct cfi_range *r, __u32 rel)
{
	__u32 page = rel >> CFI_PAGE_SHIFT, k, *lo, *hi;

	if (page < r->page_base || page - r->page_base >= r->page_count)
		return NULL;
	k = r->page_start + (page - r->page_base);
	lo = cfi_page_at(k);
	hi = cfi_page_at(k + 1);
	if (!lo || !hi || *hi < *lo || *hi - *lo >= (1 << CFI_ROW_STEPS))
		return NULL;
	return cfi_find_row(*lo, *hi - *lo + 1, rel);
}

/* The mapping's file's table: its own range, or its file's slot (stamped as used now; a file
 * without rows there marks the walk as pending or cut by the cap). NULL: none. */
static __always_inline struct cfi_range *cfi_range_of(struct cfi_state *s, struct cfi_mapping *m)
{
	__u32 slot = m->file;
	struct cfi_file *f;
	struct cfi_file_use *use;

	if (!slot)
		return m->r.row_len ? &m->r : NULL;
	f = bpf_map_lookup_elem(&cfi_files, &slot);
	if (!f)
		return NULL;
	use = bpf_map_lookup_elem(&cfi_file_use, &slot);
	if (use && use->last != s->now) {
		use->last = s->now;
		use->walks++;
	}
	if (f->r.row_len)
		return &f->r;
	if (f->state == CFI_FILE_CAPPED)
		s->flags |= CFI_FLAG_CAPPED;
	else if (f->state == CFI_FILE_PENDING)
		s->flags |= CFI_FLAG_PENDING;
	return NULL;
}

struct cfi_loop_ctx {
	struct cfi_proc *proc;
	struct cfi_state *s;
};

/* One frame step by frame pointers: the record at bp is {caller's bp, return address}. */
static __always_inline int cfi_fp_step(struct cfi_state *s)
{
	__u64 rec[2];

	/* rbp 0 ends a chain of frame pointers; in a file whose table is not in (still compiling, or
	 * kept out by the cap) it only says that code keeps none: a cut, not the outermost frame */
	if (s->bp < 4096 || s->bp < s->sp) {
		s->st.reason = s->bp || (s->flags & (CFI_FLAG_PENDING | CFI_FLAG_CAPPED)) ? CFI_STOP_READ : CFI_STOP_END;
		return 1;
	}
	if (cfi_read(s, s->bp, &rec[0]) || cfi_read(s, s->bp + 8, &rec[1])) {
		s->st.reason = CFI_STOP_READ;
		return 1;
	}
	s->sp = s->bp + 16;
	s->bp = rec[0];
	s->ip = rec[1];
	s->exact = 0;
	s->st.fp_frames++;
	return 0;
}

/* The interrupted registers of a signal frame: the ucontext the kernel pushed at rsp
 * (uc_mcontext at 40; its gregs rbp, rsp, rip at 10, 15, 16). */
static __always_inline int cfi_signal_step(struct cfi_state *s)
{
	__u64 bp, sp, ip;

	if (cfi_read(s, s->sp + 40 + 10 * 8, &bp) || cfi_read(s, s->sp + 40 + 15 * 8, &sp) || cfi_read(s, s->sp + 40 + 16 * 8, &ip)) {
		s->st.reason = CFI_STOP_READ;
		return 1;
	}
	s->bp = bp;
	s->sp = sp;
	s->ip = ip;
	s->exact = 1;
	return 0;
}

/* One frame step by a table row; returns 1 to stop (st.reason set). */
static __always_inline int cfi_row_step(struct cfi_state *s, struct cfi_row *row)
{
	__u64 cfa, ra, bp;

	switch (row->kind) {
	case CFI_KIND_SP:
		cfa = s->sp + row->cfa_off;
		break;
	case CFI_KIND_BP:
		cfa = s->bp + row->cfa_off;
		break;
	case CFI_KIND_PLT:
		cfa = s->sp + row->cfa_off + ((s->ip & 15) >= row->arg ? 8 : 0);
		break;
	case CFI_KIND_SIGNAL:
		return cfi_signal_step(s);
	case CFI_KIND_OUTERMOST:
		s->st.reason = CFI_STOP_END;
		return 1;
	case CFI_KIND_NONE:
		/* code between a file's FDEs (V8's embedded builtins in node, hand-written
		 * trampolines): such code without CFI keeps frame pointers, as JIT code does */
		return cfi_fp_step(s);
	default:
		s->st.reason = CFI_STOP_UNSUPPORTED;
		return 1;
	}
	if (cfa <= s->sp) {
		s->st.reason = CFI_STOP_LOOP;
		return 1;
	}
	if (cfi_read(s, cfa - 8, &ra)) {
		s->st.reason = CFI_STOP_READ;
		return 1;
	}
	if (row->rbp_off) {
		if (cfi_read(s, cfa + row->rbp_off, &bp)) {
			s->st.reason = CFI_STOP_READ;
			return 1;
		}
		s->bp = bp;
	}
	s->sp = cfa;
	s->ip = ra;
	s->exact = 0;
	return 0;
}

static long cfi_step(__u64 index, void *data)
{
	struct cfi_loop_ctx *c = data;
	struct cfi_state *s = c->s;
	struct cfi_mapping *m;
	struct cfi_range *r;
	struct cfi_row *row;
	__u64 pc, rel;
	__u32 n = s->st.depth;

	if (!s->ip) {
		s->st.reason = CFI_STOP_END;
		return 1;
	}
	if (n >= s->max_frames || n >= CFI_MAX_FRAMES) {
		s->st.reason = CFI_STOP_DEPTH;
		return 1;
	}
	s->st.pcs[n] = s->ip;
	s->st.depth = n + 1;
	s->st.hash = (s->st.hash ^ s->ip) * 0x9E3779B97F4A7C15ULL;
	/* a return address is the instruction after the call: its row may be the next function's */
	pc = s->exact ? s->ip : s->ip - 1;
	m = cfi_find_mapping(c->proc, pc);
	if (!m) {
		s->st.reason = CFI_STOP_NO_MAPPING;
		return 1;
	}
	r = cfi_range_of(s, m);
	if (!r)
		return cfi_fp_step(s);
	rel = pc - m->bias;
	if (rel > 0xffffffffULL) {
		s->st.reason = CFI_STOP_NO_ROW;
		return 1;
	}
	row = cfi_find_row_paged(r, (__u32)rel);
	if (!row)
		return cfi_fp_step(s);
	return cfi_row_step(s, row);
}

/* Stores the walked stack; its id, or a negative errno when the map is full. A different stack
 * with the same 30 bits takes the next id. */
static __always_inline long cfi_store(struct cfi_stack *st)
{
	__u32 id = CFI_STACK_ID_BASE | (__u32)((st->hash ^ (st->hash >> 32)) & 0x3fffffff);
	struct cfi_stack *old;

	for (int i = 0; i < 2; i++, id = CFI_STACK_ID_BASE | ((id + 1) & 0x3fffffff)) {
		if (!bpf_map_update_elem(&cfi_stacks, &id, st, BPF_NOEXIST))
			return id;
		old = bpf_map_lookup_elem(&cfi_stacks, &id);
		if (old && old->hash == st->hash && old->depth == st->depth)
			return id;
	}
	cfi_stat(CFI_STAT_LOST, 1);
	return -ENOSPC;
}

/* Walks tgid's user stack from (ip, sp, bp) by its tables. Returns a stack id (≥
 * CFI_STACK_ID_BASE), -ENOENT when tgid has no tables (the caller walks its own way), or another
 * negative errno when the stack was lost. */
static __always_inline long cfi_user_stackid(__u32 tgid, __u64 ip, __u64 sp, __u64 bp, __u32 max_frames)
{
	struct cfi_loop_ctx c;
	__u32 zero = 0;
	__u64 t0;
	long id;

	c.proc = bpf_map_lookup_elem(&cfi_procs, &tgid);
	if (!c.proc) {
		cfi_stat(CFI_STAT_NO_TABLE, 1);
		return -ENOENT;
	}
	c.s = bpf_map_lookup_elem(&cfi_scratch, &zero);
	if (!c.s)
		return -ENOENT;
	c.s->ip = ip;
	c.s->sp = sp;
	c.s->bp = bp;
	c.s->exact = 1;
	c.s->max_frames = max_frames;
	c.s->st.hash = 0;
	c.s->st.depth = 0;
	c.s->st.fp_frames = 0;
	c.s->st.reason = CFI_STOP_DEPTH;
	c.s->flags = 0;
	t0 = bpf_ktime_get_ns();
	c.s->now = t0;
	/* the whole window, or near the top of the stack a quarter of it */
	c.s->win_base = sp;
	c.s->win_len = sizeof(c.s->win);
	if (bpf_probe_read_user(c.s->win, sizeof(c.s->win), (void *)sp)) {
		c.s->win_len = sizeof(c.s->win) / 4;
		if (bpf_probe_read_user(c.s->win, sizeof(c.s->win) / 4, (void *)sp))
			c.s->win_len = 0;
	}
	bpf_loop(CFI_MAX_FRAMES + 1, cfi_step, &c, 0);
	cfi_stat(CFI_STAT_WALKS, 1);
	cfi_stat(CFI_STAT_FRAMES, c.s->st.depth);
	cfi_stat(CFI_STAT_FP_FRAMES, c.s->st.fp_frames);
	cfi_stat(c.s->st.reason < CFI_STOP_COUNT ? c.s->st.reason : CFI_STOP_DEPTH, 1);
	if ((c.s->flags & CFI_FLAG_CAPPED) && c.s->st.reason != CFI_STOP_END)
		cfi_stat(CFI_STAT_CUT_BY_CAP, 1);
	c.s->st.flags = c.s->flags;
	id = c.s->st.depth ? cfi_store(&c.s->st) : -ENOENT;
	cfi_stat(CFI_STAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return id;
}

/* Whole-host sessions (CPU, off-CPU): processes user space should (re)read the mappings of, each with why
 * (CFI_WANT_*): no tables yet, or a walk met code in no mapping it knows (a library loaded or
 * code mapped since, or a new program after exec). An LRU map: bounded, the oldest asks go. */
#define CFI_WANT_NEW 1
#define CFI_WANT_REMAP 2

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} cfi_wanted SEC(".maps");

static __always_inline void cfi_want(__u32 tgid, __u32 why)
{
	__u32 *v = bpf_map_lookup_elem(&cfi_wanted, &tgid);

	if (!v || *v < why)
		bpf_map_update_elem(&cfi_wanted, &tgid, &why, BPF_ANY);
}

/* Why this CPU's last walk stopped (CFI_STOP_*), read right after cfi_user_stackid. */
static __always_inline int cfi_last_stop(void)
{
	__u32 zero = 0;
	struct cfi_state *s = bpf_map_lookup_elem(&cfi_scratch, &zero);

	return s ? s->st.reason : CFI_STOP_END;
}

#endif
