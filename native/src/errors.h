// BpfError construction and capture of libbpf's own messages.
#pragma once

#include <napi.h>

#include <string>

namespace ebpf_studio {

// Collects what libbpf prints on the current thread for as long as it lives, so a failing call
// can hand its own diagnostics (e.g. the verifier log) to JS instead of to stderr. Captures nest.
class LogCapture {
 public:
  // verbose also keeps LIBBPF_DEBUG messages (wanted during load, noise elsewhere).
  explicit LogCapture(bool verbose = false);
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  const std::string& text() const { return text_; }
  // First warning libbpf gave: usually the most specific reason for a failure.
  const std::string& firstWarning() const { return firstWarning_; }

  void append(int level, const std::string& msg);

 private:
  bool verbose_;
  std::string text_;
  std::string firstWarning_;
  LogCapture* previous_;
};

// Routes libbpf's printing through LogCapture; called once per process.
void InstallLibbpfPrint();

// Throws a BpfError: "<what>: <detail or strerror> (<CODE>)[ — <libbpf hint>]".
// err may be negative (libbpf style) or positive.
[[noreturn]] void ThrowBpfError(Napi::Env env, const std::string& what, int err,
                                const LogCapture* log = nullptr, const std::string& detail = "");

[[noreturn]] void ThrowTypeError(Napi::Env env, const std::string& message);

// Symbolic name for an errno, including kernel-internal and libbpf-specific values.
std::string ErrnoName(int err);
std::string ErrnoText(int err);

}  // namespace ebpf_studio
