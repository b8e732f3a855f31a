// BpfObject: one libbpf bpf_object plus the links and ring buffers created from it.
// Method bodies are spread over object.cc (lifecycle), attach.cc, maps.cc and ringbuf.cc.
#pragma once

#include <napi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

struct bpf_object;
struct bpf_program;
struct bpf_map;
struct bpf_link;

namespace ebpf_studio {

class LogCapture;
class RingPoller;

class BpfObject : public Napi::ObjectWrap<BpfObject> {
 public:
  static void Init(Napi::Env env, Napi::Object exports);

  explicit BpfObject(const Napi::CallbackInfo& info);
  ~BpfObject() override;

 private:
  // object.cc
  Napi::Value Path(const Napi::CallbackInfo& info);
  Napi::Value Programs(const Napi::CallbackInfo& info);
  Napi::Value Maps(const Napi::CallbackInfo& info);
  Napi::Value Variables(const Napi::CallbackInfo& info);
  void SetRodata(const Napi::CallbackInfo& info);
  void SetAutoload(const Napi::CallbackInfo& info);
  void SetMaxEntries(const Napi::CallbackInfo& info);
  Napi::Value Load(const Napi::CallbackInfo& info);
  void Close(const Napi::CallbackInfo& info);

  // attach.cc
  Napi::Value AttachTracepoint(const Napi::CallbackInfo& info);
  Napi::Value AttachRawTracepoint(const Napi::CallbackInfo& info);
  Napi::Value Attach(const Napi::CallbackInfo& info);
  Napi::Value AttachUprobe(const Napi::CallbackInfo& info);
  Napi::Value AttachUsdt(const Napi::CallbackInfo& info);
  Napi::Value AttachPerfEvent(const Napi::CallbackInfo& info);
  void Detach(const Napi::CallbackInfo& info);
  Napi::Value RunIterator(const Napi::CallbackInfo& info);

  // maps.cc
  Napi::Value MapLookup(const Napi::CallbackInfo& info);
  void MapUpdate(const Napi::CallbackInfo& info);
  Napi::Value MapDelete(const Napi::CallbackInfo& info);
  Napi::Value MapDump(const Napi::CallbackInfo& info);
  Napi::Value ReadStack(const Napi::CallbackInfo& info);

  // ringbuf.cc
  Napi::Value OpenRingBuffer(const Napi::CallbackInfo& info);

  // Lookups that throw a BpfError naming `what` when the object is closed or the name is unknown.
  bpf_object* Object(Napi::Env env, const std::string& what);
  bpf_program* Program(Napi::Env env, const std::string& name, const std::string& what);
  bpf_map* Map(Napi::Env env, const std::string& name, const std::string& what);
  // The map's fd; throws unless the object is loaded.
  int MapFd(Napi::Env env, bpf_map* map, const std::string& what);
  void RequireLoaded(Napi::Env env, const std::string& what);
  void RequireNotLoaded(Napi::Env env, const std::string& what);
  // Takes ownership of a link returned by libbpf (NULL + errno on failure) and returns its id.
  Napi::Value AddLink(Napi::Env env, bpf_link* link, const std::string& what, const LogCapture& log);

  // Safe to call any number of times, from JS or from the finalizer.
  void CloseAll();
  void DestroyLinksConcurrently();

  std::string path_;
  bpf_object* obj_ = nullptr;
  // Set once load was attempted: libbpf refuses a second load, and after it the rodata image
  // is the kernel's read-only mapping, which must not be written.
  bool loadAttempted_ = false;
  std::map<uint32_t, bpf_link*> links_;
  uint32_t nextLinkId_ = 1;
  std::vector<std::shared_ptr<RingPoller>> rings_;
};

}  // namespace ebpf_studio
