// Shared by the two halves of the C ABI (c_api.cc: communicators and errors;
// c_api_collectives.cc: operations): the handle behind coll_comm_t, and the
// guard that turns every coll::Error into a result code and a message.
#pragma once

#include "base/error.h"
#include "core/comm.h"

#include <coll/coll.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

// A destroyed handle is kept as a tombstone (impl gone, state kDestroyed)
// among the last kTombstones destroyed, so that a call on it is refused with
// a message instead of reading freed memory.
struct coll_comm {
  enum : uint32_t { kLive = 0x11fe, kDestroyed = 0xdead };
  std::atomic<uint32_t> state{kLive};
  std::unique_ptr<coll::Communicator> impl;
  std::mutex error_mutex;
  std::string last_error;
  std::atomic<bool> busy{false};
  std::shared_mutex lifetime;  // coll_comm_destroy alone; the calls of any thread (Reading) shared
};

// Released by coll_wait or coll_test, a request stays as a tombstone (state
// kReleased, its completion kept for a thread still asking it) among the
// last kTombstones released, so that a second wait on it is refused instead
// of freeing it twice.
struct coll_request {
  enum : uint32_t { kLive = 0x2e9, kReleased = 0xdead };
  coll_comm_t comm;
  std::shared_ptr<coll::Completion> completion;
  std::atomic<uint32_t> state{kLive};
};

namespace coll::capi {

// Records `message` as the last error of comm (or of this thread when null).
void record(coll_comm_t comm, const std::string& message);

// COLL_SUCCESS for a live handle; else the call's result, recorded for the
// calling thread: COLL_INVALID_ARGUMENT for null, COLL_INVALID_USAGE for a
// destroyed communicator. `what` names the call.
coll_result_t check_handle(coll_comm_t comm, const char* what);

// Runs fn, mapping every exception to a result code and a recorded message.
template <typename Fn>
coll_result_t guarded(coll_comm_t comm, Fn&& fn) {
  try {
    fn();
    return COLL_SUCCESS;
  } catch (const Error& e) {
    record(comm, e.what());
    return static_cast<coll_result_t>(e.code());
  } catch (const std::bad_alloc&) {
    record(comm, "out of memory");
    return COLL_SYSTEM_ERROR;
  } catch (const std::exception& e) {
    record(comm, std::string("internal error: ") + e.what());
    return COLL_INTERNAL_ERROR;
  } catch (...) {
    record(comm, "internal error: unknown exception");
    return COLL_INTERNAL_ERROR;
  }
}

// Keeps a released handle (a communicator, a request) among the last
// kTombstones of its kind and frees the oldest. The list is never destroyed
// itself: handles may be released during static destruction.
constexpr size_t kTombstones = 4096;
template <typename Handle>
void bury(Handle* handle) {
  struct Graveyard {
    std::mutex mutex;
    std::deque<Handle*> handles;
  };
  static Graveyard* graveyard = new Graveyard;
  Handle* oldest = nullptr;
  {
    std::lock_guard<std::mutex> lock(graveyard->mutex);
    graveyard->handles.push_back(handle);
    if (graveyard->handles.size() > kTombstones) {
      oldest = graveyard->handles.front();
      graveyard->handles.pop_front();
    }
  }
  delete oldest;
}

// The communicator behind a handle, refusing uninitialised and aborted ones.
Communicator& usable(coll_comm_t comm);

// The last error of calls without a communicator, in this thread.
const char* thread_last_error();

// Refuses a second thread on the same communicator instead of corrupting it.
class BusyGuard {
 public:
  explicit BusyGuard(coll_comm_t comm) : comm_(comm) {
    if (comm_->busy.exchange(true))
      fail(Code::kInvalidUsage, "comm: used by two threads at once (a communicator is not thread-safe)");
  }
  ~BusyGuard() { comm_->busy = false; }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;

 private:
  coll_comm_t comm_;
};

// Held by the calls any thread may make while another is inside one (abort,
// revoke, the async error, rank, size), so that coll_comm_destroy, which
// takes the communicator alone, does not free it under them; refused while
// a destroy runs.
class Reading {
 public:
  Reading(coll_comm_t comm, const char* what) : lock_(comm->lifetime, std::try_to_lock) {
    if (!lock_.owns_lock() || comm->state.load(std::memory_order_acquire) != coll_comm::kLive)
      fail(Code::kInvalidUsage, what,
           ": comm is being destroyed (coll_comm_destroy); its handle must not be used again");
  }

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

}  // namespace coll::capi
