// Reads kernel BPF objects another process created, by id, through BPF syscalls in this process:
// the maps, programs and BTF of a loader the helper started. Used instead of running bpftool,
// whose exec()s would show up in what the loader traces (exec events, counters).
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <napi.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"

namespace ebpf_studio {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool IsPerCpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
         type == BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE;
}

// mapReadById(id, maxEntries): the map's info and up to maxEntries key/value pairs (no values for
// ring buffers and other maps without lookups). Reads only: nothing is changed or deleted.
Napi::Value MapReadById(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = static_cast<uint32_t>(IntArg(info, 0, "id", 1, UINT32_MAX));
  uint32_t limit = static_cast<uint32_t>(IntArg(info, 1, "maxEntries", 0, 1 << 20));
  std::string what = "mapReadById(" + std::to_string(id) + ")";
  Fd fd(bpf_map_get_fd_by_id(id));
  if (fd.get() < 0) ThrowBpfError(env, what, errno);
  bpf_map_info mi{};
  uint32_t len = sizeof(mi);
  if (bpf_obj_get_info_by_fd(fd.get(), &mi, &len) != 0) ThrowBpfError(env, what, errno);
  Napi::Object r = Napi::Object::New(env);
  r.Set("id", mi.id);
  r.Set("name", std::string(mi.name, strnlen(mi.name, sizeof(mi.name))));
  r.Set("type", mi.type);
  r.Set("keySize", mi.key_size);
  r.Set("valueSize", mi.value_size);
  r.Set("maxEntries", mi.max_entries);
  r.Set("btfId", mi.btf_id);
  r.Set("btfKeyTypeId", mi.btf_key_type_id);
  r.Set("btfValueTypeId", mi.btf_value_type_id);
  const bool perCpu = IsPerCpu(mi.type);
  r.Set("perCpu", perCpu);
  const bool readable = mi.type != BPF_MAP_TYPE_RINGBUF && mi.type != BPF_MAP_TYPE_USER_RINGBUF && mi.type != BPF_MAP_TYPE_PERF_EVENT_ARRAY &&
                        mi.type != BPF_MAP_TYPE_PROG_ARRAY && mi.type != BPF_MAP_TYPE_STACK_TRACE && mi.key_size > 0;
  const int cpus = perCpu ? libbpf_num_possible_cpus() : 1;
  const size_t valueBytes = perCpu ? static_cast<size_t>((mi.value_size + 7) / 8 * 8) * static_cast<size_t>(cpus) : mi.value_size;
  std::vector<uint8_t> keys, values, cur(mi.key_size), next(mi.key_size), value(valueBytes);
  uint32_t count = 0;
  if (readable) {
    bool first = true;
    while (count < limit && bpf_map_get_next_key(fd.get(), first ? nullptr : cur.data(), next.data()) == 0) {
      first = false;
      cur.swap(next);
      if (bpf_map_lookup_elem(fd.get(), cur.data(), value.data()) != 0) continue;  // deleted meanwhile
      keys.insert(keys.end(), cur.begin(), cur.end());
      values.insert(values.end(), value.begin(), value.end());
      count++;
    }
  }
  r.Set("readable", readable);
  r.Set("keys", Napi::Buffer<uint8_t>::Copy(env, keys.data(), keys.size()));
  r.Set("values", Napi::Buffer<uint8_t>::Copy(env, values.data(), values.size()));
  r.Set("valueBytes", static_cast<double>(valueBytes));
  r.Set("count", count);
  return r;
}

// progInfoById(id): name, type, tag and the ids of the maps it uses.
Napi::Value ProgInfoById(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = static_cast<uint32_t>(IntArg(info, 0, "id", 1, UINT32_MAX));
  std::string what = "progInfoById(" + std::to_string(id) + ")";
  Fd fd(bpf_prog_get_fd_by_id(id));
  if (fd.get() < 0) ThrowBpfError(env, what, errno);
  bpf_prog_info pi{};
  uint32_t len = sizeof(pi);
  if (bpf_obj_get_info_by_fd(fd.get(), &pi, &len) != 0) ThrowBpfError(env, what, errno);
  Napi::Object r = Napi::Object::New(env);
  r.Set("id", pi.id);
  r.Set("name", std::string(pi.name, strnlen(pi.name, sizeof(pi.name))));
  r.Set("type", pi.type);
  char tag[2 * BPF_TAG_SIZE + 1];
  for (int i = 0; i < BPF_TAG_SIZE; i++) snprintf(tag + 2 * i, 3, "%02x", pi.tag[i]);
  r.Set("tag", std::string(tag));
  r.Set("runCount", static_cast<double>(pi.run_cnt));
  return r;
}

// btfRawById(id): the raw BTF blob (header, types, strings) the kernel holds under that id.
Napi::Value BtfRawById(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = static_cast<uint32_t>(IntArg(info, 0, "id", 1, UINT32_MAX));
  std::string what = "btfRawById(" + std::to_string(id) + ")";
  btf* b = btf__load_from_kernel_by_id(id);
  if (b == nullptr) ThrowBpfError(env, what, errno);
  uint32_t size = 0;
  const void* raw = btf__raw_data(b, &size);
  Napi::Value out = raw != nullptr ? Napi::Buffer<uint8_t>::Copy(env, static_cast<const uint8_t*>(raw), size) : env.Null();
  btf__free(b);
  return out;
}

}  // namespace

void InitById(Napi::Env env, Napi::Object exports) {
  exports.Set("mapReadById", Napi::Function::New<MapReadById>(env, "mapReadById"));
  exports.Set("progInfoById", Napi::Function::New<ProgInfoById>(env, "progInfoById"));
  exports.Set("btfRawById", Napi::Function::New<BtfRawById>(env, "btfRawById"));
}

}  // namespace ebpf_studio
