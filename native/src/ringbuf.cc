#include "ringbuf.h"

#include <bpf/libbpf.h>

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
// Bounds one batch so a flood cannot grow it without limit while JS is busy.
constexpr size_t kMaxBatchRecords = 64 * 1024;
constexpr size_t kMaxBatchBytes = 8u << 20;
// Two batches in flight: the poller keeps reading while JS handles one; beyond that it waits,
// the kernel ring fills, and the BPF side counts drops instead of user space buffering forever.
constexpr size_t kMaxQueuedBatches = 2;

}  // namespace

std::shared_ptr<RingPoller> RingPoller::Start(Napi::Env env, int mapFd, Napi::Function callback, Napi::Object owner,
                                              const std::string& what) {
  std::shared_ptr<RingPoller> self(new RingPoller(env));
  LogCapture log;
  self->rb_ = ring_buffer__new(mapFd, &RingPoller::OnRecord, self.get(), nullptr);
  if (self->rb_ == nullptr) ThrowBpfError(env, what, errno, &log);

  self->tsfn_ = Tsfn::New(env, callback, "ebpf-studio ring buffer", kMaxQueuedBatches, 1);
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
  // Abort wakes a BlockingCall waiting for queue room; the thread then sees napi_closing.
  tsfn_.Abort();
  thread_.join();
  ring_buffer__free(rb_);
  rb_ = nullptr;
  if (!inEnvCleanup_) napi_remove_env_cleanup_hook(env_, &RingPoller::OnEnvCleanup, this);
  owner_.Reset();
}

void RingPoller::Run() {
  while (!stopRequested_.load()) {
    int n = ring_buffer__poll(rb_, kPollTimeoutMs);
    if (stopRequested_.load()) break;
    if (n < 0 && n != -EINTR) {
      if (n != -ECANCELED) fprintf(stderr, "ebpf-studio: ring buffer poll failed: %s\n", strerror(-n));
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

bool RingPoller::Flush() {
  if (batch_->records() == 0) return true;
  Batch* batch = batch_.release();
  batch_ = std::make_unique<Batch>();
  if (tsfn_.BlockingCall(batch) != napi_ok) {
    delete batch;
    return false;
  }
  return true;
}

void RingPoller::Deliver(Napi::Env env, Napi::Function callback, std::nullptr_t*, Batch* raw) {
  std::unique_ptr<Batch> batch(raw);
  // A null env means the TSFN is being torn down with batches still queued.
  if (env == nullptr || callback.IsEmpty()) return;
  // A copy, not an external buffer: Electron's V8 sandbox forbids external backing stores.
  Napi::Buffer<uint8_t> data = Napi::Buffer<uint8_t>::Copy(env, batch->data.data(), batch->data.size());
  Napi::Uint32Array offsets = Napi::Uint32Array::New(env, batch->offsets.size());
  memcpy(offsets.Data(), batch->offsets.data(), batch->offsets.size() * sizeof(uint32_t));
  batch.reset();
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
  bpf_map* map = Map(env, name, what);
  int fd = MapFd(env, map, what);
  if (bpf_map__type(map) != BPF_MAP_TYPE_RINGBUF) {
    ThrowBpfError(env, what, EINVAL, nullptr, "'" + name + "' is not a ring buffer map");
  }
  // Handles closed by JS leave stopped pollers behind; forget them here.
  rings_.erase(std::remove_if(rings_.begin(), rings_.end(), [](const auto& r) { return r->stopped(); }),
               rings_.end());
  std::shared_ptr<RingPoller> poller = RingPoller::Start(env, fd, callback, Value(), what);
  rings_.push_back(poller);
  return RingBufferHandle::New(env, std::move(poller));
}

}  // namespace ebpf_studio
