// What moves a staged operation's bytes between the caller's buffers and
// the host slots, and orders it on the caller's stream: the CUDA stager for
// device buffers (cuda_stager.cc), the host stager that runs the same
// pipeline on host buffers, for tests on machines without a GPU
// (COLL_STAGE_HOST_BUFFERS=1).
#pragma once

#include "base/memory_kind.h"
#include "core/staging/layout.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace coll::staging {

// One operation's hold on the caller's stream, taken at the call.
struct Ticket {
  void* stream = nullptr;  // the caller's
  void* ready = nullptr;   // an event: the stream's work before the call
  uint32_t gate = 0;       // the stream's later work waits for this value
  int device = -1;
  bool on_host = false;  // not held: the caller's thread waits for the operation instead
};

class Stager {
 public:
  virtual ~Stager() = default;
  virtual Slots slots() = 0;
  // On the caller's thread, at the call: later work on `stream` waits until
  // leave(); `buffer` is one of the operation's (its device is used).
  virtual Ticket enter(void* stream, const void* buffer) = 0;
  // On the worker: waits for the stream's work before the call.
  virtual void begin(const Ticket& t) = 0;
  // Starts a copy into (in) or out of slot `slot`; wait() returns once the
  // last one started for that slot and direction is done.
  virtual void copy(int slot, bool in, const Copy2D& c) = 0;
  virtual void wait(int slot, bool in) = 0;
  // Lets the stream go on; never throws (it runs on the way out of errors).
  virtual void leave(const Ticket& t) noexcept = 0;
  // A stream of the stager's own for the copies and reductions of an
  // operation that runs on the caller's buffers in place (a transport moves
  // device memory): not the caller's, which waits until leave().
  virtual void* work_stream() { return nullptr; }
  // Whether calls return before their operation is done, holding the
  // caller's stream; otherwise the caller's thread waits for it.
  virtual bool holds_streams() const { return false; }
};

// Host buffers through the same pipeline: copies are memcpy, done at once.
class HostStager final : public Stager {
 public:
  explicit HostStager(size_t bytes) : bytes_(bytes), memory_(4 * bytes) {}
  Slots slots() override {
    char* m = memory_.data();
    return Slots{{m, m + bytes_}, {m + 2 * bytes_, m + 3 * bytes_}, bytes_};
  }
  Ticket enter(void* stream, const void*) override { return Ticket{.stream = stream}; }
  void begin(const Ticket&) override {}
  void copy(int, bool, const Copy2D& c) override;
  void wait(int, bool) override {}
  void leave(const Ticket&) noexcept override {}

 private:
  size_t bytes_;
  std::vector<char> memory_;
};

// The stager for buffers of `kind` with slots of `bytes`, whose waits for
// a copy give up after `timeout_ms`; throws for a kind this build cannot stage.
std::unique_ptr<Stager> make_stager(MemoryKind kind, size_t bytes, int64_t timeout_ms);

}  // namespace coll::staging
