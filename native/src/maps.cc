#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "args.h"
#include "errors.h"
#include "map_layout.h"
#include "object.h"

namespace ebpf_studio {

namespace {

constexpr int kEnotsupp = 524;

struct Dump {
  std::vector<uint8_t> keys;
  std::vector<uint8_t> values;
  uint32_t count = 0;
};

bool BatchUnsupported(int err) { return err == kEnotsupp || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS; }

// Returns false, having read nothing, when the kernel offers no batch operation for this map;
// any other failure sets err.
bool DumpBatch(int fd, const bpf_map* map, bool del, Dump& out, int& err) {
  const size_t keySize = bpf_map__key_size(map), valueSize = ValueBytes(map);
  // The batch cursor is opaque; hash maps use a bucket index, arrays a key.
  std::vector<uint8_t> in(std::max<size_t>(keySize, 8)), next(in.size());
  const uint32_t maxChunk = std::max<uint32_t>(bpf_map__max_entries(map), 256);
  uint32_t chunk = std::min<uint32_t>(maxChunk, 1024);
  bool first = true;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  for (;;) {
    uint32_t n = chunk;
    out.keys.resize((static_cast<size_t>(out.count) + n) * keySize);
    out.values.resize((static_cast<size_t>(out.count) + n) * valueSize);
    uint8_t* keys = out.keys.data() + static_cast<size_t>(out.count) * keySize;
    uint8_t* values = out.values.data() + static_cast<size_t>(out.count) * valueSize;
    void* cursor = first ? nullptr : in.data();
    int r = del ? bpf_map_lookup_and_delete_batch(fd, cursor, next.data(), keys, values, &n, &opts)
                : bpf_map_lookup_batch(fd, cursor, next.data(), keys, values, &n, &opts);
    int e = r < 0 ? -r : 0;
    if (e != 0 && e != ENOENT) {
      // The kernel leaves count untouched when the map type has no batch operation.
      if (first && out.count == 0 && BatchUnsupported(e)) return false;
      // A hash bucket holding more entries than the chunk: retry the same cursor with more room.
      if (e == ENOSPC && chunk < maxChunk) {
        chunk = std::min(maxChunk, chunk * 2);
        continue;
      }
      err = e;
      return true;
    }
    out.count += n;
    if (e == ENOENT || n == 0) break;
    first = false;
    in.swap(next);
  }
  return true;
}

// For maps without batch support (stack traces, old kernels). Keys are collected first so that
// deleting while walking cannot restart the walk.
void DumpIterate(int fd, const bpf_map* map, bool del, Dump& out, int& err) {
  const size_t keySize = bpf_map__key_size(map), valueSize = ValueBytes(map);
  std::vector<uint8_t> keys, cur(keySize), next(keySize);
  // Concurrent deletions can make the walk start over; this bounds it.
  const size_t limit = static_cast<size_t>(bpf_map__max_entries(map)) + 1;
  size_t nkeys = 0;
  int r;
  while ((r = bpf_map_get_next_key(fd, nkeys == 0 ? nullptr : cur.data(), next.data())) == 0) {
    keys.insert(keys.end(), next.begin(), next.end());
    cur.swap(next);
    if (++nkeys >= limit) break;
  }
  if (r < 0 && -r != ENOENT) {
    err = -r;
    return;
  }
  out.keys.resize(nkeys * keySize);
  out.values.resize(nkeys * valueSize);
  for (size_t i = 0; i < nkeys; i++) {
    const uint8_t* key = keys.data() + i * keySize;
    uint8_t* value = out.values.data() + static_cast<size_t>(out.count) * valueSize;
    r = bpf_map_lookup_elem(fd, key, value);
    if (r == -ENOENT) continue;  // removed since the walk: not an error
    if (r < 0) {
      err = -r;
      return;
    }
    if (del && (r = bpf_map_delete_elem(fd, key)) < 0 && r != -ENOENT) {
      err = -r;
      return;
    }
    memcpy(out.keys.data() + static_cast<size_t>(out.count) * keySize, key, keySize);
    out.count++;
  }
}

void CheckSize(Napi::Env env, const std::string& what, const char* name, size_t got, size_t want) {
  if (got != want) {
    ThrowBpfError(env, what, EINVAL, nullptr,
                  std::string(name) + " has " + std::to_string(got) + " bytes, the map expects " + std::to_string(want));
  }
}

}  // namespace

Napi::Value BpfObject::MapLookup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  Napi::Buffer<uint8_t> key = BufferArg(info, 1, "key");
  std::string what = "mapLookup(" + name + ")";
  bpf_map* map = Map(env, name, what);
  MapFd(env, map, what);
  CheckSize(env, what, "key", key.Length(), bpf_map__key_size(map));
  std::vector<uint8_t> value(ValueBytes(map));
  LogCapture log;
  int err = bpf_map__lookup_elem(map, key.Data(), key.Length(), value.data(), value.size(), 0);
  if (err == -ENOENT) return env.Null();
  if (err) ThrowBpfError(env, what, err, &log);
  return Napi::Buffer<uint8_t>::Copy(env, value.data(), value.size());
}

void BpfObject::MapUpdate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  Napi::Buffer<uint8_t> key = BufferArg(info, 1, "key");
  Napi::Buffer<uint8_t> value = BufferArg(info, 2, "value");
  uint64_t flags = info[3].IsUndefined() ? 0 : static_cast<uint64_t>(IntArg(info, 3, "flags", 0, UINT32_MAX));
  std::string what = "mapUpdate(" + name + ")";
  bpf_map* map = Map(env, name, what);
  MapFd(env, map, what);
  CheckSize(env, what, "key", key.Length(), bpf_map__key_size(map));
  CheckSize(env, what, "value", value.Length(), ValueBytes(map));
  LogCapture log;
  int err = bpf_map__update_elem(map, key.Data(), key.Length(), value.Data(), value.Length(), flags);
  if (err) ThrowBpfError(env, what, err, &log);
}

Napi::Value BpfObject::MapDelete(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  Napi::Buffer<uint8_t> key = BufferArg(info, 1, "key");
  std::string what = "mapDelete(" + name + ")";
  bpf_map* map = Map(env, name, what);
  MapFd(env, map, what);
  CheckSize(env, what, "key", key.Length(), bpf_map__key_size(map));
  LogCapture log;
  int err = bpf_map__delete_elem(map, key.Data(), key.Length(), 0);
  if (err == -ENOENT) return Napi::Boolean::New(env, false);
  if (err) ThrowBpfError(env, what, err, &log);
  return Napi::Boolean::New(env, true);
}

Napi::Value BpfObject::MapDump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  Napi::Object options = OptionalObjectArg(info, 1, "options");
  bool del = OptionalBoolField(options, "options", "delete").value_or(false);
  std::string what = "mapDump(" + name + (del ? ", delete)" : ")");
  bpf_map* map = Map(env, name, what);
  int fd = MapFd(env, map, what);

  LogCapture log;
  Dump dump;
  int err = 0;
  if (!DumpBatch(fd, map, del, dump, err)) DumpIterate(fd, map, del, dump, err);
  if (err) ThrowBpfError(env, what, err, &log);

  const size_t keySize = bpf_map__key_size(map), valueSize = ValueBytes(map);
  Napi::Object result = Napi::Object::New(env);
  result.Set("keys", Napi::Buffer<uint8_t>::Copy(env, dump.keys.data(), dump.count * keySize));
  result.Set("values", Napi::Buffer<uint8_t>::Copy(env, dump.values.data(), dump.count * valueSize));
  result.Set("count", dump.count);
  return result;
}

Napi::Value BpfObject::ReadStack(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  int64_t stackId = IntArg(info, 1, "stackId", INT32_MIN, UINT32_MAX);
  std::string what = "readStack(" + name + ", " + std::to_string(stackId) + ")";
  bpf_map* map = Map(env, name, what);
  int fd = MapFd(env, map, what);
  const size_t valueSize = bpf_map__value_size(map);
  if (bpf_map__key_size(map) != sizeof(uint32_t) || valueSize % sizeof(uint64_t) != 0) {
    ThrowBpfError(env, what, EINVAL, nullptr, "not a stack trace map of 64-bit addresses");
  }

  std::vector<uint64_t> ips(valueSize / sizeof(uint64_t));
  size_t depth = 0;
  // Negative ids are bpf_get_stackid() errors recorded as keys: they name no stack.
  if (stackId >= 0) {
    uint32_t key = static_cast<uint32_t>(stackId);
    int r = bpf_map_lookup_elem(fd, &key, ips.data());
    if (r < 0 && r != -ENOENT) ThrowBpfError(env, what, r);
    if (r == 0) {
      while (depth < ips.size() && ips[depth] != 0) depth++;
    }
  }
  Napi::BigUint64Array out = Napi::BigUint64Array::New(env, depth);
  std::copy(ips.begin(), ips.begin() + depth, out.Data());
  return out;
}

}  // namespace ebpf_studio
