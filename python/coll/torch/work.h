// The pieces of the torch backend that are not the backend: coll's
// datatype and op for a tensor and a ReduceOp, the tensor checks, and the
// Work that an operation returns, whose future completes once coll's
// requests are done.
#pragma once

#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <coll/coll.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace coll_torch {

inline coll_datatype_t dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kChar:
      return COLL_INT8;
    case at::kByte:
      return COLL_UINT8;
    case at::kInt:
      return COLL_INT32;
    case at::kUInt32:
      return COLL_UINT32;
    case at::kLong:
      return COLL_INT64;
    case at::kUInt64:
      return COLL_UINT64;
    case at::kHalf:
      return COLL_FLOAT16;
    case at::kBFloat16:
      return COLL_BFLOAT16;
    case at::kFloat:
      return COLL_FLOAT32;
    case at::kDouble:
      return COLL_FLOAT64;
    default:
      TORCH_CHECK(
          false, "coll: tensors of ", t.scalar_type(),
          " are not supported (int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64)");
  }
}

inline coll_redop_t op_of(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return COLL_SUM;
    case c10d::ReduceOp::AVG:
      return COLL_AVG;
    case c10d::ReduceOp::PRODUCT:
      return COLL_PROD;
    case c10d::ReduceOp::MIN:
      return COLL_MIN;
    case c10d::ReduceOp::MAX:
      return COLL_MAX;
    default:
      TORCH_CHECK(false, "coll: reduce op ", static_cast<int>(op.op_),
                  " is not supported (SUM, AVG, PRODUCT, MIN, MAX)");
  }
}

inline void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "coll: ", what, " is on ", t.device(),
              "; this backend is registered for CPU tensors");
  TORCH_CHECK(t.is_contiguous(), "coll: ", what, " is not contiguous");
}

// One operation: coll's requests, then what to do once they are done
// (copy a flattened result back), then its future completes. It holds its
// input and output tensors until then: coll reads and writes their memory.
class CollWork : public c10d::Work {
 public:
  CollWork(c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs = {})
      : c10d::Work(-1, type),
        outputs_(std::move(outputs)),
        inputs_(std::move(inputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    // The first of the future's callbacks, which run as it completes: wait(timeout) returns before the
    // users' callbacks have run, as wait() without one does. It runs inside complete(), while the work lives.
    future_->addCallback(
        [this](c10::ivalue::Future&) {
          std::lock_guard<std::mutex> lock(done_mutex_);
          done_.notify_all();
        },
        /*uses_future=*/false);
  }

  bool isCompleted() override { return future_->completed(); }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::exception_ptr exception() const override { return future_->hasError() ? future_->exception_ptr() : nullptr; }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // Without a timeout, as long as the operation takes (coll's own timeout
  // bounds it); with one, an error once it has passed, as torch's Work.
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout == std::chrono::milliseconds::zero()) {  // torch's kNoTimeout
      future_->wait();
    } else {
      std::unique_lock<std::mutex> lock(done_mutex_);
      if (!done_.wait_for(lock, timeout, [this] { return future_->completed(); }))
        C10_THROW_ERROR(DistBackendError, "coll: Work.wait timed out after " + std::to_string(timeout.count()) +
                                              " ms; the operation goes on (coll's timeout ends it)");
    }
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }
  void synchronize() override {}

  std::vector<coll_request_t> requests;
  std::function<void()> then;  // once the requests are done, before the future completes

  // On the waiter thread, in issue order: the outcome, and the copy back
  // (`then`), so that the results of one operation are in place before any
  // later one's future completes.
  void conclude(coll_result_t result, const std::string& message) {
    if (result != COLL_SUCCESS) {
      try {
        C10_THROW_ERROR(DistBackendError, "coll: " + message);
      } catch (...) {
        error_ = std::current_exception();
      }
    } else {
      try {
        if (then) then();
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    inputs_.clear();
  }

  // Then completes the future or fails it; its callbacks run here, on the calling thread.
  void complete() {
    if (error_)
      future_->setError(error_);
    else
      future_->markCompleted(c10::IValue(outputs_));
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> inputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::exception_ptr error_;
  // wait(timeout) sleeps on done_ until the future completes. Under the lock a waiter has either seen
  // it complete or is waiting for the notice.
  std::mutex done_mutex_;
  std::condition_variable done_;
};

}  // namespace coll_torch
