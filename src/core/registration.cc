// coll_comm_register / coll_comm_deregister: buffers registered once with
// every transport of the communicator (Transport::register_memory), as a
// framework does with its gradient buffers.
#include "base/error.h"
#include "core/comm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

namespace coll {

// The transports are driven by one thread at a time: with a worker, the
// task runs there, after the operations issued before it.
void Communicator::in_order(const std::function<void()>& task) {
  check_usable();
  if (worker_ == nullptr) return task();
  auto done = std::make_shared<Completion>();
  worker_->enqueue([&task, done] {
    try {
      task();
      done->finish(COLL_SUCCESS, "");
    } catch (const Error& e) {
      done->finish(static_cast<coll_result_t>(e.code()), e.what());
    } catch (const std::bad_alloc&) {
      done->finish(COLL_SYSTEM_ERROR, "out of memory");
    } catch (const std::exception& e) {  // the worker's loop would end the process
      done->finish(COLL_INTERNAL_ERROR, std::string("internal error: ") + e.what());
    }
  });
  if (coll_result_t result = done->wait(); result != COLL_SUCCESS)
    throw Error(static_cast<Code>(result), done->message());
}

void* Communicator::register_buffer(void* ptr, size_t bytes) {
  uintptr_t id = 0;
  in_order([&] {
    for (Registered& r : registered_)
      if (r.ptr == ptr && r.bytes == bytes) {
        ++r.count;
        id = r.id;
        return;
      }
    const transport::Registration* registration = transport_->register_memory(ptr, bytes, transport::MemoryKind::kHost);
    static std::atomic<uintptr_t> made{0};  // every communicator's
    id = ++made;
    registered_.push_back(Registered{ptr, bytes, 1, registration, id});
  });
  return reinterpret_cast<void*>(id);
}

void Communicator::deregister_buffer(void* handle) {
  in_order([&] {
    const auto id = reinterpret_cast<uintptr_t>(handle);
    auto it = std::find_if(registered_.begin(), registered_.end(), [&](const Registered& r) { return r.id == id; });
    if (it == registered_.end())
      fail(Code::kInvalidArgument, "comm_deregister: rank ", rank_,
           ": the handle is not a registration of this communicator (or it was released already)");
    if (--it->count > 0) return;
    if (it->registration != nullptr) transport_->deregister(it->registration);
    registered_.erase(it);
  });
}

}  // namespace coll
