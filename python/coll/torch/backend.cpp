// coll as a torch.distributed backend: a c10d::Backend whose collectives are
// coll's non-blocking operations on the tensors' memory. Each returns a Work
// whose future a waiter thread completes, in issue order (coll runs one
// communicator's operations in that order), once coll_wait returns: DDP's
// hooks chain on those futures, so communication overlaps the backward pass.
#include <pybind11/chrono.h>
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <coll/coll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "work.h"

namespace {

using coll_torch::check_tensor;
using coll_torch::CollWork;
using coll_torch::dtype_of;
using coll_torch::op_of;

class CollBackend : public c10d::Backend {
 public:
  CollBackend(coll_comm_t comm, int rank, int size, std::chrono::milliseconds timeout)
      : c10d::Backend(rank, size), comm_(comm), timeout_(timeout) {
    waiter_ = std::thread([this] { wait_loop(); });
  }
  ~CollBackend() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    // Completions may run Python callbacks, which need the GIL this thread may hold.
    auto drain = [&] {
      waiter_.join();
      while (completing_->load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    if (PyGILState_Check()) {
      pybind11::gil_scoped_release nogil;
      drain();
    } else {
      drain();
    }
    coll_comm_destroy(comm_);
  }

  const std::string getBackendName() const override { return "coll"; }

  // Pending and later operations fail at once (coll_comm_abort), on every
  // rank that aborts; the waiter and its futures see the error.
  void abort() override { coll_comm_abort(comm_); }

  c10::intrusive_ptr<Options> getBackendOptions() override { return c10::make_intrusive<Options>("coll", timeout_); }

  // dist.split_group: every rank of this group calls it; the members of
  // `ranks` (this group's ranks, in their new order) form a communicator
  // by coll_comm_split, the others take no part in it.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>&, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>&) override {
    auto at = std::find(ranks.begin(), ranks.end(), getRank());
    const bool member = at != ranks.end();
    const int key = member ? static_cast<int>(at - ranks.begin()) : 0;
    // Splits are disjoint, so the smallest rank in one names it.
    const int color = member ? *std::min_element(ranks.begin(), ranks.end()) : COLL_SPLIT_NOCOLOR;
    coll_comm_t child = nullptr;
    {
      std::lock_guard<std::mutex> issuing(issue_mutex_);  // a collective on comm_, as the others
      if (coll_comm_split(comm_, color, key, &child) != COLL_SUCCESS)
        C10_THROW_ERROR(DistBackendError, std::string("coll: split: ") + coll_get_last_error(comm_));
    }
    if (!member) return nullptr;
    // The child keeps the parent's configuration, its timeout too (coll_comm_split copies it).
    return c10::make_intrusive<CollBackend>(child, key, static_cast<int>(ranks.size()), timeout_);
  }

  // The group's communicator: rank 0 of the group makes the job identity
  // and publishes it in the group's store; the others read it there.
  static c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  const std::chrono::duration<float>& timeout) {
    coll_unique_id_t id;
    const std::string key = "coll_unique_id";
    if (rank == 0) {
      TORCH_CHECK(coll_get_unique_id(&id) == COLL_SUCCESS, "coll: ", coll_get_last_error(nullptr));
      store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
    } else {
      std::vector<uint8_t> got = store->get(key);
      TORCH_CHECK(got.size() == sizeof id.internal, "coll: the group's store holds a unique id of ", got.size(),
                  " bytes");
      std::copy(got.begin(), got.end(), id.internal);
    }
    coll_config_t config = COLL_CONFIG_INIT;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
    TORCH_CHECK(ms >= 0 && ms <= std::numeric_limits<int>::max(), "coll: the group's timeout is ", ms,
                " ms; coll's is at most ", std::numeric_limits<int>::max(), " ms (24.8 days)");
    config.timeout_ms = static_cast<int>(ms);
    coll_comm_t comm = nullptr;
    if (coll_comm_init_rank_config(&comm, size, id, rank, &config) != COLL_SUCCESS)
      TORCH_CHECK(false, "coll: rank ", rank, " of ", size, ": ", coll_get_last_error(nullptr));
    return c10::make_intrusive<CollBackend>(comm, rank, size,
                                            std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    if (tensors.size() == 1) {
      at::Tensor& t = tensors[0];
      check_tensor(t, "the allreduce's tensor");
      return issue(c10d::OpType::ALLREDUCE, tensors, [&](coll_request_t* r) {
        return coll_allreduce_async(t.data_ptr(), t.data_ptr(), t.numel(), dtype_of(t), op_of(opts.reduceOp), comm_,
                                    nullptr, r);
      });
    }
    // A list is one operation: flattened, reduced, copied back. Of one dtype:
    // at::cat would promote a mixed list, and the cast back lose what it held.
    for (const at::Tensor& t : tensors) {
      check_tensor(t, "an allreduce tensor");
      TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                  "coll: an allreduce of a tensor list takes one dtype: ", tensors[0].scalar_type(), " and ",
                  t.scalar_type(), " were given (reduce each dtype's on its own)");
    }
    at::Tensor flat = at::cat(flatten_all(tensors));
    auto work = issue(
        c10d::OpType::ALLREDUCE, tensors,
        [&](coll_request_t* r) {
          return coll_allreduce_async(flat.data_ptr(), flat.data_ptr(), flat.numel(), dtype_of(flat),
                                      op_of(opts.reduceOp), comm_, nullptr, r);
        },
        [flat, tensors]() mutable { unflatten_into(flat, tensors); });
    return work;
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    return allreduce(tensors, opts);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    TORCH_CHECK(tensors.size() == 1, "coll: broadcast takes one tensor per rank");
    at::Tensor& t = tensors[0];
    check_tensor(t, "the broadcast's tensor");
    return issue(c10d::OpType::BROADCAST, tensors, [&](coll_request_t* r) {
      return coll_broadcast_async(t.data_ptr(), t.numel(), dtype_of(t), static_cast<int>(opts.rootRank), comm_, nullptr,
                                  r);
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    TORCH_CHECK(tensors.size() == 1, "coll: reduce takes one tensor per rank");
    at::Tensor& t = tensors[0];
    check_tensor(t, "the reduce's tensor");
    return issue(c10d::OpType::REDUCE, tensors, [&](coll_request_t* r) {
      return coll_reduce_async(t.data_ptr(), t.data_ptr(), t.numel(), dtype_of(t), op_of(opts.reduceOp),
                               static_cast<int>(opts.rootRank), comm_, nullptr, r);
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) override {
    TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1, "coll: allgather takes one tensor per rank");
    at::Tensor& in = inputs[0];
    check_tensor(in, "the allgather's input");
    TORCH_CHECK(static_cast<int>(outputs[0].size()) == getSize(), "coll: allgather needs ", getSize(), " outputs");
    for (const at::Tensor& o : outputs[0]) check_like(o, in, 1, "an allgather output");
    at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
    std::vector<at::Tensor> outs = outputs[0];
    return issue(
        c10d::OpType::ALLGATHER, outs,
        [&](coll_request_t* r) {
          return coll_allgather_async(in.data_ptr(), flat.data_ptr(), in.numel(), dtype_of(in), comm_, nullptr, r);
        },
        [flat, outs]() mutable { unflatten_into(flat, outs); }, {in});
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions&) override {
    check_tensor(in, "the allgather's input");
    check_like(out, in, getSize(), "the allgather's output");
    std::vector<at::Tensor> outs{out};
    return issue(c10d::OpType::_ALLGATHER_BASE, outs,
                 [&](coll_request_t* r) {
                   return coll_allgather_async(in.data_ptr(), out.data_ptr(), in.numel(), dtype_of(in), comm_, nullptr,
                                               r);
                 },
                 {}, {in});
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outs,
                                                                 std::vector<at::Tensor>& ins,
                                                                 const c10d::AllgatherOptions&) override {
    TORCH_CHECK(outs.size() == ins.size(), "coll: ", ins.size(), " allgather inputs but ", outs.size(), " outputs");
    for (size_t k = 0; k < ins.size(); ++k) {
      check_tensor(ins[k], "an allgather input");
      check_like(outs[k], ins[k], getSize(), "an allgather output");
    }
    return each(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, outs, ins, [&](size_t k, coll_request_t* r) {
      return coll_allgather_async(ins[k].data_ptr(), outs[k].data_ptr(), ins[k].numel(), dtype_of(ins[k]), comm_,
                                  nullptr, r);
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1, "coll: reduce_scatter takes one tensor per rank");
    at::Tensor& out = outputs[0];
    check_tensor(out, "the reduce_scatter's output");
    TORCH_CHECK(static_cast<int>(inputs[0].size()) == getSize(), "coll: reduce_scatter needs ", getSize(), " inputs");
    for (const at::Tensor& i : inputs[0]) check_like(i, out, 1, "a reduce_scatter input");
    at::Tensor flat = at::cat(flatten_all(inputs[0]));
    return issue(
        c10d::OpType::REDUCE_SCATTER, outputs,
        [&](coll_request_t* r) {
          return coll_reduce_scatter_async(flat.data_ptr(), out.data_ptr(), out.numel(), dtype_of(out),
                                           op_of(opts.reduceOp), comm_, nullptr, r);
        },
        [flat]() {});  // keeps the flattened input alive until done
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& out, at::Tensor& in,
                                                      const c10d::ReduceScatterOptions& opts) override {
    check_tensor(out, "the reduce_scatter's output");
    check_like(in, out, getSize(), "the reduce_scatter's input");
    std::vector<at::Tensor> outs{out};
    return issue(c10d::OpType::_REDUCE_SCATTER_BASE, outs,
                 [&](coll_request_t* r) {
                   return coll_reduce_scatter_async(in.data_ptr(), out.data_ptr(), out.numel(), dtype_of(out),
                                                    op_of(opts.reduceOp), comm_, nullptr, r);
                 },
                 {}, {in});
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outs,
                                                                 std::vector<at::Tensor>& ins,
                                                                 const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outs.size() == ins.size(), "coll: ", ins.size(), " reduce_scatter inputs but ", outs.size(),
                " outputs");
    for (size_t k = 0; k < ins.size(); ++k) {
      check_tensor(outs[k], "a reduce_scatter output");
      check_like(ins[k], outs[k], getSize(), "a reduce_scatter input");
    }
    return each(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, outs, ins, [&](size_t k, coll_request_t* r) {
      return coll_reduce_scatter_async(ins[k].data_ptr(), outs[k].data_ptr(), outs[k].numel(), dtype_of(outs[k]),
                                       op_of(opts.reduceOp), comm_, nullptr, r);
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits, const c10d::AllToAllOptions&) override {
    TORCH_CHECK(out_splits.empty() && in_splits.empty(),
                "coll: alltoall_single with split sizes is not supported (equal blocks only)");
    check_tensor(in, "the alltoall's input");
    check_like(out, in, 1, "the alltoall's output");
    TORCH_CHECK(in.numel() % getSize() == 0, "coll: alltoall needs equal blocks: ", in.numel(),
                " elements do not divide by ", getSize(), " ranks");
    std::vector<at::Tensor> outs{out};
    return issue(c10d::OpType::ALLTOALL_BASE, outs,
                 [&](coll_request_t* r) {
                   return coll_alltoall_async(in.data_ptr(), out.data_ptr(), in.numel() / getSize(), dtype_of(in),
                                              comm_, nullptr, r);
                 },
                 {}, {in});
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                      int /*tag: in-order matching*/) override {
    TORCH_CHECK(tensors.size() == 1, "coll: send takes one tensor");
    at::Tensor& t = tensors[0];
    check_tensor(t, "the sent tensor");
    return issue(c10d::OpType::SEND, tensors, [&](coll_request_t* r) {
      return coll_send_async(t.data_ptr(), t.numel(), dtype_of(t), dst, comm_, nullptr, r);
    });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int /*tag*/) override {
    TORCH_CHECK(tensors.size() == 1, "coll: recv takes one tensor");
    at::Tensor& t = tensors[0];
    check_tensor(t, "the received tensor");
    return issue(c10d::OpType::RECV, tensors, [&](coll_request_t* r) {
      return coll_recv_async(t.data_ptr(), t.numel(), dtype_of(t), src, comm_, nullptr, r);
    });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    std::vector<at::Tensor> none;
    return issue(c10d::OpType::BARRIER, none, [&](coll_request_t* r) { return coll_barrier_async(comm_, r); });
  }

 private:
  static std::vector<at::Tensor> flatten_all(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& t : ts) flat.push_back(t.reshape({-1}));
    return flat;
  }
  static void unflatten_into(const at::Tensor& flat, std::vector<at::Tensor>& ts) {
    int64_t at = 0;
    for (at::Tensor& t : ts) {
      t.view({-1}).copy_(flat.narrow(0, at, t.numel()));
      at += t.numel();
    }
  }

  // One operation, one Work, which holds `inputs` (and the outputs) until done.
  // Issued and queued under one lock, so that the queue has coll's order
  // when several threads issue on the group.
  template <typename Start>
  c10::intrusive_ptr<c10d::Work> issue(c10d::OpType type, std::vector<at::Tensor>& outputs, Start&& start,
                                       std::function<void()> then = {}, std::vector<at::Tensor> inputs = {}) {
    auto work = c10::make_intrusive<CollWork>(type, outputs, std::move(inputs));
    work->then = std::move(then);
    std::lock_guard<std::mutex> issuing(issue_mutex_);
    coll_request_t r = nullptr;
    if (coll_result_t e = start(&r); e != COLL_SUCCESS)
      C10_THROW_ERROR(DistBackendError, std::string("coll: ") + coll_get_last_error(comm_));
    work->requests.push_back(r);
    enqueue(work);
    return work;
  }

  // Several operations, one Work (the coalesced forms); the tensors are checked before.
  template <typename Start>
  c10::intrusive_ptr<c10d::Work> each(c10d::OpType type, std::vector<at::Tensor>& outputs,
                                      const std::vector<at::Tensor>& inputs, Start&& start) {
    auto work = c10::make_intrusive<CollWork>(type, outputs, inputs);
    std::lock_guard<std::mutex> issuing(issue_mutex_);
    for (size_t k = 0; k < inputs.size(); ++k) {
      coll_request_t r = nullptr;
      if (coll_result_t e = start(k, &r); e != COLL_SUCCESS) {
        const std::string message = coll_get_last_error(comm_);
        for (coll_request_t issued : work->requests) coll_wait(issued);
        C10_THROW_ERROR(DistBackendError, "coll: " + message);
      }
      work->requests.push_back(r);
    }
    enqueue(work);
    return work;
  }

  // `t` is like `like`: a contiguous CPU tensor of its dtype, `times` as many elements.
  static void check_like(const at::Tensor& t, const at::Tensor& like, int64_t times, const char* what) {
    check_tensor(t, what);
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "coll: ", what, " is ", t.scalar_type(), " where ",
                like.scalar_type(), " is expected");
    TORCH_CHECK(t.numel() == like.numel() * times, "coll: ", what, " has ", t.numel(), " elements where ",
                like.numel() * times, " are expected");
  }

  void enqueue(const c10::intrusive_ptr<CollWork>& work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(work);
    }
    cv_.notify_one();
  }

  // The future's callbacks run where it completes, and one may wait for a
  // later operation of this group (PowerSGD's hook does): so never on the
  // waiter thread, which must go on, nor on one shared thread, but each on
  // a thread of its own.
  void complete(c10::intrusive_ptr<CollWork> work) {
    completing_->fetch_add(1);
    std::thread([work = std::move(work), completing = completing_] {
      work->complete();
      completing->fetch_sub(1);
    }).detach();
  }

  // Completes the works in the order they were issued.
  void wait_loop() {
    for (;;) {
      c10::intrusive_ptr<CollWork> work;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        work = queue_.front();
        queue_.pop_front();
      }
      coll_result_t result = COLL_SUCCESS;
      std::string message;  // the first failure's
      for (coll_request_t r : work->requests) {
        coll_result_t e = coll_wait(r);
        if (result == COLL_SUCCESS && e != COLL_SUCCESS) {
          result = e;
          message = coll_get_last_error(comm_);
        }
      }
      work->conclude(result, message);
      complete(std::move(work));
    }
  }

  coll_comm_t comm_;
  std::chrono::milliseconds timeout_;
  std::thread waiter_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<CollWork>> queue_;
  bool stopping_ = false;
  std::mutex issue_mutex_;
  std::shared_ptr<std::atomic<int>> completing_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("create_backend", &CollBackend::create, "coll's c10d backend for a group (store, rank, size, timeout)");
}
