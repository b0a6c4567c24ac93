// Shared by the two halves of the C ABI (c_api.cc: communicators and errors;
// c_api_collectives.cc: operations): the handle behind coll_comm_t, and the
// guard that turns every coll::Error into a result code and a message.
#pragma once

#include "core/comm.h"
#include "core/error.h"

#include <coll/coll.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

struct coll_comm {
  std::unique_ptr<coll::Communicator> impl;
  std::mutex error_mutex;
  std::string last_error;
  std::string last_error_copy;  // what coll_get_last_error handed out
  std::atomic<bool> busy{false};
};

struct coll_request {
  coll_comm_t comm;
  std::shared_ptr<coll::Completion> completion;
};

namespace coll::capi {

// Records `message` as the last error of comm (or of this thread when null).
void record(coll_comm_t comm, const std::string& message);

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

}  // namespace coll::capi
