// Ring buffer polling on a native thread, with batches handed to JS through a
// ThreadSafeFunction, and the small JS handle that closes it.
#pragma once

#include <napi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct ring_buffer;

namespace ebpf_studio {

class RingPoller {
 public:
  // Throws a BpfError naming `what` if libbpf cannot set the ring buffer up. `owner` (the
  // BpfObject) is kept alive while polling, so a forgotten object does not stop the events.
  // With reuse, every batch is copied into the same JS buffers (grown when a batch outgrows
  // them), valid only while the callback runs: for high-volume rings whose records the
  // callback consumes at once, so no garbage Buffer per batch waits for a GC.
  // With wakeupsOnly, the thread sleeps until the kernel wakes it (a record submitted without
  // BPF_RB_NO_WAKEUP) or Stop(): no poll timeout, so an idle ring costs no wakeup at all; records
  // a program submits with BPF_RB_NO_WAKEUP then wait for the next woken one.
  static std::shared_ptr<RingPoller> Start(Napi::Env env, int mapFd, Napi::Function callback, Napi::Object owner,
                                           const std::string& what, bool reuse, bool wakeupsOnly);
  ~RingPoller();
  RingPoller(const RingPoller&) = delete;
  RingPoller& operator=(const RingPoller&) = delete;

  // JS thread only; idempotent. Batches not yet delivered are dropped.
  void Stop();
  bool stopped() const { return stopped_; }

 private:
  struct Batch {
    std::vector<uint8_t> data;
    std::vector<uint32_t> offsets{0};
    size_t records() const { return offsets.size() - 1; }
  };
  static void Deliver(Napi::Env env, Napi::Function callback, RingPoller* self, Batch* batch);
  using Tsfn = Napi::TypedThreadSafeFunction<RingPoller, Batch, &RingPoller::Deliver>;
  // Batches are recycled, not freed: their vectors keep their capacity, so a busy ring reuses
  // the same few MiB instead of allocating (and fragmenting the heap with) fresh ones per batch.
  std::unique_ptr<Batch> TakeBatch();
  void ReturnBatch(std::unique_ptr<Batch> batch);

  explicit RingPoller(napi_env env) : env_(env) {}
  static int OnRecord(void* ctx, void* data, size_t size);
  static void OnEnvCleanup(void* arg);
  void Run();
  // Run() of a wakeupsOnly poller: epoll on the ring's epoll fd and stopFd_, no timeout.
  void RunWakeupsOnly();
  // Poller thread: hands the pending batch to JS; false once the TSFN is closing.
  bool Flush();

  napi_env env_;
  ring_buffer* rb_ = nullptr;
  Tsfn tsfn_;
  Napi::ObjectReference owner_;
  std::thread thread_;
  std::atomic<bool> stopRequested_{false};
  bool started_ = false;
  bool stopped_ = false;
  bool inEnvCleanup_ = false;
  std::unique_ptr<Batch> batch_ = std::make_unique<Batch>();
  std::mutex spareMutex_;
  std::vector<std::unique_ptr<Batch>> spare_;
  bool reuse_ = false;
  // wakeupsOnly: the poller's own epoll set (the ring's epoll fd and stopFd_), and the eventfd
  // Stop() writes to end the wait.
  int waitFd_ = -1;
  int stopFd_ = -1;
  Napi::Reference<Napi::Buffer<uint8_t>> reusedData_;
  Napi::Reference<Napi::Uint32Array> reusedOffsets_;
};

class RingBufferHandle : public Napi::ObjectWrap<RingBufferHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::shared_ptr<RingPoller> poller);
  explicit RingBufferHandle(const Napi::CallbackInfo& info);

 private:
  void Close(const Napi::CallbackInfo& info);
  std::shared_ptr<RingPoller> poller_;
};

}  // namespace ebpf_studio
