#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "args.h"
#include "errors.h"
#include "object.h"

namespace ebpf_studio {

namespace {

constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;

// libbpf reads tracepoint ids from tracefs, which minimal systems leave unmounted. A failed
// mount is not reported here: the attach that follows fails with the telling error.
void EnsureTracefs() {
  if (access("/sys/kernel/tracing/events", F_OK) == 0) return;
  if (access("/sys/kernel/debug/tracing/events", F_OK) == 0) return;
  mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr);
}

std::string Hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

int OpenCpuClock(uint64_t frequency, int pid, int cpu) {
  struct perf_event_attr attr = {};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = frequency;
  return static_cast<int>(syscall(__NR_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

Napi::Value BpfObject::AddLink(Napi::Env env, bpf_link* link, const std::string& what, const LogCapture& log) {
  if (link == nullptr) ThrowBpfError(env, what, errno, &log);
  uint32_t id = nextLinkId_++;
  links_[id] = link;
  return Napi::Number::New(env, id);
}

Napi::Value BpfObject::AttachTracepoint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  std::string category = StringArg(info, 1, "category");
  std::string name = StringArg(info, 2, "name");
  std::string what = "attachTracepoint(" + program + " to " + category + ":" + name + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);
  EnsureTracefs();
  LogCapture log;
  return AddLink(env, bpf_program__attach_tracepoint(prog, category.c_str(), name.c_str()), what, log);
}

Napi::Value BpfObject::AttachRawTracepoint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  std::string name = StringArg(info, 1, "name");
  std::string what = "attachRawTracepoint(" + program + " to " + name + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);
  LogCapture log;
  return AddLink(env, bpf_program__attach_raw_tracepoint(prog, name.c_str()), what, log);
}

Napi::Value BpfObject::Attach(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  std::string what = "attach(" + program + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);
  // Section-based attach may resolve to a tracepoint ("tp/...").
  EnsureTracefs();
  LogCapture log;
  return AddLink(env, bpf_program__attach(prog), what, log);
}

// An iterator program (SEC("iter/...")) runs once over what it iterates; what it wrote with
// bpf_seq_write comes back as one Buffer. The link lives only for this read.
Napi::Value BpfObject::RunIterator(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  std::string what = "runIterator(" + program + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);
  LogCapture log;
  bpf_link* link = bpf_program__attach_iter(prog, nullptr);
  if (!link) ThrowBpfError(env, what, -errno, &log);
  int fd = bpf_iter_create(bpf_link__fd(link));
  if (fd < 0) {
    int err = fd;
    bpf_link__destroy(link);
    ThrowBpfError(env, what, err, &log);
  }
  std::vector<uint8_t> out;
  uint8_t buf[16384];
  int err = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = -errno;
    if (n <= 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  close(fd);
  bpf_link__destroy(link);
  if (err) ThrowBpfError(env, what, err, &log);
  return Napi::Buffer<uint8_t>::Copy(env, out.data(), out.size());
}

Napi::Value BpfObject::AttachUprobe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  Napi::Object options = ObjectArg(info, 1, "options");
  std::string binary = StringField(options, "options", "binary");
  std::optional<std::string> symbol = OptionalStringField(options, "options", "symbol");
  std::optional<int64_t> offset = OptionalIntField(options, "options", "offset", 0, kMaxSafeInteger);
  int pid = static_cast<int>(IntField(options, "options", "pid", -1, INT32_MAX));
  bool retprobe = BoolField(options, "options", "retprobe");
  if (!symbol && !offset) ThrowTypeError(env, "options.symbol or options.offset is required");

  std::string target = symbol ? *symbol : Hex(static_cast<uint64_t>(*offset));
  std::string what = std::string(retprobe ? "attachUretprobe(" : "attachUprobe(") + program + " to " + target +
                     " in " + binary + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);

  LIBBPF_OPTS(bpf_uprobe_opts, opts);
  opts.retprobe = retprobe;
  // With a name, libbpf resolves the symbol and the offset becomes relative to it.
  opts.func_name = symbol ? symbol->c_str() : nullptr;
  size_t fileOffset = symbol ? 0 : static_cast<size_t>(*offset);
  LogCapture log;
  return AddLink(env, bpf_program__attach_uprobe_opts(prog, pid, binary.c_str(), fileOffset, &opts), what, log);
}

Napi::Value BpfObject::AttachUsdt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  Napi::Object options = ObjectArg(info, 1, "options");
  std::string binary = StringField(options, "options", "binary");
  std::string provider = StringField(options, "options", "provider");
  std::string name = StringField(options, "options", "name");
  int pid = static_cast<int>(IntField(options, "options", "pid", -1, INT32_MAX));
  uint64_t cookie = static_cast<uint64_t>(OptionalIntField(options, "options", "cookie", 0, kMaxSafeInteger).value_or(0));
  std::string what = "attachUsdt(" + provider + ":" + name + " in " + binary + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);

  LIBBPF_OPTS(bpf_usdt_opts, opts);
  opts.usdt_cookie = cookie;
  LogCapture log;
  return AddLink(env, bpf_program__attach_usdt(prog, pid, binary.c_str(), provider.c_str(), name.c_str(), &opts),
                 what, log);
}

Napi::Value BpfObject::AttachPerfEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string program = StringArg(info, 0, "program");
  Napi::Object options = ObjectArg(info, 1, "options");
  std::string type = StringField(options, "options", "type");
  if (type != "cpu-clock") ThrowTypeError(env, "options.type must be 'cpu-clock'");
  uint64_t frequency = static_cast<uint64_t>(IntField(options, "options", "frequency", 1, 1000000));
  int cpu = static_cast<int>(IntField(options, "options", "cpu", 0, INT32_MAX));
  int pid = static_cast<int>(OptionalIntField(options, "options", "pid", -1, INT32_MAX).value_or(-1));
  std::string what = "attachPerfEvent(" + program + " on cpu " + std::to_string(cpu) + ")";
  bpf_program* prog = Program(env, program, what);
  RequireLoaded(env, what);

  int fd = OpenCpuClock(frequency, pid, cpu);
  if (fd < 0) ThrowBpfError(env, what, errno, nullptr, "perf_event_open: " + ErrnoText(errno));
  LogCapture log;
  bpf_link* link = bpf_program__attach_perf_event(prog, fd);
  if (link == nullptr) {
    // Only a successful attach hands the perf fd to the link (which closes it on destroy).
    int err = errno;
    close(fd);
    ThrowBpfError(env, what, err, &log);
  }
  return AddLink(env, link, what, log);
}

void BpfObject::Detach(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t id = IntArg(info, 0, "link", -kMaxSafeInteger, kMaxSafeInteger);
  std::string what = "detach(" + std::to_string(id) + ")";
  auto it = id > 0 && id <= UINT32_MAX ? links_.find(static_cast<uint32_t>(id)) : links_.end();
  if (it == links_.end()) ThrowBpfError(env, what, ENOENT, nullptr, "no such link");
  bpf_link* link = it->second;
  links_.erase(it);
  LogCapture log;
  int err = bpf_link__destroy(link);
  if (err) ThrowBpfError(env, what, err, &log);
}

}  // namespace ebpf_studio
