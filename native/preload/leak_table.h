/* Layout of the report file the preload interposer (ebpf_studio_preload.c) keeps mapped
 * MAP_SHARED, and the helper reads (extension/tracers/memleak/preloadDecode.ts mirrors it).
 * Fixed size, little-endian, no implicit padding: the decoder reads by offset.
 *
 * The file lives in a directory the helper made (EBPF_STUDIO_PRELOAD_DIR) and is named PID.leak.
 * It holds the whole outstanding table and the interned stacks, so the helper can read it at any
 * time, and after the process is gone, without the target ever waiting on a reader. */
#ifndef EBPF_STUDIO_LEAK_TABLE_H
#define EBPF_STUDIO_LEAK_TABLE_H

#include <stdint.h>

#define LEAK_MAGIC 0x4b41454c53504245ull /* "EBPSLEAK" */
#define LEAK_VERSION 1
#define LEAK_MAX_DEPTH 127 /* as MEMLEAK_MAX_STACK_DEPTH of the uprobe mode */
#define LEAK_SHARDS 256    /* the outstanding table is split into this many locked regions */

/* header.state */
#define LEAK_STATE_RUNNING 0
#define LEAK_STATE_EXITING 1 /* exit() reached; waiting (bounded) for RELEASED */
#define LEAK_STATE_RELEASED 2 /* written by the helper once it has captured the process image */

/* 256 bytes at offset 0. */
struct leak_header {
	uint64_t magic;        /* 0 */
	uint32_t version;      /* 8 */
	uint32_t pid;          /* 12 */
	uint64_t slots;        /* 16 outstanding-table slots (LEAK_SHARDS regions of slots/LEAK_SHARDS) */
	uint64_t slots_off;    /* 24 file offset of struct leak_slot[slots] */
	uint64_t stack_slots;  /* 32 interning hash slots (power of two) */
	uint64_t index_off;    /* 40 struct leak_stack_slot[stack_slots] */
	uint64_t max_stacks;   /* 48 */
	uint64_t dir_off;      /* 56 struct leak_stack_dir[max_stacks] */
	uint64_t max_frames;   /* 64 */
	uint64_t frames_off;   /* 72 uint64_t return addresses */
	uint64_t stacks_used;  /* 80 stacks interned (ids 0..stacks_used-1) */
	uint64_t frames_used;  /* 88 */
	uint64_t reserved0[3]; /* 96 */
	uint64_t allocs;       /* 120 allocations recorded */
	uint64_t frees;        /* 128 frees that matched a record */
	uint64_t table_full;   /* 136 allocations not recorded: their region of the table was full */
	uint64_t stack_lost;   /* 144 recorded without a stack: stack tables full */
	uint32_t state;        /* 152 LEAK_STATE_* (RELEASED written by the helper) */
	uint32_t unwinder;     /* 156 1 libunwind, 2 libgcc */
	uint64_t started_ns;   /* 160 CLOCK_MONOTONIC at start */
	uint8_t reserved[88];  /* 168 .. 256 */
};

/* One outstanding allocation, 32 bytes. addr 0 = empty slot. */
struct leak_slot {
	uint64_t addr;
	uint64_t size;
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC_COARSE (a few ms resolution) */
	int64_t stack_id;      /* <0: no stack */
};

/* Interning index: id is stack id + 1 (0 = empty), written after hash. 16 bytes. */
struct leak_stack_slot {
	uint64_t hash;
	uint32_t id;
	uint32_t pad;
};

/* Where stack `id`'s frames are: frames[first .. first+depth), leaf first. 8 bytes. */
struct leak_stack_dir {
	uint32_t first;
	uint32_t depth;
};

#endif
