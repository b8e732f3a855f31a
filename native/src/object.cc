#include "object.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "args.h"
#include "errors.h"
#include "map_layout.h"
#include "ringbuf.h"

namespace ebpf_studio {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// libbpf names internal maps "<object prefix><section>" (e.g. "selftest.rodata") but also
// answers to the bare section name.
bpf_map* FindSectionMap(bpf_object* obj, const std::string& section) {
  if (bpf_map* map = bpf_object__find_map_by_name(obj, section.c_str())) return map;
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    if (bpf_map__is_internal(map) && EndsWith(bpf_map__name(map), section)) return map;
  }
  return nullptr;
}

struct Variable {
  std::string name;
  uint32_t offset;
  uint32_t size;
};

// Offsets and sizes come from the DATASEC, which libbpf completes at open time.
std::vector<Variable> SectionVariables(bpf_object* obj, const std::string& section) {
  std::vector<Variable> vars;
  const struct btf* btf = bpf_object__btf(obj);
  if (btf == nullptr) return vars;
  int id = btf__find_by_name_kind(btf, section.c_str(), BTF_KIND_DATASEC);
  if (id < 0) return vars;
  const struct btf_type* sec = btf__type_by_id(btf, id);
  const struct btf_var_secinfo* info = btf_var_secinfos(sec);
  for (uint16_t i = 0; i < btf_vlen(sec); i++) {
    const struct btf_type* var = btf__type_by_id(btf, info[i].type);
    if (var == nullptr) continue;
    vars.push_back({btf__name_by_offset(btf, var->name_off), info[i].offset, info[i].size});
  }
  return vars;
}

}  // namespace

void BpfObject::Init(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = DefineClass(
      env, "BpfObject",
      {
          InstanceAccessor<&BpfObject::Path>("path"),
          InstanceMethod<&BpfObject::Programs>("programs"),
          InstanceMethod<&BpfObject::Maps>("maps"),
          InstanceMethod<&BpfObject::Variables>("variables"),
          InstanceMethod<&BpfObject::SetRodata>("setRodata"),
          InstanceMethod<&BpfObject::SetAutoload>("setAutoload"),
          InstanceMethod<&BpfObject::SetMaxEntries>("setMaxEntries"),
          InstanceMethod<&BpfObject::Load>("load"),
          InstanceMethod<&BpfObject::AttachTracepoint>("attachTracepoint"),
          InstanceMethod<&BpfObject::AttachRawTracepoint>("attachRawTracepoint"),
          InstanceMethod<&BpfObject::Attach>("attach"),
          InstanceMethod<&BpfObject::AttachUprobe>("attachUprobe"),
          InstanceMethod<&BpfObject::AttachUsdt>("attachUsdt"),
          InstanceMethod<&BpfObject::AttachPerfEvent>("attachPerfEvent"),
          InstanceMethod<&BpfObject::Detach>("detach"),
          InstanceMethod<&BpfObject::RunIterator>("runIterator"),
          InstanceMethod<&BpfObject::MapLookup>("mapLookup"),
          InstanceMethod<&BpfObject::MapUpdate>("mapUpdate"),
          InstanceMethod<&BpfObject::MapDelete>("mapDelete"),
          InstanceMethod<&BpfObject::MapDump>("mapDump"),
          InstanceMethod<&BpfObject::ReadStack>("readStack"),
          InstanceMethod<&BpfObject::OpenRingBuffer>("openRingBuffer"),
          InstanceMethod<&BpfObject::Close>("close"),
      });
  exports.Set("BpfObject", ctor);
}

BpfObject::BpfObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BpfObject>(info) {
  Napi::Env env = info.Env();
  if (!info.IsConstructCall()) ThrowTypeError(env, "BpfObject must be called with new");
  path_ = StringArg(info, 0, "path");
  LogCapture log;
  bpf_object* obj = bpf_object__open_file(path_.c_str(), nullptr);
  if (obj == nullptr) ThrowBpfError(env, "open(" + path_ + ")", errno, &log);
  obj_ = obj;
}

BpfObject::~BpfObject() { CloseAll(); }

// Each uprobe link's teardown waits in the kernel (~110 ms here), so destroying 20–35 of them
// one after another takes seconds. From several threads part of the waiting overlaps (20 libc
// uprobes: 2.2 s → 1.8 s measured); the rest is serialized by the kernel. Distinct links share
// no libbpf state. The real fix is one uprobe_multi link, which needs libbpf >= 1.3.
void BpfObject::DestroyLinksConcurrently() {
  std::vector<bpf_link*> links;
  for (auto& [id, link] : links_) links.push_back(link);
  const size_t workers = std::min<size_t>(links.size(), 16);
  if (workers <= 1) {
    for (bpf_link* l : links) bpf_link__destroy(l);
    return;
  }
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; w++) {
    threads.emplace_back([&links, w, workers] {
      for (size_t i = w; i < links.size(); i += workers) bpf_link__destroy(links[i]);
    });
  }
  for (auto& t : threads) t.join();
}

void BpfObject::CloseAll() {
  // Ring buffers poll map fds and links reference programs: both go before the object.
  for (auto& ring : rings_) ring->Stop();
  rings_.clear();
  DestroyLinksConcurrently();
  links_.clear();
  if (obj_ != nullptr) {
    bpf_object__close(obj_);
    obj_ = nullptr;
  }
}

void BpfObject::Close(const Napi::CallbackInfo& info) { CloseAll(); }

bpf_object* BpfObject::Object(Napi::Env env, const std::string& what) {
  if (obj_ == nullptr) ThrowBpfError(env, what, EBADF, nullptr, "the object is closed");
  return obj_;
}

bpf_program* BpfObject::Program(Napi::Env env, const std::string& name, const std::string& what) {
  bpf_program* prog = bpf_object__find_program_by_name(Object(env, what), name.c_str());
  if (prog == nullptr) ThrowBpfError(env, what, ENOENT, nullptr, "no program named '" + name + "' in " + path_);
  return prog;
}

bpf_map* BpfObject::Map(Napi::Env env, const std::string& name, const std::string& what) {
  bpf_map* map = bpf_object__find_map_by_name(Object(env, what), name.c_str());
  if (map == nullptr) ThrowBpfError(env, what, ENOENT, nullptr, "no map named '" + name + "' in " + path_);
  return map;
}

int BpfObject::MapFd(Napi::Env env, bpf_map* map, const std::string& what) {
  RequireLoaded(env, what);
  int fd = bpf_map__fd(map);
  if (fd < 0) ThrowBpfError(env, what, EBADF, nullptr, "the map was not created (load failed?)");
  return fd;
}

void BpfObject::RequireLoaded(Napi::Env env, const std::string& what) {
  if (!loadAttempted_) ThrowBpfError(env, what, EINVAL, nullptr, "the object is not loaded yet");
}

void BpfObject::RequireNotLoaded(Napi::Env env, const std::string& what) {
  if (loadAttempted_) ThrowBpfError(env, what, EBUSY, nullptr, "the object is already loaded");
}

Napi::Value BpfObject::Path(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), path_); }

Napi::Value BpfObject::Programs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bpf_object* obj = Object(env, "programs()");
  Napi::Array out = Napi::Array::New(env);
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    Napi::Object p = Napi::Object::New(env);
    p.Set("name", bpf_program__name(prog));
    p.Set("section", bpf_program__section_name(prog));
    p.Set("autoload", bpf_program__autoload(prog));
    out.Set(out.Length(), p);
  }
  return out;
}

Napi::Value BpfObject::Maps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bpf_object* obj = Object(env, "maps()");
  Napi::Array out = Napi::Array::New(env);
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    enum bpf_map_type type = bpf_map__type(map);
    const char* typeName = libbpf_bpf_map_type_str(type);
    Napi::Object m = Napi::Object::New(env);
    m.Set("name", bpf_map__name(map));
    m.Set("type", static_cast<uint32_t>(type));
    m.Set("typeName", typeName != nullptr ? typeName : "unknown");
    m.Set("keySize", bpf_map__key_size(map));
    m.Set("valueSize", bpf_map__value_size(map));
    m.Set("maxEntries", bpf_map__max_entries(map));
    m.Set("perCpu", IsPerCpuMap(type));
    out.Set(out.Length(), m);
  }
  return out;
}

Napi::Value BpfObject::Variables(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string section = info[0].IsUndefined() ? ".rodata" : StringArg(info, 0, "section");
  bpf_object* obj = Object(env, "variables(" + section + ")");
  Napi::Array out = Napi::Array::New(env);
  for (const Variable& v : SectionVariables(obj, section)) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", v.name);
    o.Set("offset", v.offset);
    o.Set("size", v.size);
    out.Set(out.Length(), o);
  }
  return out;
}

void BpfObject::SetRodata(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "name");
  Napi::Buffer<uint8_t> value = BufferArg(info, 1, "value");
  std::string what = "setRodata(" + name + ")";
  bpf_object* obj = Object(env, what);
  RequireNotLoaded(env, what);

  const Variable* found = nullptr;
  std::vector<Variable> vars = SectionVariables(obj, ".rodata");
  for (const Variable& v : vars) {
    if (v.name == name) found = &v;
  }
  if (found == nullptr) ThrowBpfError(env, what, ENOENT, nullptr, "no variable '" + name + "' in .rodata of " + path_);
  if (value.Length() != found->size) {
    ThrowBpfError(env, what, EINVAL, nullptr,
                  "value has " + std::to_string(value.Length()) + " bytes, the variable has " +
                      std::to_string(found->size));
  }
  bpf_map* map = FindSectionMap(obj, ".rodata");
  size_t imageSize = 0;
  const void* image = map != nullptr ? bpf_map__initial_value(map, &imageSize) : nullptr;
  if (image == nullptr || found->offset + found->size > imageSize) {
    ThrowBpfError(env, what, ENOENT, nullptr, "the .rodata map has no room for this variable");
  }
  // Patch a copy and hand it back: the image belongs to libbpf.
  std::vector<uint8_t> patched(static_cast<const uint8_t*>(image), static_cast<const uint8_t*>(image) + imageSize);
  memcpy(patched.data() + found->offset, value.Data(), found->size);
  LogCapture log;
  int err = bpf_map__set_initial_value(map, patched.data(), patched.size());
  if (err) ThrowBpfError(env, what, err, &log);
}

void BpfObject::SetAutoload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "program");
  bool autoload = BoolArg(info, 1, "autoload");
  std::string what = "setAutoload(" + name + ")";
  bpf_program* prog = Program(env, name, what);
  RequireNotLoaded(env, what);
  LogCapture log;
  int err = bpf_program__set_autoload(prog, autoload);
  if (err) ThrowBpfError(env, what, err, &log);
}

void BpfObject::SetMaxEntries(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  uint32_t maxEntries = static_cast<uint32_t>(IntArg(info, 1, "maxEntries", 1, UINT32_MAX));
  std::string what = "setMaxEntries(" + name + ")";
  bpf_map* map = Map(env, name, what);
  RequireNotLoaded(env, what);
  LogCapture log;
  int err = bpf_map__set_max_entries(map, maxEntries);
  if (err) ThrowBpfError(env, what, err, &log);
}

Napi::Value BpfObject::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string what = "load(" + path_ + ")";
  Napi::Object options = OptionalObjectArg(info, 0, "options");
  uint32_t logLevel = static_cast<uint32_t>(OptionalIntField(options, "options", "logLevel", 0, 7).value_or(0));
  bpf_object* obj = Object(env, what);
  RequireNotLoaded(env, what);

  // The kernel fails a load whose log does not fit, so the detailed level gets more room.
  // new[] without initialisation keeps untouched pages unallocated.
  const size_t logSize = logLevel >= 2 ? (64u << 20) : (4u << 20);
  struct ProgramLog {
    bpf_program* prog;
    std::unique_ptr<char[]> buf;
  };
  std::vector<ProgramLog> logs;
  if (logLevel > 0) {
    bpf_program* prog;
    bpf_object__for_each_program(prog, obj) {
      if (!bpf_program__autoload(prog)) continue;
      ProgramLog entry{prog, std::unique_ptr<char[]>(new char[logSize])};
      entry.buf[0] = '\0';
      bpf_program__set_log_buf(prog, entry.buf.get(), logSize);
      bpf_program__set_log_level(prog, logLevel);
      logs.push_back(std::move(entry));
    }
  }

  LogCapture log(true);
  loadAttempted_ = true;
  int err = bpf_object__load(obj);

  std::string text;
  for (ProgramLog& entry : logs) {
    std::string programLog(entry.buf.get());
    text += "== program " + std::string(bpf_program__name(entry.prog)) + " ==\n" + programLog;
    if (!programLog.empty() && programLog.back() != '\n') text += '\n';
    // The buffers die with this call; libbpf must not keep pointing at them.
    bpf_program__set_log_buf(entry.prog, nullptr, 0);
  }
  // libbpf prints the verifier log itself only when it owns the buffer; with ours, the
  // per-program logs are the verifier's words and must travel with the error.
  if (err) {
    if (!text.empty()) log.append(LIBBPF_INFO, text);
    ThrowBpfError(env, what, err, &log);
  }
  if (logLevel > 0 && !log.text().empty()) text += "== libbpf ==\n" + log.text();

  Napi::Object result = Napi::Object::New(env);
  result.Set("log", text);
  return result;
}

}  // namespace ebpf_studio
