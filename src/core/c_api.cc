// The C ABI, first half: versions, unique ids, communicators, errors.
// Nothing throws across this boundary (c_api_internal.h: guarded).
#include "base/config.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/spares.h"
#include "core/c_api_internal.h"
#include "transport/registry.h"

#include <coll/coll.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <deque>
#include <mutex>
#include <new>
#include <vector>

namespace coll::capi {

namespace {
thread_local std::string t_last_error;
}

void record(coll_comm_t comm, const std::string& message) {
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->error_mutex);
    comm->last_error = message;
  } else {
    t_last_error = message;
  }
  log::info(log::kInit, "error: ", message);
}

Communicator& usable(coll_comm_t comm) {
  if (comm->impl == nullptr) fail(Code::kInvalidUsage, "comm: the communicator was not initialised");
  comm->impl->check_not_stopped();
  return *comm->impl;
}

const char* thread_last_error() { return t_last_error.c_str(); }

coll_result_t check_handle(coll_comm_t comm, const char* what) {
  if (comm == nullptr) return guarded(nullptr, [&] { fail(Code::kInvalidArgument, what, ": comm is null"); });
  if (comm->state.load(std::memory_order_acquire) != coll_comm::kLive)
    return guarded(nullptr, [&] {
      fail(Code::kInvalidUsage, what, ": comm was destroyed (coll_comm_destroy); its handle must not be used again");
    });
  return COLL_SUCCESS;
}

}  // namespace coll::capi

using coll::Code;
using coll::fail;
using coll::capi::guarded;

namespace {

// COLL_INIT_TIMEOUT_MS, or the larger of the communicator's timeout and ten
// minutes: a large job's ranks may start minutes apart, while its
// operations may want to fail fast.
int64_t init_timeout_from_env(int64_t timeout_ms) {
  if (!coll::config::get_string("COLL_INIT_TIMEOUT_MS").empty()) {
    const int64_t ms = coll::config::get_int("COLL_INIT_TIMEOUT_MS");
    if (ms <= 0) fail(Code::kInvalidArgument, "COLL_INIT_TIMEOUT_MS=", ms, " must be positive");
    return ms;
  }
  constexpr int64_t kDefaultMs = 600000;
  return std::max(kDefaultMs, timeout_ms > 0 ? timeout_ms : coll::config::get_int("COLL_TIMEOUT_MS"));
}

coll_result_t init_rank(coll_comm_t* comm, int nranks, const coll::bootstrap::UniqueId* id_or_null,
                        const coll_unique_id_t* raw, int rank, const coll_config_t* config = nullptr,
                        coll::Communicator::Store store = coll::Communicator::Store::kStarting) {
  return guarded(nullptr, [&] {
    if (comm == nullptr) fail(Code::kInvalidArgument, "comm: null pointer");
    *comm = nullptr;
    if (nranks < 1) fail(Code::kInvalidArgument, "nranks: ", nranks, " is not positive");
    if (rank < 0 || rank >= nranks) fail(Code::kInvalidArgument, "rank: ", rank, " is outside [0, ", nranks, ")");
    int64_t timeout_ms = 0, init_timeout_ms = 0;
    if (config != nullptr) {
      // Fields past what the caller's coll.h knew keep their defaults.
      if (config->size < sizeof(size_t) || config->size > sizeof(coll_config_t))
        fail(Code::kInvalidArgument, "config: size ", config->size, " is not that of a coll_config_t (",
             sizeof(coll_config_t), "); initialise it with COLL_CONFIG_INIT");
      if (config->size >= offsetof(coll_config_t, timeout_ms) + sizeof(int)) timeout_ms = config->timeout_ms;
      if (timeout_ms < 0) fail(Code::kInvalidArgument, "config: timeout_ms ", timeout_ms, " is negative");
      if (config->size >= offsetof(coll_config_t, init_timeout_ms) + sizeof(int))
        init_timeout_ms = config->init_timeout_ms;
      if (init_timeout_ms < 0)
        fail(Code::kInvalidArgument, "config: init_timeout_ms ", init_timeout_ms, " is negative");
    }
    if (init_timeout_ms == 0) init_timeout_ms = init_timeout_from_env(timeout_ms);
    coll::bootstrap::UniqueId id = id_or_null ? *id_or_null : coll::bootstrap::UniqueId::decode(*raw);
    auto handle = std::make_unique<coll_comm>();
    handle->impl = std::make_unique<coll::Communicator>(nranks, id, rank, "", timeout_ms, init_timeout_ms, store);
    *comm = handle.release();
  });
}

// A spare (COLL_SPARE): waits for a seat a growing communicator offers,
// and joins it within the members' timeout, at their store, which listens
// before the offer exists. The members' closing barrier counts it in. A
// growth that fails leaves it waiting for the next, unless the failure is
// its own to fix (a bad setting).
coll_result_t join_as_spare(coll_comm_t* comm) {
  const auto dir = coll::bootstrap::spares_dir();
  for (;;) {
    coll::bootstrap::Seat seat;
    coll_result_t r = guarded(nullptr, [&] {
      if (!dir) fail(Code::kInvalidUsage, "init from env: COLL_SPARE is set but COLL_SPARES_DIR is not");
      seat = coll::bootstrap::take_seat(*dir);
    });
    if (r != COLL_SUCCESS) return r;
    coll_config_t config = COLL_CONFIG_INIT;
    config.init_timeout_ms = static_cast<int>(std::clamp<int64_t>(seat.timeout_ms, 1, INT_MAX));
    r = init_rank(comm, seat.nranks, &seat.id, nullptr, seat.rank, &config, coll::Communicator::Store::kRunning);
    if (r == COLL_SUCCESS) {
      r = coll_barrier(*comm);
      if (r != COLL_SUCCESS) {
        coll::log::warn(coll::log::kInit, "spare: the growth failed as it closed: ", coll_get_last_error(*comm));
        coll_comm_destroy(*comm);
        *comm = nullptr;
      }
    }
    if (r == COLL_SUCCESS) return r;
    coll::bootstrap::leave_seat(*dir, seat);
    if (r == COLL_INVALID_ARGUMENT || r == COLL_INVALID_USAGE || r == COLL_INTERNAL_ERROR) return r;
    coll::log::warn(coll::log::kInit, "spare: joining as rank ", seat.rank, " of ", seat.nranks,
                    " failed; waiting for the next growth");
  }
}

}  // namespace

extern "C" {

coll_result_t coll_get_version(int* version) {
  return guarded(nullptr, [&] {
    if (version == nullptr) fail(Code::kInvalidArgument, "version: null pointer");
    *version = COLL_VERSION_CODE;
  });
}

coll_result_t coll_get_unique_id(coll_unique_id_t* id) {
  return guarded(nullptr, [&] {
    if (id == nullptr) fail(Code::kInvalidArgument, "id: null pointer");
    *id = coll::bootstrap::create_unique_id().encode();
  });
}

coll_result_t coll_comm_init_rank(coll_comm_t* comm, int nranks, coll_unique_id_t id, int rank) {
  return init_rank(comm, nranks, nullptr, &id, rank);
}

coll_result_t coll_comm_init_rank_config(coll_comm_t* comm, int nranks, coll_unique_id_t id, int rank,
                                         const coll_config_t* config) {
  return init_rank(comm, nranks, nullptr, &id, rank, config);
}

coll_result_t coll_comm_init_from_env(coll_comm_t* comm) {
  if (coll::bootstrap::is_spare()) return join_as_spare(comm);
  coll::bootstrap::EnvJob job{};
  coll_result_t r = guarded(nullptr, [&] { job = coll::bootstrap::join_from_env(); });
  if (r != COLL_SUCCESS) return r;
  return init_rank(comm, job.nranks, &job.id, nullptr, job.rank);
}

coll_result_t coll_comm_split(coll_comm_t comm, int color, int key, coll_comm_t* newcomm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_split")) return bad;
  return guarded(comm, [&] {
    if (newcomm == nullptr) fail(Code::kInvalidArgument, "comm_split: newcomm is a null pointer");
    *newcomm = nullptr;
    if (color < 0 && color != COLL_SPLIT_NOCOLOR)
      fail(Code::kInvalidArgument, "comm_split: color ", color, " is negative (use COLL_SPLIT_NOCOLOR)");
    coll::capi::BusyGuard busy(comm);
    auto impl = coll::capi::usable(comm).split(color, key);
    if (impl == nullptr) return;
    auto handle = std::make_unique<coll_comm>();
    handle->impl = std::move(impl);
    *newcomm = handle.release();
  });
}

coll_result_t coll_comm_shrink(coll_comm_t comm, const int* exclude_ranks, int n, coll_comm_t* newcomm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_shrink")) return bad;
  return guarded(comm, [&] {
    if (newcomm == nullptr) fail(Code::kInvalidArgument, "comm_shrink: newcomm is a null pointer");
    *newcomm = nullptr;
    if (n < 0) fail(Code::kInvalidArgument, "comm_shrink: n ", n, " is negative");
    if (n > 0 && exclude_ranks == nullptr)
      fail(Code::kInvalidArgument, "comm_shrink: exclude_ranks is null with n ", n);
    coll::capi::BusyGuard busy(comm);  // failed or aborted is fine: that is what shrink is for
    if (comm->impl == nullptr) fail(Code::kInvalidUsage, "comm_shrink: the communicator was not initialised");
    auto handle = std::make_unique<coll_comm>();
    handle->impl = comm->impl->shrink(std::vector<int>(exclude_ranks, exclude_ranks + n));
    *newcomm = handle.release();
  });
}

coll_result_t coll_comm_grow(coll_comm_t comm, int nnew, const coll_unique_id_t* id, coll_comm_t* newcomm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_grow")) return bad;
  return guarded(comm, [&] {
    if (newcomm == nullptr) fail(Code::kInvalidArgument, "comm_grow: newcomm is a null pointer");
    *newcomm = nullptr;
    coll::capi::BusyGuard busy(comm);
    auto handle = std::make_unique<coll_comm>();
    handle->impl = coll::capi::usable(comm).grow(nnew, id);
    *newcomm = handle.release();
  });
}

coll_result_t coll_comm_agree(coll_comm_t comm, int* flag, int* gone_ranks, int* ngone) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_agree")) return bad;
  return guarded(comm, [&] {
    if (flag == nullptr) fail(Code::kInvalidArgument, "comm_agree: flag is a null pointer");
    if ((gone_ranks == nullptr) != (ngone == nullptr))
      fail(Code::kInvalidArgument, "comm_agree: gone_ranks and ngone must both be given or both be null");
    coll::capi::BusyGuard busy(comm);  // failed, aborted or revoked is fine: that is what agree is for
    if (comm->impl == nullptr) fail(Code::kInvalidUsage, "comm_agree: the communicator was not initialised");
    std::vector<int> gone;
    *flag = comm->impl->agree(*flag, &gone);
    if (ngone != nullptr) {
      std::copy(gone.begin(), gone.end(), gone_ranks);
      *ngone = static_cast<int>(gone.size());
    }
  });
}

coll_result_t coll_comm_destroy(coll_comm_t comm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_destroy")) return bad;
  // Held from here on: the handle is done with.
  if (comm->busy.exchange(true))
    return guarded(comm, [&] {
      fail(Code::kInvalidUsage, "comm_destroy on rank ", comm->impl ? comm->impl->rank() : -1,
           ": another thread is inside a call on this communicator; end that call first (coll_comm_abort ends it "
           "within 100 ms) and destroy the communicator once it has returned");
    });
  {
    std::unique_lock<std::shared_mutex> alone(comm->lifetime);  // after the calls of other threads (Reading)
    comm->state.store(coll_comm::kDestroyed, std::memory_order_release);
  }
  comm->impl.reset();
  {
    std::lock_guard<std::mutex> lock(comm->error_mutex);
    comm->last_error.clear();
  }
  coll::capi::bury(comm);
  return COLL_SUCCESS;
}

coll_result_t coll_comm_abort(coll_comm_t comm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_abort")) return bad;
  return guarded(comm, [&] {
    coll::capi::Reading reading(comm, "comm_abort");
    if (comm->impl) comm->impl->abort();
  });
}

coll_result_t coll_comm_revoke(coll_comm_t comm) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_revoke")) return bad;
  return guarded(comm, [&] {
    coll::capi::Reading reading(comm, "comm_revoke");
    if (comm->impl) comm->impl->revoke();
  });
}

coll_result_t coll_comm_register(coll_comm_t comm, void* ptr, size_t bytes, void** handle) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_register")) return bad;
  return guarded(comm, [&] {
    if (handle == nullptr) fail(Code::kInvalidArgument, "comm_register: handle is a null pointer");
    *handle = nullptr;
    if (ptr == nullptr) fail(Code::kInvalidArgument, "comm_register: ptr is a null pointer");
    if (bytes == 0) fail(Code::kInvalidArgument, "comm_register: bytes is 0");
    coll::capi::BusyGuard busy(comm);
    *handle = coll::capi::usable(comm).register_buffer(ptr, bytes);
  });
}

coll_result_t coll_comm_deregister(coll_comm_t comm, void* handle) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_deregister")) return bad;
  return guarded(comm, [&] {
    if (handle == nullptr) fail(Code::kInvalidArgument, "comm_deregister: handle is a null pointer");
    coll::capi::BusyGuard busy(comm);
    coll::capi::usable(comm).deregister_buffer(handle);
  });
}

coll_result_t coll_comm_get_async_error(coll_comm_t comm, coll_result_t* error) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_get_async_error")) return bad;
  return guarded(comm, [&] {
    if (error == nullptr) fail(Code::kInvalidArgument, "comm_get_async_error: error is a null pointer");
    *error = COLL_SUCCESS;
    coll::capi::Reading reading(comm, "comm_get_async_error");
    if (comm->impl == nullptr) return;
    std::string message;
    *error = comm->impl->async_error(&message);
    if (*error != COLL_SUCCESS) coll::capi::record(comm, message);
  });
}

coll_result_t coll_comm_rank(coll_comm_t comm, int* rank) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_rank")) return bad;
  return guarded(comm, [&] {
    if (rank == nullptr) fail(Code::kInvalidArgument, "rank: null pointer");
    coll::capi::Reading reading(comm, "comm_rank");
    *rank = comm->impl->rank();
  });
}

coll_result_t coll_comm_size(coll_comm_t comm, int* size) {
  if (coll_result_t bad = coll::capi::check_handle(comm, "comm_size")) return bad;
  return guarded(comm, [&] {
    if (size == nullptr) fail(Code::kInvalidArgument, "size: null pointer");
    coll::capi::Reading reading(comm, "comm_size");
    *size = comm->impl->nranks();
  });
}

coll_result_t coll_mem_alloc(void** ptr, size_t bytes) {
  return guarded(nullptr, [&] {
    if (ptr == nullptr) fail(Code::kInvalidArgument, "coll_mem_alloc: ptr is null");
    *ptr = nullptr;
    if (bytes == 0) fail(Code::kInvalidArgument, "coll_mem_alloc: bytes is 0");
    *ptr = coll::transport::allocate_shareable(bytes, "coll-mem");
  });
}

coll_result_t coll_mem_free(void* ptr) {
  return guarded(nullptr, [&] {
    if (ptr != nullptr && !coll::transport::free_shareable(ptr))
      fail(Code::kInvalidArgument, "coll_mem_free: ", ptr, " is not memory from coll_mem_alloc");
  });
}

const char* coll_get_error_string(coll_result_t result) {
  switch (result) {
    case COLL_SUCCESS:
      return "COLL_SUCCESS: no error";
    case COLL_INVALID_ARGUMENT:
      return "COLL_INVALID_ARGUMENT: an argument is invalid";
    case COLL_INVALID_USAGE:
      return "COLL_INVALID_USAGE: the call is not allowed here";
    case COLL_SYSTEM_ERROR:
      return "COLL_SYSTEM_ERROR: a system call failed";
    case COLL_REMOTE_ERROR:
      return "COLL_REMOTE_ERROR: a peer failed or went away";
    case COLL_TIMEOUT:
      return "COLL_TIMEOUT: timed out waiting for a peer";
    case COLL_INTERNAL_ERROR:
      return "COLL_INTERNAL_ERROR: internal error in coll";
    case COLL_IN_PROGRESS:
      return "COLL_IN_PROGRESS: the operation is still running";
    case COLL_REVOKED:
      return "COLL_REVOKED: a rank revoked the communicator; shrink it";
    default:
      break;
  }
  return "unknown coll_result_t";
}

const char* coll_get_last_error(coll_comm_t comm) {
  // A destroyed handle's message is the calling thread's: the refusal.
  if (comm == nullptr || comm->state.load(std::memory_order_acquire) != coll_comm::kLive)
    return coll::capi::thread_last_error();
  // Each thread's own copy: another thread's call cannot change or free it under the caller.
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(comm->error_mutex);
  copy = comm->last_error;
  return copy.c_str();
}

}  // extern "C"
