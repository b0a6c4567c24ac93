// coll_perf — collective bandwidth and latency, in the manner of nccl-tests.
//
//   collrun -n 4 coll_perf -b 8 -e 64M -f 4
//   collrun -n 4 coll_perf -C allgather -b 1K -e 16M
//   mpirun -np 2 coll_perf -b 1M -e 1M
//   coll_perf                     (one rank, when no launcher is found)
//
// For each size: one checked run (inputs whose exact result is known
// whatever the reduction order; #wrong counts mismatched elements over all
// ranks), warm-up, then timed iterations. time is the slowest rank's mean per
// iteration; algbw = bytes / time; busbw = algbw * the collective's factor
// (perf_ops.h), the per-link traffic, comparable across rank counts.
#include "perf_common.h"
#include "perf_ops.h"
#include "reduce/dtype.h"
#include "reduce/reference.h"

#include <coll/coll.h>
#ifdef COLL_PERF_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using perf::die;
using perf::Options;

void check(coll_result_t r, coll_comm_t comm, const char* what) {
  if (r == COLL_SUCCESS) return;
  std::fprintf(stderr, "coll_perf: %s failed: %s: %s\n", what, coll_get_error_string(r), coll_get_last_error(comm));
  std::exit(1);
}

bool launched() {
  for (const char* v : {"COLL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

#ifdef COLL_PERF_CUDA
void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "coll_perf: %s failed: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// -G 1: this rank's GPU, by local rank when the node has several.
void choose_gpu() {
  int gpus = 0;
  check_cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount (-G 1 needs a GPU)");
  const char* local = std::getenv("LOCAL_RANK");
  if (local == nullptr) local = std::getenv("COLL_LOCAL_RANK");
  check_cuda(cudaSetDevice(local != nullptr ? std::atoi(local) % gpus : 0), "cudaSetDevice");
}
#endif

// coll as the library of the sweep: every failure ends the program with the message.
struct Coll {
  const perf::Ops& ops;
  coll_comm_t comm;
  bool device = false;  // -G 1: buffers are device memory, the stream the default one
  size_t capacity = 0;  // bytes of each buffer

  void run(const perf::Case& c) { ::check(ops.run(c), comm, ops.name); }
  // With device buffers a call returns once enqueued: the sweep waits here
  // after its timed loop, and a failure found later ends the program.
  void finish() {
#ifdef COLL_PERF_CUDA
    if (!device) return;
    check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    coll_result_t async = COLL_SUCCESS;
    ::check(coll_comm_get_async_error(comm, &async), comm, "coll_comm_get_async_error");
    ::check(async, comm, ops.name);
#endif
  }
  void barrier() { ::check(coll_barrier(comm), comm, "barrier"); }
  void sum(uint64_t& v) { ::check(coll_allreduce(&v, &v, 1, COLL_UINT64, COLL_SUM, comm, nullptr), comm, "allreduce"); }
  void max(double& v) { ::check(coll_allreduce(&v, &v, 1, COLL_FLOAT64, COLL_MAX, comm, nullptr), comm, "allreduce"); }
  void* allocate(size_t bytes) {
    void* p = nullptr;
    capacity = bytes;
#ifdef COLL_PERF_CUDA
    if (device) {
      check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
      return p;
    }
#endif
    ::check(coll_mem_alloc(&p, bytes), nullptr, "coll_mem_alloc");
    return p;
  }
  void release(void* p) {
#ifdef COLL_PERF_CUDA
    if (device) {
      cudaFree(p);
      return;
    }
#endif
    ::check(coll_mem_free(p), nullptr, "coll_mem_free");
  }
  // One checked call. Device buffers are filled and read through host
  // copies of the whole buffers.
  uint64_t check(const perf::Ops& o, const perf::Case& c) {
    if (!device) {
      o.fill(c);
      run(c);
      return o.wrong(c);
    }
#ifdef COLL_PERF_CUDA
    std::vector<char> send(capacity), recv(capacity);
    perf::Case h = c;
    h.send = send.data(), h.recv = recv.data();
    o.fill(h);
    check_cuda(cudaMemcpy(c.send, send.data(), capacity, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(c.recv, recv.data(), capacity, cudaMemcpyHostToDevice), "cudaMemcpy");
    run(c);
    finish();
    check_cuda(cudaMemcpy(send.data(), c.send, capacity, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check_cuda(cudaMemcpy(recv.data(), c.recv, capacity, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return o.wrong(h);
#else
    return 0;
#endif
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options o = perf::parse(argc, argv);
  const perf::Ops& ops = *perf::find(o.collective);
  if (!o.algorithm.empty()) setenv("COLL_ALGO", (o.collective + ":" + o.algorithm).c_str(), 1);

  coll_comm_t comm = nullptr;
  if (launched()) {
    check(coll_comm_init_from_env(&comm), nullptr, "coll_comm_init_from_env");
  } else {
    coll_unique_id_t id;
    check(coll_get_unique_id(&id), nullptr, "coll_get_unique_id");
    check(coll_comm_init_rank(&comm, 1, id, 0), nullptr, "coll_comm_init_rank");
  }
  int rank = 0, nranks = 1;
  coll_comm_rank(comm, &rank);
  coll_comm_size(comm, &nranks);
  if (ops.rooted && (o.root < 0 || o.root >= nranks)) die("-r " + std::to_string(o.root) + " is not a rank");

  Coll lib{ops, comm};
  if (o.device) {
#ifdef COLL_PERF_CUDA
    choose_gpu();
    lib.device = true;
    o.registered = 0;
#else
    die("-G 1: this coll_perf was built without CUDA");
#endif
  }
  size_t wrong = perf::sweep(o, ops, rank, nranks, comm, lib, o.algorithm.empty() ? "auto" : o.algorithm.c_str());
  coll_comm_destroy(comm);
  return wrong == 0 ? 0 : 1;
}
