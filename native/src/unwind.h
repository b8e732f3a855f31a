// Unwinder: CFI (DWARF call frame information) unwinding of copied user stacks, one object per
// process, on elfutils libdw. Generic: it knows nothing of any tracer, only of registers, a stack
// copy and the process's mappings.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

struct Dwfl;

namespace ebpf_studio {

class Unwinder : public Napi::ObjectWrap<Unwinder> {
 public:
  static void Init(Napi::Env env, Napi::Object exports);
  explicit Unwinder(const Napi::CallbackInfo& info);
  ~Unwinder() override;

  // Read by libdw's callbacks while one unwind() runs.
  struct Sample {
    pid_t tid = 0;
    const uint64_t* regs = nullptr;
    uint64_t sp = 0;
    const uint8_t* stack = nullptr;
    size_t stackLen = 0;
    bool readOutside = false;
  };
  Sample current;
  pid_t pid() const { return pid_; }
  bool fromMaps() const { return fromMaps_; }

 private:
  Napi::Value Unwind(const Napi::CallbackInfo& info);
  Napi::Value UnwindInto(const Napi::CallbackInfo& info);
  Napi::Value Truncated(const Napi::CallbackInfo& info);
  // Shared by unwind() and unwindInto(): frames into pcs_, the error (if any) into err.
  void Walk(Napi::Env env, const Napi::CallbackInfo& info, size_t max, std::string& err);
  Napi::Value Refresh(const Napi::CallbackInfo& info);
  Napi::Value Modules(const Napi::CallbackInfo& info);
  void Close(const Napi::CallbackInfo& info);

  // (Re)reads /proc/PID/maps into the module list; false with the reason in error_.
  bool Report();
  void Free();

  pid_t pid_ = 0;
  bool fromMaps_ = false;
  std::string maps_;
  Dwfl* dwfl_ = nullptr;
  bool attached_ = false;
  std::string error_;
  // Reused across unwinds: the frame collector keeps its capacity.
  std::vector<uint64_t> pcs_;
  bool lastTruncated_ = false;
};

}  // namespace ebpf_studio
