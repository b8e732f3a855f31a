/* Layout shared by bpf/cfi_walk.bpf.h and the TypeScript side (extension/tracers/cfiTables.ts).
 * Fixed size, no implicit padding: user space writes and reads it by offset. */
#ifndef EBPF_STUDIO_CFI_WALK_H
#define EBPF_STUDIO_CFI_WALK_H

/* Frames of a walked user stack (the kernel's own stack maps keep 127). */
#define CFI_MAX_FRAMES 127
/* Executable mappings per process with a table or a frame-pointer mark (power of two). */
#define CFI_MAX_MAPPINGS 256
/* A walked stack's id in the tracer's stack-id fields: CFI_STACK_ID_BASE | 30 bits of its hash,
 * positive and far above a stack-trace map's ids, so one s32 field holds either. */
#define CFI_STACK_ID_BASE 0x40000000

/* Row kinds (extension/sys/elf/cfiTable.ts CFI_KIND) */
#define CFI_KIND_NONE 0
#define CFI_KIND_SP 1
#define CFI_KIND_BP 2
#define CFI_KIND_PLT 3
#define CFI_KIND_SIGNAL 4
#define CFI_KIND_OUTERMOST 5
#define CFI_KIND_UNSUPPORTED 6

/* 12 bytes: 0 pc (u32, link-time address where the rule starts)  4 cfa_off (s32)
 * 8 rbp_off (s16: rbp saved at CFA + rbp_off; 0 = unchanged)  10 kind (u8)  11 arg (u8: for PLT,
 * the offset in the 16-byte stub from which CFA is 8 higher) */
struct cfi_row {
	__u32 pc;
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 kind;
	__u8 arg;
};

/* cfi_rows holds rows in blocks (one map update writes a block: a 22 MB executable's 400k rows
 * load in under a thousand system calls, not 400k); row i is rows[i % CFI_BLOCK_ROWS] of block
 * i / CFI_BLOCK_ROWS. */
#define CFI_BLOCK_ROWS 512

struct cfi_row_block {
	struct cfi_row rows[CFI_BLOCK_ROWS];
};

/* A page index per file keeps each frame's row search to the rows of one 4 KiB page of code (a
 * few, in the same cache lines) instead of a binary search over the whole file (18 steps for
 * node's, each a likely cache miss): entry k of a file's range in cfi_pages is the index in
 * cfi_rows of the row covering the start of its page page_base + k; the rows for a pc in that
 * page are entries k to k + 1 (inclusive). In blocks of CFI_BLOCK_PAGES, as the rows. */
#define CFI_PAGE_SHIFT 12
#define CFI_BLOCK_PAGES 1024

struct cfi_page_block {
	__u32 row[CFI_BLOCK_PAGES];
};

/* Where a file's table is, 20 bytes: 0 row_start  4 row_len (u32: the file's rows in cfi_rows;
 * row_len 0 = no table: walked by frame pointers)  8 page_start (u32: its page index in cfi_pages)
 * 12 page_base (u32: link-time page of the index's first entry)  16 page_count (u32: pages
 * indexed; the index has page_count + 1 entries) */
struct cfi_range {
	__u32 row_start;
	__u32 row_len;
	__u32 page_start;
	__u32 page_base;
	__u32 page_count;
};

/* 48 bytes: 0 start  8 end (u64, [start, end) of the mapping)  16 bias (u64: runtime address −
 * link-time address)  24 the file's table (struct cfi_range)  44 file (u32: 0 = the range here is
 * the file's; else its slot in cfi_files, where the range lives: a whole-host session loads and
 * evicts a file's table once for every process that maps it) */
struct cfi_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;
	struct cfi_range r;
	__u32 file;
};

/* A file's table in a whole-host session, 24 bytes: 0 its range (row_len 0 while it has none)
 * 20 state (CFI_FILE_*) */
#define CFI_FILE_LOADED 0
#define CFI_FILE_PENDING 1 /* being compiled: walked by frame pointers until it lands */
#define CFI_FILE_CAPPED 2  /* kept out (or evicted) by the table memory cap */
#define CFI_FILE_NONE 3    /* no table to load (no .eh_frame, or none usable): frame pointers */

struct cfi_file {
	struct cfi_range r;
	__u32 state;
};

/* A whole-host file's use, 16 bytes: 0 last (u64, bpf_ktime_get_ns of the last walk that met it)
 * 8 walks (u64: walks that met it; per-CPU races may lose a few, it only ranks files) */
struct cfi_file_use {
	__u64 last;
	__u64 walks;
};

/* Walk flags (struct cfi_stack.flags): the walk met a file whose table was not in */
#define CFI_FLAG_PENDING 1
#define CFI_FLAG_CAPPED 2

/* Per process, 8 + 48 × CFI_MAX_MAPPINGS bytes: 0 count (u32)  4 pad  8 mappings sorted by start */
struct cfi_proc {
	__u32 count;
	__u32 pad;
	struct cfi_mapping m[CFI_MAX_MAPPINGS];
};

/* Why a walk stopped */
#define CFI_STOP_END 0         /* the outermost frame: undefined return address, or 0 */
#define CFI_STOP_NO_MAPPING 1  /* a pc in no known executable mapping (JIT code, a new dlopen) */
#define CFI_STOP_NO_ROW 2      /* a pc in a gap of its file's table */
#define CFI_STOP_UNSUPPORTED 3 /* a row the table could not express */
#define CFI_STOP_READ 4        /* the stack could not be read there */
#define CFI_STOP_DEPTH 5       /* CFI_MAX_FRAMES reached */
#define CFI_STOP_LOOP 6        /* the CFA did not move up the stack */
#define CFI_STOP_COUNT 7

/* 16 + 8 × CFI_MAX_FRAMES bytes: 0 hash (u64 over the pcs)  8 depth (u32)  12 reason (u8,
 * CFI_STOP_*)  13 fp_frames (u8: frames reached by frame pointers)  14 flags (u8, CFI_FLAG_*)
 * 15 pad  16 pcs (leaf first: the ip, then return addresses as pushed) */
struct cfi_stack {
	__u64 hash;
	__u32 depth;
	__u8 reason;
	__u8 fp_frames;
	__u8 flags;
	__u8 pad;
	__u64 pcs[CFI_MAX_FRAMES];
};

/* cfi_stats slots: stops by reason (CFI_STOP_*), then: */
#define CFI_STAT_WALKS (CFI_STOP_COUNT + 0)
#define CFI_STAT_FRAMES (CFI_STOP_COUNT + 1)
#define CFI_STAT_FP_FRAMES (CFI_STOP_COUNT + 2)
#define CFI_STAT_LOST (CFI_STOP_COUNT + 3)   /* the stacks map was full */
#define CFI_STAT_NO_TABLE (CFI_STOP_COUNT + 4) /* a process without tables: the caller's own walk */
#define CFI_STAT_WALK_NS (CFI_STOP_COUNT + 5)  /* ns spent walking (two clock reads per walk) */
/* walks that met a file the table memory cap kept out and did not reach the outermost frame */
#define CFI_STAT_CUT_BY_CAP (CFI_STOP_COUNT + 6)
#define CFI_STAT_COUNT (CFI_STOP_COUNT + 7)

#endif
