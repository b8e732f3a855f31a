// Addon entry point: the BpfObject class and two process-wide facts about libbpf.
#include <bpf/libbpf.h>
#include <napi.h>

#include <string>

#include "addon_data.h"
#include "asuser.h"
#include "errors.h"
#include "object.h"
#include "ringbuf.h"
#include "unwind.h"

namespace ebpf_studio {

void InitById(Napi::Env env, Napi::Object exports);

namespace {

Napi::Value LibbpfVersion(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), std::to_string(libbpf_major_version()) + "." +
                                           std::to_string(libbpf_minor_version()));
}

Napi::Value NumPossibleCpus(const Napi::CallbackInfo& info) {
  int n = libbpf_num_possible_cpus();
  if (n <= 0) ThrowBpfError(info.Env(), "numPossibleCpus()", n);
  return Napi::Number::New(info.Env(), n);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InstallLibbpfPrint();
  auto* data = new AddonData();
  data->ringBufferHandle = Napi::Persistent(RingBufferHandle::Define(env));
  env.SetInstanceData(data);

  BpfObject::Init(env, exports);
  Unwinder::Init(env, exports);
  exports.Set("libbpfVersion", Napi::Function::New<LibbpfVersion>(env, "libbpfVersion"));
  exports.Set("userFile", Napi::Function::New<UserFile>(env, "userFile"));
  exports.Set("lockShared", Napi::Function::New<LockShared>(env, "lockShared"));
  exports.Set("numPossibleCpus", Napi::Function::New<NumPossibleCpus>(env, "numPossibleCpus"));
  InitById(env, exports);
  return exports;
}

}  // namespace

}  // namespace ebpf_studio

// The macro pastes its argument into an identifier, so it needs an unqualified name.
static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return ebpf_studio::Init(env, exports); }

NODE_API_MODULE(ebpf_studio, InitAddon)
