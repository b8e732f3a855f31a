#include "ringbuf.h"

#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "addon_data.h"
#include "args.h"
#include "errors.h"
#include "object.h"

namespace ebpf_studio {

namespace {

constexpr int kPollTimeoutMs = 100;
// Bounds one batch so a flood cannot grow it without limit while JS is busy. 1 MiB: a dwarf
// stack-copy ring moves ~80 MB/s at 10k copies/s, and batches of 8 MiB (capacity doubling to 16)
// times the batches in flight held ~60 MiB of native heap; smaller batches cost only more calls.
constexpr size_t kMaxBatchRecords = 64 * 1024;
constexpr size_t kMaxBatchBytes = 1u << 20;
// Two batches in flight: the poller keeps reading while JS handles one; beyond that it waits,
// the kernel ring fills, and the BPF side counts drops instead of user space buffering forever.
constexpr size_t kMaxQueuedBatches = 2;
// The reused JS buffers (openRingBuffer's reuse option) start this large.
constexpr size_t kFirstReusedBytes = 64u << 10;
constexpr size_t kFirstReusedOffsets = 1024;

}  // namespace

std::shared_ptr<RingPoller> RingPoller::Start(Napi::Env env, int mapFd, Napi::Function callback, Napi::Object owner,
                                              const std::string& what, bool reuse, bool wakeupsOnly) {
  std::shared_ptr<RingPoller> self(new RingPoller(env));
  LogCapture log;
  self->rb_ = ring_buffer__new(mapFd, &RingPoller::OnRecord, self.get(), nullptr);
  if (self->rb_ == nullptr) ThrowBpfError(env, what, errno, &log);
  if (wakeupsOnly) {
    self->stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    self->waitFd_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ring{}, stop{};
    ring.events = EPOLLIN;
    ring.data.fd = ring_buffer__epoll_fd(self->rb_);
    stop.events = EPOLLIN;
    stop.data.fd = self->stopFd_;
    if (self->stopFd_ < 0 || self->waitFd_ < 0 || epoll_ctl(self->waitFd_, EPOLL_CTL_ADD, ring.data.fd, &ring) != 0 ||
        epoll_ctl(self->waitFd_, EPOLL_CTL_ADD, self->stopFd_, &stop) != 0) {
      ThrowBpfError(env, what, errno, nullptr, "setting up the ring buffer's wait");
    }
  }

  self->reuse_ = reuse;
  self->tsfn_ = Tsfn::New(env, callback, "ebpf-studio ring buffer", kMaxQueuedBatches, 1, self.get());
  self->owner_ = Napi::Persistent(owner);
  // Registered after the TSFN so that it runs before Node's own TSFN teardown (hooks run in
  // reverse order) and the thread is joined while the TSFN still exists.
  napi_add_env_cleanup_hook(env, &RingPoller::OnEnvCleanup, self.get());
  self->thread_ = std::thread(&RingPoller::Run, self.get());
  self->started_ = true;
  return self;
}

RingPoller::~RingPoller() {
  if (started_) {
    Stop();
  } else if (rb_ != nullptr) {
    ring_buffer__free(rb_);
  }
  if (waitFd_ >= 0) close(waitFd_);
  if (stopFd_ >= 0) close(stopFd_);
}

void RingPoller::OnEnvCleanup(void* arg) {
  auto* self = static_cast<RingPoller*>(arg);
  self->inEnvCleanup_ = true;
  self->Stop();
}

void RingPoller::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopRequested_ = true;
  if (stopFd_ >= 0) {
    uint64_t one = 1;
    // Ends RunWakeupsOnly's wait; an eventfd write of 1 cannot fail short of overflow.
    (void)!write(stopFd_, &one, sizeof(one));
  }
  // Abort wakes a BlockingCall waiting for queue room; the thread then sees napi_closing.
  tsfn_.Abort();
  thread_.join();
  ring_buffer__free(rb_);
  rb_ = nullptr;
  if (!inEnvCleanup_) napi_remove_env_cleanup_hook(env_, &RingPoller::OnEnvCleanup, this);
  owner_.Reset();
  reusedData_.Reset();
  reusedOffsets_.Reset();
  std::lock_guard<std::mutex> lock(spareMutex_);
  spare_.clear();
}

void RingPoller::Run() {
  if (waitFd_ >= 0) return RunWakeupsOnly();
  while (!stopRequested_.load()) {
    int n = ring_buffer__poll(rb_, kPollTimeoutMs);
    if (stopRequested_.load()) break;
    // A timeout: records submitted with BPF_RB_NO_WAKEUP (a program batching its wakeups) wake
    // nobody, so they are collected here, at most one poll timeout after they were written.
    if (n == 0) n = ring_buffer__consume(rb_);
    if (n < 0 && n != -EINTR) {
      if (n != -ECANCELED) fprintf(stderr, "ebpf-studio: ring buffer poll failed: %s\n", strerror(-n));
      break;
    }
    if (!Flush()) break;
  }
}

void RingPoller::RunWakeupsOnly() {
  while (!stopRequested_.load()) {
    epoll_event ev[2];
    int k = epoll_wait(waitFd_, ev, 2, -1);
    if (stopRequested_.load()) break;
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      fprintf(stderr, "ebpf-studio: ring buffer wait failed: %s\n", strerror(errno));
      break;
    }
    int n = ring_buffer__consume(rb_);
    if (n < 0 && n != -EINTR) {
      if (n != -ECANCELED) fprintf(stderr, "ebpf-studio: ring buffer read failed: %s\n", strerror(-n));
      break;
    }
    if (!Flush()) break;
  }
}

int RingPoller::OnRecord(void* ctx, void* data, size_t size) {
  auto* self = static_cast<RingPoller*>(ctx);
  Batch& batch = *self->batch_;
  const auto* bytes = static_cast<const uint8_t*>(data);
  batch.data.insert(batch.data.end(), bytes, bytes + size);
  batch.offsets.push_back(static_cast<uint32_t>(batch.data.size()));
  if (batch.records() >= kMaxBatchRecords || batch.data.size() >= kMaxBatchBytes) {
    if (!self->Flush()) return -ECANCELED;
  }
  return 0;
}

std::unique_ptr<RingPoller::Batch> RingPoller::TakeBatch() {
  std::lock_guard<std::mutex> lock(spareMutex_);
  if (spare_.empty()) return std::make_unique<Batch>();
  std::unique_ptr<Batch> b = std::move(spare_.back());
  spare_.pop_back();
  return b;
}

void RingPoller::ReturnBatch(std::unique_ptr<Batch> batch) {
  batch->data.clear();
  batch->offsets.resize(1);
  std::lock_guard<std::mutex> lock(spareMutex_);
  // At most the batches in flight plus the one filling come back; the bound is a safeguard.
  if (spare_.size() <= kMaxQueuedBatches) spare_.push_back(std::move(batch));
}

bool RingPoller::Flush() {
  if (batch_->records() == 0) return true;
  Batch* batch = batch_.release();
  batch_ = TakeBatch();
  if (tsfn_.BlockingCall(batch) != napi_ok) {
    delete batch;
    return false;
  }
  return true;
}

// Runs on the JS thread. A null env means the TSFN is being torn down with batches still
// queued (after Stop, when `self` may be gone): only free the batch then.
void RingPoller::Deliver(Napi::Env env, Napi::Function callback, RingPoller* self, Batch* raw) {
  std::unique_ptr<Batch> batch(raw);
  if (env == nullptr || callback.IsEmpty() || self == nullptr) return;
  const size_t bytes = batch->data.size();
  const size_t n = batch->offsets.size();
  Napi::Buffer<uint8_t> data;
  Napi::Uint32Array offsets;
  if (self->reuse_) {
    // From 64 KiB, grown by doubling, never shrunk: about the high-water batch size of this ring.
    size_t haveBytes = self->reusedData_.IsEmpty() ? 0 : self->reusedData_.Value().Length();
    if (haveBytes < bytes)
      self->reusedData_ = Napi::Persistent(Napi::Buffer<uint8_t>::New(env, std::max({bytes, haveBytes * 2, kFirstReusedBytes})));
    size_t haveOffsets = self->reusedOffsets_.IsEmpty() ? 0 : self->reusedOffsets_.Value().ElementLength();
    if (haveOffsets < n)
      self->reusedOffsets_ = Napi::Persistent(Napi::Uint32Array::New(env, std::max({n, haveOffsets * 2, kFirstReusedOffsets})));
    Napi::Buffer<uint8_t> whole = self->reusedData_.Value();
    Napi::Uint32Array allOffsets = self->reusedOffsets_.Value();
    memcpy(whole.Data(), batch->data.data(), bytes);
    memcpy(allOffsets.Data(), batch->offsets.data(), n * sizeof(uint32_t));
    // Views of exactly this batch (Buffer#subarray keeps Buffer's prototype).
    data = whole.Get("subarray").As<Napi::Function>().Call(whole, {Napi::Number::New(env, 0), Napi::Number::New(env, static_cast<double>(bytes))}).As<Napi::Buffer<uint8_t>>();
    offsets = allOffsets.Get("subarray").As<Napi::Function>().Call(allOffsets, {Napi::Number::New(env, 0), Napi::Number::New(env, static_cast<double>(n))}).As<Napi::Uint32Array>();
  } else {
    // A copy, not an external buffer: Electron's V8 sandbox forbids external backing stores.
    data = Napi::Buffer<uint8_t>::Copy(env, batch->data.data(), bytes);
    offsets = Napi::Uint32Array::New(env, n);
    memcpy(offsets.Data(), batch->offsets.data(), n * sizeof(uint32_t));
  }
  self->ReturnBatch(std::move(batch));
  callback.Call({data, offsets});
}

Napi::Function RingBufferHandle::Define(Napi::Env env) {
  return DefineClass(env, "RingBufferHandle", {InstanceMethod<&RingBufferHandle::Close>("close")});
}

Napi::Object RingBufferHandle::New(Napi::Env env, std::shared_ptr<RingPoller> poller) {
  Napi::Object handle = env.GetInstanceData<AddonData>()->ringBufferHandle.New({});
  Unwrap(handle)->poller_ = std::move(poller);
  return handle;
}

RingBufferHandle::RingBufferHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RingBufferHandle>(info) {}

void RingBufferHandle::Close(const Napi::CallbackInfo& info) {
  if (poller_) poller_->Stop();
}

Napi::Value BpfObject::OpenRingBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = StringArg(info, 0, "map");
  Napi::Function callback = FunctionArg(info, 1, "callback");
  std::string what = "openRingBuffer(" + name + ")";
  bool reuse = false;
  bool wakeupsOnly = false;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsObject()) ThrowTypeError(env, what + ": options must be an object ({ reuse?: boolean, wakeupsOnly?: boolean })");
    reuse = info[2].As<Napi::Object>().Get("reuse").ToBoolean().Value();
    wakeupsOnly = info[2].As<Napi::Object>().Get("wakeupsOnly").ToBoolean().Value();
  }
  bpf_map* map = Map(env, name, what);
  int fd = MapFd(env, map, what);
  if (bpf_map__type(map) != BPF_MAP_TYPE_RINGBUF) {
    ThrowBpfError(env, what, EINVAL, nullptr, "'" + name + "' is not a ring buffer map");
  }
  // Handles closed by JS leave stopped pollers behind; forget them here.
  rings_.erase(std::remove_if(rings_.begin(), rings_.end(), [](const auto& r) { return r->stopped(); }),
               rings_.end());
  std::shared_ptr<RingPoller> poller = RingPoller::Start(env, fd, callback, Value(), what, reuse, wakeupsOnly);
  rings_.push_back(poller);
  return RingBufferHandle::New(env, std::move(poller));
}

}  // namespace ebpf_studio
