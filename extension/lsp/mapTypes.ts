// BPF map types and flags for completion and hover. The names come from the running kernel's
// enum bpf_map_type in vmlinux.h when we have it (so new kernels bring new types); the short
// descriptions for the common ones are ours.

export interface NamedConstant {
  name: string;
  doc: string;
}

const MAP_TYPE_DOCS: Record<string, string> = {
  HASH: 'Hash table: key → value, up to max_entries; preallocated unless BPF_F_NO_PREALLOC.',
  ARRAY: 'Array indexed by __u32 key 0..max_entries-1; every element always exists (zero-filled).',
  PROG_ARRAY: 'Array of program fds for bpf_tail_call().',
  PERF_EVENT_ARRAY: 'Per-CPU perf buffers for bpf_perf_event_output(); prefer RINGBUF on 5.8+.',
  PERCPU_HASH: 'Hash table with one value per CPU (no atomics needed; user space sums the CPUs).',
  PERCPU_ARRAY: 'Array with one value per CPU; a common scratch buffer for large structs.',
  STACK_TRACE: 'Stack traces by id, filled by bpf_get_stackid(); value_size = depth * 8.',
  CGROUP_ARRAY: 'cgroup fds for bpf_current_task_under_cgroup().',
  LRU_HASH: 'Hash table that evicts the least recently used entry when full.',
  LRU_PERCPU_HASH: 'Per-CPU LRU hash table.',
  LPM_TRIE: 'Longest-prefix-match trie (e.g. IP prefixes); needs BPF_F_NO_PREALLOC.',
  ARRAY_OF_MAPS: 'Array whose values are inner maps (declare with __array(values, ...)).',
  HASH_OF_MAPS: 'Hash table whose values are inner maps.',
  DEVMAP: 'Network devices for XDP redirect.',
  SOCKMAP: 'Sockets for sk_msg/sk_skb redirection.',
  CPUMAP: 'CPUs for XDP redirect.',
  XSKMAP: 'AF_XDP sockets.',
  SOCKHASH: 'Sockets by key for sk_msg/sk_skb redirection.',
  CGROUP_STORAGE: 'Per-cgroup local storage (legacy).',
  REUSEPORT_SOCKARRAY: 'Sockets for SO_REUSEPORT selection.',
  QUEUE: 'FIFO queue: bpf_map_push_elem / bpf_map_pop_elem; no key.',
  STACK: 'LIFO stack: bpf_map_push_elem / bpf_map_pop_elem; no key.',
  SK_STORAGE: 'Per-socket local storage (bpf_sk_storage_get).',
  STRUCT_OPS: 'Kernel struct_ops implementation.',
  RINGBUF: 'Ring buffer shared by all CPUs: bpf_ringbuf_reserve/submit or bpf_ringbuf_output; max_entries is the size in bytes (power of 2, multiple of the page size).',
  INODE_STORAGE: 'Per-inode local storage (LSM).',
  TASK_STORAGE: 'Per-task local storage (bpf_task_storage_get); needs BPF_F_NO_PREALLOC.',
  BLOOM_FILTER: 'Bloom filter: bpf_map_push_elem adds, bpf_map_peek_elem tests membership.',
  USER_RINGBUF: 'Ring buffer written by user space, drained with bpf_user_ringbuf_drain.',
  CGRP_STORAGE: 'Per-cgroup local storage (bpf_cgrp_storage_get).',
  ARENA: 'Memory region shared between BPF and user space (mmap-able).',
};

export const MAP_FLAGS: NamedConstant[] = [
  { name: 'BPF_F_NO_PREALLOC', doc: 'Allocate hash entries on update instead of up front (required for LPM_TRIE and task/inode/sk storage).' },
  { name: 'BPF_F_NO_COMMON_LRU', doc: 'LRU hash: one LRU list per CPU instead of a shared one.' },
  { name: 'BPF_F_NUMA_NODE', doc: 'Honor numa_node when allocating the map.' },
  { name: 'BPF_F_RDONLY', doc: 'User space may only read the map.' },
  { name: 'BPF_F_WRONLY', doc: 'User space may only write the map.' },
  { name: 'BPF_F_RDONLY_PROG', doc: 'BPF programs may only read the map.' },
  { name: 'BPF_F_WRONLY_PROG', doc: 'BPF programs may only write the map.' },
  { name: 'BPF_F_MMAPABLE', doc: 'Array map that user space can mmap().' },
  { name: 'BPF_F_ZERO_SEED', doc: 'Hash with a zero seed (deterministic, for tests).' },
  { name: 'BPF_F_CLONE', doc: 'Clone local storage when the socket is cloned.' },
  { name: 'BPF_F_INNER_MAP', doc: 'Inner map of a map-in-map may differ in max_entries.' },
];

export const UPDATE_FLAGS: NamedConstant[] = [
  { name: 'BPF_ANY', doc: 'bpf_map_update_elem: create the entry or update it.' },
  { name: 'BPF_NOEXIST', doc: 'bpf_map_update_elem: create only if the key is absent (not for arrays).' },
  { name: 'BPF_EXIST', doc: 'bpf_map_update_elem: update only if the key exists.' },
  { name: 'BPF_F_LOCK', doc: 'bpf_map_update_elem: update under the value\'s bpf_spin_lock.' },
  { name: 'BPF_F_USER_STACK', doc: 'bpf_get_stackid/bpf_get_stack: the user-space stack instead of the kernel one.' },
  { name: 'BPF_F_FAST_STACK_CMP', doc: 'bpf_get_stackid: compare stacks by hash only.' },
  { name: 'BPF_F_REUSE_STACKID', doc: 'bpf_get_stackid: replace an older stack with the same hash.' },
  { name: 'BPF_F_CURRENT_CPU', doc: 'bpf_perf_event_output: the perf buffer of the current CPU.' },
  { name: 'BPF_RB_NO_WAKEUP', doc: 'bpf_ringbuf_submit/output: do not wake up the consumer.' },
  { name: 'BPF_RB_FORCE_WAKEUP', doc: 'bpf_ringbuf_submit/output: always wake up the consumer.' },
];

/** Map types from vmlinux.h's enum bpf_map_type (skipping UNSPEC and deprecated aliases), or the built-in list. */
export function mapTypes(vmlinuxText?: string): NamedConstant[] {
  let names: string[] = [];
  if (vmlinuxText) {
    const start = vmlinuxText.indexOf('enum bpf_map_type {');
    if (start >= 0) {
      const body = vmlinuxText.slice(start, vmlinuxText.indexOf('};', start));
      names = [...body.matchAll(/\bBPF_MAP_TYPE_(\w+)\s*=/g)].map((m) => m[1]);
    }
  }
  if (names.length === 0) names = Object.keys(MAP_TYPE_DOCS);
  return names
    .filter((n) => n !== 'UNSPEC' && !n.endsWith('_DEPRECATED'))
    .map((n) => ({ name: `BPF_MAP_TYPE_${n}`, doc: MAP_TYPE_DOCS[n] ?? `BPF_MAP_TYPE_${n} (see the kernel's Documentation/bpf/maps).` }));
}
