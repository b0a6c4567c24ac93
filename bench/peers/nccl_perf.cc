// nccl_perf — the coll_perf table for NCCL, with the same flags, the same
// inputs and the same exact check, so that the tables compare row by row.
//
//   nccl_perf -g 8 -b 8 -e 1G -f 2          (every GPU a rank, one process)
//
// Like nccl-tests' -g, one process drives -g GPUs (default: every visible
// one) as ranks 0..g-1 of one communicator (ncclCommInitAll), one stream per
// GPU, each call a ncclGroupStart/End around the per-GPU calls. Inputs are
// filled on the host as perf_ops.h fills them for rank = GPU index, copied
// to the device, and copied back for the check. Each timed call waits for
// every stream, as a blocking collective would, so small sizes include one
// synchronisation that nccl-tests' back-to-back launches hide.
//
// -a sets NCCL_ALGO (ring, tree, ...). Every dtype and op is NCCL's own;
// float avg is NCCL's multiply by 1/n before the sum, which the exact check
// counts as wrong where 1/n is inexact (n not a power of two). In-place
// alltoall, which NCCL lacks, copies send to recv first, inside the timed
// call. Without a GPU the program says so and exits with 77.
#include "perf_common.h"
#include "perf_ops.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kNoDevice = 77;  // ctest's "skipped"

void cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "nccl_perf: %s failed: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

void nccl_ok(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "nccl_perf: %s failed: %s (%s)\n", what, ncclGetErrorString(r), ncclGetLastError(nullptr));
  std::exit(1);
}

ncclDataType_t nccl_type(coll_datatype_t t) {
  switch (t) {
    case COLL_INT8:
      return ncclInt8;
    case COLL_UINT8:
      return ncclUint8;
    case COLL_INT32:
      return ncclInt32;
    case COLL_UINT32:
      return ncclUint32;
    case COLL_INT64:
      return ncclInt64;
    case COLL_UINT64:
      return ncclUint64;
    case COLL_FLOAT16:
      return ncclFloat16;
    case COLL_BFLOAT16:
      return ncclBfloat16;
    case COLL_FLOAT32:
      return ncclFloat32;
    case COLL_FLOAT64:
      return ncclFloat64;
    default:
      perf::die(std::string(coll::reduce::datatype_name(t)) + " has no NCCL datatype");
  }
}

ncclRedOp_t nccl_op(coll_redop_t op) {
  switch (op) {
    case COLL_SUM:
      return ncclSum;
    case COLL_PROD:
      return ncclProd;
    case COLL_MIN:
      return ncclMin;
    case COLL_MAX:
      return ncclMax;
    default:
      return ncclAvg;
  }
}

// One rank: a GPU, its stream and communicator, device buffers of the
// largest size, and the host copies the check fills and reads.
struct Gpu {
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  char* send = nullptr;
  char* recv = nullptr;
  std::vector<char> host_send, host_recv;
};

struct Nccl {
  std::string collective;
  ncclDataType_t type;
  ncclRedOp_t op;
  std::vector<Gpu> gpus;

  // The case as GPU g sees it: its rank, its device buffers.
  perf::Case on(const perf::Case& c, int g) const {
    perf::Case d = c;
    d.rank = g;
    d.send = gpus[static_cast<size_t>(g)].send;
    d.recv = gpus[static_cast<size_t>(g)].recv;
    return d;
  }

  void issue(const perf::Case& c, const Gpu& gpu) const {
    char* out = c.in_place ? c.send : c.recv;
    const size_t block = c.part() * c.es();
    if (collective == "allreduce") {
      nccl_ok(ncclAllReduce(c.send, out, c.count, type, op, gpu.comm, gpu.stream), "ncclAllReduce");
    } else if (collective == "broadcast") {
      nccl_ok(ncclBroadcast(c.recv, c.recv, c.count, type, c.root, gpu.comm, gpu.stream), "ncclBroadcast");
    } else if (collective == "reduce") {
      nccl_ok(ncclReduce(c.send, out, c.count, type, op, c.root, gpu.comm, gpu.stream), "ncclReduce");
    } else if (collective == "allgather") {
      const char* in = c.in_place ? c.recv + c.rank * block : c.send;
      nccl_ok(ncclAllGather(in, c.recv, c.part(), type, gpu.comm, gpu.stream), "ncclAllGather");
    } else if (collective == "reduce_scatter") {
      char* mine = c.in_place ? c.send + c.rank * block : c.recv;
      nccl_ok(ncclReduceScatter(c.send, mine, c.part(), type, op, gpu.comm, gpu.stream), "ncclReduceScatter");
    } else if (collective == "sendrecv") {  // a ring shift in a group, as nccl-tests' sendrecv
      const int next = (c.rank + 1) % c.n, prev = (c.rank + c.n - 1) % c.n;
      nccl_ok(ncclGroupStart(), "ncclGroupStart");
      nccl_ok(ncclSend(c.send, c.count, type, next, gpu.comm, gpu.stream), "ncclSend");
      nccl_ok(ncclRecv(c.recv, c.count, type, prev, gpu.comm, gpu.stream), "ncclRecv");
      nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
    } else if (c.in_place) {  // alltoall: recv is free to hold the input
      cuda_ok(cudaMemcpyAsync(c.recv, c.send, c.count * c.es(), cudaMemcpyDeviceToDevice, gpu.stream), "copy");
      nccl_ok(ncclAlltoAll(c.recv, c.send, c.part(), type, gpu.comm, gpu.stream), "ncclAlltoAll");
    } else {
      nccl_ok(ncclAlltoAll(c.send, c.recv, c.part(), type, gpu.comm, gpu.stream), "ncclAlltoAll");
    }
  }

  void run(const perf::Case& c) {
    nccl_ok(ncclGroupStart(), "ncclGroupStart");
    for (size_t g = 0; g < gpus.size(); ++g) {
      cuda_ok(cudaSetDevice(gpus[g].device), "cudaSetDevice");
      issue(on(c, static_cast<int>(g)), gpus[g]);
    }
    nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
    barrier();
  }

  // On the GPU's own stream, so that the copies and the collective are
  // ordered (the streams do not wait for the default stream).
  static void copy(const Gpu& gpu, void* to, const void* from, size_t bytes) {
    cuda_ok(cudaSetDevice(gpu.device), "cudaSetDevice");
    cuda_ok(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, gpu.stream), "cudaMemcpyAsync");
  }

  // Every GPU's inputs from the host, one call, every GPU's outputs checked.
  uint64_t check(const perf::Ops& ops, const perf::Case& c) {
    const size_t bytes = c.count * c.es();
    auto host = [&](size_t g) {
      perf::Case h = c;
      h.rank = static_cast<int>(g);
      h.send = gpus[g].host_send.data();
      h.recv = gpus[g].host_recv.data();
      return h;
    };
    for (size_t g = 0; g < gpus.size(); ++g) {
      ops.fill(host(g));
      copy(gpus[g], gpus[g].send, gpus[g].host_send.data(), bytes);
      copy(gpus[g], gpus[g].recv, gpus[g].host_recv.data(), bytes);
    }
    run(c);
    uint64_t wrong = 0;
    for (size_t g = 0; g < gpus.size(); ++g) {
      copy(gpus[g], gpus[g].host_send.data(), gpus[g].send, bytes);
      copy(gpus[g], gpus[g].host_recv.data(), gpus[g].recv, bytes);
      cuda_ok(cudaStreamSynchronize(gpus[g].stream), "cudaStreamSynchronize");
      wrong += ops.wrong(host(g));
    }
    return wrong;
  }

  // One process holds every rank: a barrier is every stream done, and the
  // sweep's sums and maxima across ranks are already whole.
  void barrier() {
    for (const Gpu& gpu : gpus) {
      cuda_ok(cudaSetDevice(gpu.device), "cudaSetDevice");
      cuda_ok(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize");
    }
  }
  void sum(uint64_t&) {}
  void max(double&) {}
};

// Takes -g N out of argv (perf::parse does not know it); 0 when absent.
int take_gpu_count(int& argc, char** argv) {
  int gpus = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      perf::usage(stdout);
      std::printf("  -g       GPUs to drive, one rank each (every visible GPU)\n");
      std::exit(0);
    }
    if (a != "-g") continue;
    if (i + 1 >= argc) perf::die("option -g needs a value");
    gpus = std::atoi(argv[i + 1]);
    if (gpus < 1) perf::die("-g must be positive");
    for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
    argc -= 2;
    --i;
  }
  return gpus;
}

}  // namespace

int main(int argc, char** argv) {
  perf::program_name() = "nccl_perf";
  int wanted = take_gpu_count(argc, argv);
  perf::Options o = perf::parse(argc, argv);
  const perf::Ops& ops = *perf::find(o.collective);
  Nccl lib{o.collective, nccl_type(o.dtype), nccl_op(o.op), {}};

  int visible = 0;
  cudaError_t e = cudaGetDeviceCount(&visible);
  if (e != cudaSuccess || visible == 0) {
    std::fprintf(stderr, "nccl_perf: no CUDA device: %s\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
    return kNoDevice;
  }
  const int n = wanted > 0 ? wanted : visible;
  if (n > visible) perf::die("-g " + std::to_string(n) + " but " + std::to_string(visible) + " GPUs are visible");
  if (ops.rooted && (o.root < 0 || o.root >= n)) perf::die("-r " + std::to_string(o.root) + " is not a rank");
  if (!o.algorithm.empty()) setenv("NCCL_ALGO", o.algorithm.c_str(), 1);

  const size_t capacity = std::max(o.max_bytes, coll::reduce::datatype_size(o.dtype));
  std::vector<int> devices(static_cast<size_t>(n));
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  lib.gpus.resize(static_cast<size_t>(n));
  for (int g = 0; g < n; ++g) {
    Gpu& gpu = lib.gpus[static_cast<size_t>(g)];
    gpu.device = devices[static_cast<size_t>(g)] = g;
    cuda_ok(cudaSetDevice(g), "cudaSetDevice");
    cuda_ok(cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&gpu.send), capacity), "cudaMalloc");
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&gpu.recv), capacity), "cudaMalloc");
    if (o.check) {
      gpu.host_send.resize(capacity);
      gpu.host_recv.resize(capacity);
    }
  }
  nccl_ok(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
  for (int g = 0; g < n; ++g) lib.gpus[static_cast<size_t>(g)].comm = comms[static_cast<size_t>(g)];

  int version = 0;
  ncclGetVersion(&version);
  std::string name = "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                     std::to_string(version % 100) + (o.algorithm.empty() ? "" : " NCCL_ALGO=" + o.algorithm);
  size_t wrong = perf::sweep(o, ops, 0, n, nullptr, lib, name.c_str());

  for (Gpu& gpu : lib.gpus) {
    cuda_ok(cudaSetDevice(gpu.device), "cudaSetDevice");
    ncclCommDestroy(gpu.comm);
    cudaFree(gpu.send);
    cudaFree(gpu.recv);
    cudaStreamDestroy(gpu.stream);
  }
  return wrong == 0 ? 0 : 1;
}
