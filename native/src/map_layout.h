// How user space sees a map's values, shared by maps() and the map operations.
#pragma once

#include <bpf/libbpf.h>

#include <cstddef>

namespace ebpf_studio {

inline bool IsPerCpuMap(enum bpf_map_type type) {
  switch (type) {
    case BPF_MAP_TYPE_PERCPU_HASH:
    case BPF_MAP_TYPE_PERCPU_ARRAY:
    case BPF_MAP_TYPE_LRU_PERCPU_HASH:
    case BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE:
      return true;
    default:
      return false;
  }
}

// Bytes the kernel reads or writes per key: per-CPU maps hold one 8-byte aligned slot per
// possible CPU.
inline size_t ValueBytes(const bpf_map* map) {
  size_t size = bpf_map__value_size(map);
  if (!IsPerCpuMap(bpf_map__type(map))) return size;
  int cpus = libbpf_num_possible_cpus();
  return static_cast<size_t>(cpus > 0 ? cpus : 1) * ((size + 7) / 8 * 8);
}

}  // namespace ebpf_studio
