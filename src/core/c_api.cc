// The C ABI: argument checks, then the C++ core, with every coll::Error
// turned into its coll_result_t and a last-error message. Nothing throws
// across this boundary.
#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "reduce/reduce.h"

#include <coll/coll.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>

struct coll_comm {
  std::unique_ptr<coll::Communicator> impl;
  std::mutex error_mutex;
  std::string last_error;
  std::string last_error_copy;  // what coll_get_last_error handed out
  std::atomic<bool> busy{false};
};

namespace {

thread_local std::string t_last_error;

void record(coll_comm_t comm, const std::string& message) {
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->error_mutex);
    comm->last_error = message;
  } else {
    t_last_error = message;
  }
  coll::log::info(coll::log::kInit, "error: ", message);
}

// Runs fn, mapping every exception to a result code and a recorded message.
template <typename Fn>
coll_result_t guarded(coll_comm_t comm, Fn&& fn) {
  try {
    fn();
    return COLL_SUCCESS;
  } catch (const coll::Error& e) {
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

coll::Communicator& usable(coll_comm_t comm) {
  if (comm->impl == nullptr) coll::fail(coll::Code::kInvalidUsage, "comm: the communicator was not initialised");
  if (comm->impl->aborted())
    coll::fail(coll::Code::kInvalidUsage, "comm: rank ", comm->impl->rank(), ": the communicator was aborted");
  return *comm->impl;
}

// Refuses a second thread on the same communicator instead of corrupting it.
class BusyGuard {
 public:
  explicit BusyGuard(coll_comm_t comm) : comm_(comm) {
    if (comm_->busy.exchange(true))
      coll::fail(coll::Code::kInvalidUsage, "comm: used by two threads at once (a communicator is not thread-safe)");
  }
  ~BusyGuard() { comm_->busy = false; }

 private:
  coll_comm_t comm_;
};

}  // namespace

extern "C" {

coll_result_t coll_get_version(int* version) {
  return guarded(nullptr, [&] {
    if (version == nullptr) coll::fail(coll::Code::kInvalidArgument, "version: null pointer");
    *version = COLL_VERSION_CODE;
  });
}

coll_result_t coll_get_unique_id(coll_unique_id_t* id) {
  return guarded(nullptr, [&] {
    if (id == nullptr) coll::fail(coll::Code::kInvalidArgument, "id: null pointer");
    *id = coll::bootstrap::create_unique_id().encode();
  });
}

static coll_result_t init_rank(coll_comm_t* comm, int nranks, const coll::bootstrap::UniqueId* id_or_null,
                               const coll_unique_id_t* raw, int rank) {
  return guarded(nullptr, [&] {
    if (comm == nullptr) coll::fail(coll::Code::kInvalidArgument, "comm: null pointer");
    *comm = nullptr;
    if (nranks < 1) coll::fail(coll::Code::kInvalidArgument, "nranks: ", nranks, " is not positive");
    if (rank < 0 || rank >= nranks)
      coll::fail(coll::Code::kInvalidArgument, "rank: ", rank, " is outside [0, ", nranks, ")");
    coll::bootstrap::UniqueId id = id_or_null ? *id_or_null : coll::bootstrap::UniqueId::decode(*raw);
    auto handle = std::make_unique<coll_comm>();
    handle->impl = std::make_unique<coll::Communicator>(nranks, id, rank);
    *comm = handle.release();
  });
}

coll_result_t coll_comm_init_rank(coll_comm_t* comm, int nranks, coll_unique_id_t id, int rank) {
  return init_rank(comm, nranks, nullptr, &id, rank);
}

coll_result_t coll_comm_init_from_env(coll_comm_t* comm) {
  coll::bootstrap::EnvJob job{};
  coll_result_t r = guarded(nullptr, [&] { job = coll::bootstrap::join_from_env(); });
  if (r != COLL_SUCCESS) return r;
  return init_rank(comm, job.nranks, &job.id, nullptr, job.rank);
}

coll_result_t coll_comm_destroy(coll_comm_t comm) {
  if (comm == nullptr) return guarded(nullptr, [] { coll::fail(coll::Code::kInvalidArgument, "comm: null"); });
  delete comm;
  return COLL_SUCCESS;
}

coll_result_t coll_comm_abort(coll_comm_t comm) {
  if (comm == nullptr) return guarded(nullptr, [] { coll::fail(coll::Code::kInvalidArgument, "comm: null"); });
  return guarded(comm, [&] {
    if (comm->impl) comm->impl->abort();
  });
}

coll_result_t coll_comm_rank(coll_comm_t comm, int* rank) {
  if (comm == nullptr) return guarded(nullptr, [] { coll::fail(coll::Code::kInvalidArgument, "comm: null"); });
  return guarded(comm, [&] {
    if (rank == nullptr) coll::fail(coll::Code::kInvalidArgument, "rank: null pointer");
    *rank = comm->impl->rank();
  });
}

coll_result_t coll_comm_size(coll_comm_t comm, int* size) {
  if (comm == nullptr) return guarded(nullptr, [] { coll::fail(coll::Code::kInvalidArgument, "comm: null"); });
  return guarded(comm, [&] {
    if (size == nullptr) coll::fail(coll::Code::kInvalidArgument, "size: null pointer");
    *size = comm->impl->nranks();
  });
}

coll_result_t coll_allreduce(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                             coll_redop_t op, coll_comm_t comm, coll_stream_t stream) {
  using coll::Code;
  using coll::fail;
  if (comm == nullptr) return guarded(nullptr, [] { fail(Code::kInvalidArgument, "allreduce: comm is null"); });
  return guarded(comm, [&] {
    BusyGuard busy(comm);
    coll::Communicator& c = usable(comm);
    int r = c.rank();
    if (!coll::reduce::valid_datatype(datatype))
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": datatype ", static_cast<int>(datatype),
           " is not a coll_datatype_t");
    if (!coll::reduce::valid_redop(op))
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": op ", static_cast<int>(op), " is not a coll_redop_t");
    if (stream != nullptr)
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": stream is not null, but this build has no CUDA");
    size_t elem = coll::reduce::datatype_size(datatype);
    if (count > SIZE_MAX / elem)
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": count ", count, " x ", elem, " bytes overflows size_t");
    size_t bytes = count * elem;
    if (count > 0 && sendbuf == nullptr)
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": sendbuf is null with count ", count);
    if (count > 0 && recvbuf == nullptr)
      fail(Code::kInvalidArgument, "allreduce on rank ", r, ": recvbuf is null with count ", count);
    auto s = reinterpret_cast<uintptr_t>(sendbuf), d = reinterpret_cast<uintptr_t>(recvbuf);
    if (count > 0 && s != d && s < d + bytes && d < s + bytes)
      fail(Code::kInvalidArgument, "allreduce on rank ", r,
           ": sendbuf and recvbuf overlap without being equal (in place needs sendbuf == recvbuf)");
    c.allreduce(sendbuf, recvbuf, count, datatype, op);
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
  }
  return "unknown coll_result_t";
}

const char* coll_get_last_error(coll_comm_t comm) {
  if (comm == nullptr) return t_last_error.c_str();
  std::lock_guard<std::mutex> lock(comm->error_mutex);
  comm->last_error_copy = comm->last_error;
  return comm->last_error_copy.c_str();
}

}  // extern "C"
