// userFile(): one file operation as the target's user, inside the target's root (asuser.cc).
#pragma once

#include <napi.h>

namespace ebpf_studio {

Napi::Value UserFile(const Napi::CallbackInfo& info);
Napi::Value LockShared(const Napi::CallbackInfo& info);

}  // namespace ebpf_studio
