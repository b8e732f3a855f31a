#include "errors.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ebpf_studio {

namespace {

// libbpf prints from the thread that made the call, so a thread-local target gives each call
// its own buffer without locking, and the ring buffer threads never write into a JS call's log.
thread_local LogCapture* current = nullptr;

// The kernel leaks ENOTSUPP (524) from some BPF commands; libc has no name for it.
constexpr int kEnotsupp = 524;

int PrintCallback(enum libbpf_print_level level, const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n < 0) return 0;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  vsnprintf(buf.data(), buf.size(), format, args);
  std::string msg(buf.data(), static_cast<size_t>(n));

  if (current != nullptr) {
    current->append(level, msg);
  } else if (level == LIBBPF_WARN) {
    // Outside a JS call (teardown, polling threads) warnings are still worth seeing.
    fputs(msg.c_str(), stderr);
  }
  return n;
}

struct LibbpfErrno {
  int value;
  const char* name;
};

// libbpf reports ELF and object format problems with its own errno range (4000+).
const LibbpfErrno kLibbpfErrnos[] = {
    {LIBBPF_ERRNO__LIBELF, "LIBBPF_ERRNO__LIBELF"},   {LIBBPF_ERRNO__FORMAT, "LIBBPF_ERRNO__FORMAT"},
    {LIBBPF_ERRNO__KVERSION, "LIBBPF_ERRNO__KVERSION"}, {LIBBPF_ERRNO__ENDIAN, "LIBBPF_ERRNO__ENDIAN"},
    {LIBBPF_ERRNO__INTERNAL, "LIBBPF_ERRNO__INTERNAL"}, {LIBBPF_ERRNO__RELOC, "LIBBPF_ERRNO__RELOC"},
    {LIBBPF_ERRNO__LOAD, "LIBBPF_ERRNO__LOAD"},       {LIBBPF_ERRNO__VERIFY, "LIBBPF_ERRNO__VERIFY"},
    {LIBBPF_ERRNO__PROG2BIG, "LIBBPF_ERRNO__PROG2BIG"}, {LIBBPF_ERRNO__KVER, "LIBBPF_ERRNO__KVER"},
    {LIBBPF_ERRNO__PROGTYPE, "LIBBPF_ERRNO__PROGTYPE"}, {LIBBPF_ERRNO__WRNGPID, "LIBBPF_ERRNO__WRNGPID"},
    {LIBBPF_ERRNO__INVSEQ, "LIBBPF_ERRNO__INVSEQ"},   {LIBBPF_ERRNO__NLPARSE, "LIBBPF_ERRNO__NLPARSE"},
};

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

LogCapture::LogCapture(bool verbose) : verbose_(verbose), previous_(current) { current = this; }

LogCapture::~LogCapture() { current = previous_; }

void LogCapture::append(int level, const std::string& msg) {
  if (level == LIBBPF_DEBUG && !verbose_) return;
  text_ += msg;
  // libbpf warns about RLIMIT_MEMLOCK whenever it cannot raise it, even where the kernel
  // accounts BPF memory to cgroups and the limit is irrelevant: never the reason for a failure.
  if (level == LIBBPF_WARN && firstWarning_.empty() && msg.find("RLIMIT_MEMLOCK") == std::string::npos) {
    firstWarning_ = Trim(msg.substr(0, msg.find('\n')));
  }
}

void InstallLibbpfPrint() { libbpf_set_print(PrintCallback); }

std::string ErrnoName(int err) {
  err = std::abs(err);
  if (err == kEnotsupp) return "ENOTSUPP";
  for (const auto& e : kLibbpfErrnos) {
    if (e.value == err) return e.name;
  }
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "E" + std::to_string(err);
}

std::string ErrnoText(int err) {
  err = std::abs(err);
  if (err == kEnotsupp) return "Operation not supported";
  char buf[256];
  if (libbpf_strerror(err, buf, sizeof(buf)) == 0) return buf;
  return strerror(err);
}

void ThrowBpfError(Napi::Env env, const std::string& what, int err, const LogCapture* log,
                   const std::string& detail) {
  err = std::abs(err);
  if (err == 0) err = EINVAL;  // a failure without errno still needs a meaningful code
  std::string message = what + ": " + (detail.empty() ? ErrnoText(err) : detail) + " (" + ErrnoName(err) + ")";
  if (log != nullptr && !log->firstWarning().empty()) message += " — " + log->firstWarning();

  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("name", "BpfError");
  obj.Set("errno", err);
  obj.Set("code", ErrnoName(err));
  obj.Set("log", log != nullptr ? log->text() : "");
  throw error;
}

void ThrowTypeError(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }

}  // namespace ebpf_studio
