// Per-environment state (one per main thread or worker that loads the addon).
#pragma once

#include <napi.h>

namespace ebpf_studio {

struct AddonData {
  // Constructor of the handles openRingBuffer returns; not exported to JS.
  Napi::FunctionReference ringBufferHandle;
};

}  // namespace ebpf_studio
