// CFI unwinding of user stacks copied by a BPF program (bpf/profile.bpf.c, dwarf mode).
//
// Why user space and libdw rather than unwind tables in BPF maps (b):
//  - libdw (elfutils, the library perf's --call-graph dwarf uses) already interprets every CFI
//    form we meet: .eh_frame and .debug_frame, DWARF expressions (PLT entries, signal frames),
//    remember/restore state in epilogues; and it falls back to the frame-pointer chain for code
//    that has no CFI at all (JIT code). An in-kernel table unwinder must re-implement all of that
//    and still special-case PLT expressions.
//  - The cost lands where it is cheap. Measured on this project's machines (bench rows
//    "profile unwind"): the kernel copies 16 KiB of stack per sample in ~2 µs, and libdw unwinds
//    a sample in tens of µs once a module's CFI is cached. At 99 Hz on every CPU that is well under
//    1 % of one CPU, in the helper, not in the profiled program.
//  - One Dwfl per process is reused across samples, so each module's ELF and CFI are parsed once.
#include "unwind.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>
#include <dwarf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "errors.h"

namespace ebpf_studio {

namespace {

// libdw's message for its last error, never NULL: dwfl_errmsg passes an error libelf or libdw
// raised on to elf_errmsg/dwarf_errmsg, which return NULL once that library's own error was
// cleared (seen with a process exiting mid-unwind), and a NULL char* into std::string crashes.
const char* LastDwflError() {
  const char* m = dwfl_errmsg(-1);
  return m != nullptr ? m : "unwinding failed (libdw gave no message)";
}

const char* LastElfError() {
  const char* m = elf_errmsg(-1);
  return m != nullptr ? m : "libelf gave no message";
}

constexpr unsigned kNumRegs = 17;  // x86_64 DWARF 0..16 (16 = return address column, rip)
constexpr int kMaxFrames = 1024;

// The Unwinder whose callbacks run now: libdw's find_elf callback has no user argument of ours.
thread_local Unwinder* active = nullptr;

// Opens the module through the process's own root first, so binaries of a process in another
// mount namespace (a container) are the ones it really maps.
int FindElf(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, char** fileName, Elf** elfp) {
  if (active && !active->fromMaps() && modname && modname[0] == '/') {
    std::string path = "/proc/" + std::to_string(active->pid()) + "/root" + modname;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      *fileName = strdup(path.c_str());
      return fd;
    }
  }
  return dwfl_linux_proc_find_elf(mod, userdata, modname, base, fileName, elfp);
}

char* debuginfoPath = nullptr;

const Dwfl_Callbacks kCallbacks = {
    FindElf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &debuginfoPath,
};

// The ELF handle libdw builds each unwinder's register backend (Ebl) from: our own executable,
// opened once and kept for the life of the process. The profiled processes run on this machine's
// architecture, whose registers the BPF programs copy (kNumRegs). Handing dwfl_attach_state an Elf
// makes the Ebl the process state's own (freed with the Dwfl). With elf = NULL libdw borrows the
// Ebl of the first module it can open, and dwfl_report_end frees that module, Ebl included, once
// the process no longer maps it: after an exec, or a dlclose of that module, refresh() left the
// state pointing at freed memory, and the next unwind read the register count from whatever the
// allocator had put there since. That was the "dwfl_frame.c: state_alloc: nregs" assertion that
// aborted processes running other sessions beside a profile (valgrind: a read 376 bytes into a
// 416-byte block freed by dwfl_report_end, from dwfl_thread_getframes).
Elf* HostElf() {
  static Elf* elf = [] {
    elf_version(EV_CURRENT);
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, nullptr) : nullptr;
  }();
  return elf;
}

pid_t NextThread(Dwfl*, void* arg, void** threadArg) {
  if (*threadArg != nullptr) return 0;
  auto* self = static_cast<Unwinder*>(arg);
  *threadArg = self;
  return self->current.tid;
}

bool GetThread(Dwfl*, pid_t tid, void* arg, void** threadArg) {
  auto* self = static_cast<Unwinder*>(arg);
  if (tid != self->current.tid) return false;
  *threadArg = self;
  return true;
}

// Only the copied stack is readable. Addresses outside it (rare: a CFA expression that reads
// memory elsewhere) fail, and the unwind ends there.
bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* self = static_cast<Unwinder*>(arg);
  const Unwinder::Sample& s = self->current;
  if (addr < s.sp || addr - s.sp + sizeof(Dwarf_Word) > s.stackLen) {
    self->current.readOutside = true;
    return false;
  }
  memcpy(result, s.stack + (addr - s.sp), sizeof(Dwarf_Word));
  return true;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
  auto* self = static_cast<Unwinder*>(arg);
  Dwarf_Word regs[kNumRegs];
  for (unsigned i = 0; i < kNumRegs; i++) regs[i] = self->current.regs[i];
  return dwfl_thread_state_registers(thread, 0, kNumRegs, regs);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    NextThread, GetThread, MemoryRead, SetInitialRegisters, nullptr, nullptr,
};

struct FrameCollector {
  std::vector<uint64_t>& pcs;
  size_t max;
};

int OnFrame(Dwfl_Frame* frame, void* arg) {
  auto* c = static_cast<FrameCollector*>(arg);
  Dwarf_Addr pc;
  bool activation;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  if (pc == 0) return DWARF_CB_ABORT;
  c->pcs.push_back(pc);
  return c->pcs.size() >= c->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

struct ModuleCollector {
  Napi::Env env;
  Napi::Array out;
  uint32_t n;
};

int OnModule(Dwfl_Module* mod, void**, const char* name, Dwarf_Addr start, void* arg) {
  auto* c = static_cast<ModuleCollector*>(arg);
  Dwarf_Addr low = 0, high = 0;
  dwfl_module_info(mod, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr);
  Dwarf_Addr bias;
  const char* cfi = "none";
  if (dwfl_module_eh_cfi(mod, &bias) != nullptr)
    cfi = "eh_frame";
  else if (dwfl_module_dwarf_cfi(mod, &bias) != nullptr)
    cfi = "debug_frame";
  Napi::Object o = Napi::Object::New(c->env);
  o.Set("name", Napi::String::New(c->env, name ? name : ""));
  o.Set("start", Napi::BigInt::New(c->env, static_cast<uint64_t>(low)));
  o.Set("end", Napi::BigInt::New(c->env, static_cast<uint64_t>(high)));
  o.Set("cfi", Napi::String::New(c->env, cfi));
  c->out.Set(c->n++, o);
  return DWARF_CB_OK;
}

}  // namespace

void Unwinder::Init(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = DefineClass(env, "Unwinder",
                                    {
                                        InstanceMethod<&Unwinder::Unwind>("unwind"),
                                        InstanceMethod<&Unwinder::UnwindInto>("unwindInto"),
                                        InstanceAccessor<&Unwinder::Truncated>("truncated"),
                                        InstanceMethod<&Unwinder::Refresh>("refresh"),
                                        InstanceMethod<&Unwinder::Modules>("modules"),
                                        InstanceMethod<&Unwinder::Close>("close"),
                                    });
  exports.Set("Unwinder", ctor);
}

Unwinder::Unwinder(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Unwinder>(info) {
  Napi::Env env = info.Env();
  if (info.Length() >= 1 && info[0].IsObject()) {
    // { maps: "<text in /proc/PID/maps format>" }: a recorded process (unit tests, saved sessions)
    Napi::Value m = info[0].As<Napi::Object>().Get("maps");
    if (!m.IsString()) ThrowTypeError(env, "new Unwinder({ maps }): maps must be a string in /proc/PID/maps format");
    maps_ = m.As<Napi::String>().Utf8Value();
    fromMaps_ = true;
    pid_ = 1;  // an identifier for libdw only; no /proc access in this mode
  } else {
    if (info.Length() < 1 || !info[0].IsNumber()) ThrowTypeError(env, "new Unwinder(pid | { maps }): pid must be a number");
    pid_ = info[0].As<Napi::Number>().Int32Value();
    if (pid_ <= 0) ThrowTypeError(env, "new Unwinder(pid): pid must be positive");
  }
  dwfl_ = dwfl_begin(&kCallbacks);
  if (!dwfl_) ThrowBpfError(env, "new Unwinder(" + std::to_string(pid_) + ")", ENOMEM, nullptr, LastDwflError());
  if (!Report()) {
    std::string e = error_;
    Free();
    ThrowBpfError(env, "new Unwinder(" + std::to_string(pid_) + ")", ESRCH, nullptr, e);
  }
}

Unwinder::~Unwinder() { Free(); }

void Unwinder::Free() {
  if (dwfl_) dwfl_end(dwfl_);
  dwfl_ = nullptr;
  attached_ = false;
}

bool Unwinder::Report() {
  active = this;
  dwfl_report_begin(dwfl_);
  int r;
  if (fromMaps_) {
    FILE* f = fmemopen(const_cast<char*>(maps_.data()), maps_.size(), "r");
    r = f ? dwfl_linux_proc_maps_report(dwfl_, f) : errno;
    if (f) fclose(f);
  } else {
    r = dwfl_linux_proc_report(dwfl_, pid_);
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);
  if (r != 0) {
    active = nullptr;
    error_ = (fromMaps_ ? std::string("reading the recorded maps") : std::string("reading /proc/") + std::to_string(pid_) + "/maps") + ": " + (r > 0 ? strerror(r) : LastDwflError());
    return false;
  }
  if (!attached_) {
    // Our own Elf, never NULL (see HostElf): the register backend must outlive every module.
    Elf* host = HostElf();
    if (host == nullptr) {
      active = nullptr;
      error_ = std::string("opening /proc/self/exe for the register layout: ") + LastElfError();
      return false;
    }
    attached_ = dwfl_attach_state(dwfl_, host, pid_, &kThreadCallbacks, this);
    if (!attached_) {
      active = nullptr;
      error_ = std::string("dwfl_attach_state: ") + LastDwflError();
      return false;
    }
  }
  active = nullptr;
  return true;
}

// Checks (tid, regs, stack) and unwinds into pcs_ (at least the pc), at most `max` frames.
void Unwinder::Walk(Napi::Env env, const Napi::CallbackInfo& info, size_t max, std::string& err) {
  auto regs = info[1].As<Napi::Buffer<uint8_t>>();
  auto stack = info[2].As<Napi::Buffer<uint8_t>>();
  if (regs.Length() < kNumRegs * 8) ThrowTypeError(env, "unwind(): regs must hold 17 little-endian u64 (DWARF order)");
  uint64_t regv[kNumRegs];
  memcpy(regv, regs.Data(), sizeof(regv));

  current = Sample{};
  current.tid = info[0].As<Napi::Number>().Int32Value();
  current.regs = regv;
  current.sp = regv[7];
  current.stack = stack.Data();
  current.stackLen = stack.Length();

  pcs_.clear();
  FrameCollector c{pcs_, max};
  active = this;
  int r = dwfl_getthread_frames(dwfl_, current.tid, OnFrame, &c);
  active = nullptr;
  if (r == -1) err = LastDwflError();
  if (pcs_.empty()) pcs_.push_back(regv[16]);
  // libdw ends an unwind quietly (no error) when a read fails; a read past the copied bytes is
  // how we know the stack went on above what was copied.
  lastTruncated_ = current.readOutside;
  current = Sample{};
}

// unwind(tid, regs: Buffer(17 * 8), stack: Buffer, maxFrames) →
//   { frames: BigUint64Array (leaf first: the pc, then return addresses), error?: string, truncated: boolean }
Napi::Value Unwinder::Unwind(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dwfl_) ThrowBpfError(env, "unwind()", EBADF, nullptr, "the unwinder is closed");
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsBuffer() || !info[2].IsBuffer())
    ThrowTypeError(env, "unwind(tid, regs, stack[, maxFrames])");
  size_t max = 127;
  if (info.Length() > 3 && info[3].IsNumber()) {
    int m = info[3].As<Napi::Number>().Int32Value();
    if (m < 1 || m > kMaxFrames) ThrowTypeError(env, "unwind(): maxFrames must be 1..1024");
    max = static_cast<size_t>(m);
  }
  std::string err;
  Walk(env, info, max, err);
  Napi::Object out = Napi::Object::New(env);
  auto frames = Napi::BigUint64Array::New(env, pcs_.size());
  for (size_t i = 0; i < pcs_.size(); i++) frames[i] = pcs_[i];
  out.Set("frames", frames);
  out.Set("truncated", Napi::Boolean::New(env, lastTruncated_));
  if (!err.empty()) out.Set("error", Napi::String::New(env, err));
  return out;
}

// unwindInto(tid, regs, stack, out: BigUint64Array) → the number of frames written to out (at
// most its length; leaf first); `truncated` tells about this unwind. For callers that unwind
// thousands of stacks a second (memleak --unwind dwarf): nothing is allocated per call, where
// unwind() makes an object and an off-heap typed array that live until the next GC.
Napi::Value Unwinder::UnwindInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dwfl_) ThrowBpfError(env, "unwindInto()", EBADF, nullptr, "the unwinder is closed");
  if (info.Length() < 4 || !info[0].IsNumber() || !info[1].IsBuffer() || !info[2].IsBuffer() || !info[3].IsTypedArray() ||
      info[3].As<Napi::TypedArray>().TypedArrayType() != napi_biguint64_array)
    ThrowTypeError(env, "unwindInto(tid, regs, stack, out: BigUint64Array)");
  auto out = info[3].As<Napi::BigUint64Array>();
  size_t max = out.ElementLength();
  if (max < 1 || max > kMaxFrames) ThrowTypeError(env, "unwindInto(): out must hold 1..1024 frames");
  std::string err;
  Walk(env, info, max, err);
  memcpy(out.Data(), pcs_.data(), pcs_.size() * sizeof(uint64_t));
  return Napi::Number::New(env, static_cast<double>(pcs_.size()));
}

Napi::Value Unwinder::Truncated(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), lastTruncated_); }

// After a dlopen or an exec: re-read the mappings. Modules already known keep their cached CFI.
Napi::Value Unwinder::Refresh(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dwfl_) ThrowBpfError(env, "refresh()", EBADF, nullptr, "the unwinder is closed");
  return Napi::Boolean::New(env, Report());
}

// modules() → [{ name, start, end, cfi: 'eh_frame' | 'debug_frame' | 'none' }]
Napi::Value Unwinder::Modules(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!dwfl_) ThrowBpfError(env, "modules()", EBADF, nullptr, "the unwinder is closed");
  ModuleCollector c{env, Napi::Array::New(env), 0};
  active = this;
  dwfl_getmodules(dwfl_, OnModule, &c, 0);
  active = nullptr;
  return c.out;
}

void Unwinder::Close(const Napi::CallbackInfo&) { Free(); }

}  // namespace ebpf_studio
