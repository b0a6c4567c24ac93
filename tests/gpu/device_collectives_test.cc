// Every collective on device buffers, 1 to 4 ranks sharing the one GPU
// (processes, as on a one-GPU machine), exact for a spread of datatypes,
// ops, counts (0, 1, primes, many staging chunks), in place and out of
// place; and ordering on the caller's stream. Both ways device buffers
// travel: staged through host memory (shm, tcp), and in place over the
// nvlink transport (COLL_TRANSPORTS=nvlink,shm). Skips without a GPU.
#include "gpu/gpu_present.h"
#include "gpu/stream_kernels.h"
#include "perf_ops.h"
#include "support/multirank.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace coll::testing {
namespace {

// One checked call, as coll_perf -G 1: host copies filled and compared.
size_t checked(const perf::Ops& ops, perf::Case c, void* dsend, void* drecv, size_t bytes) {
  std::vector<char> send(bytes), recv(bytes);
  perf::Case h = c;
  h.send = send.data(), h.recv = recv.data();
  ops.fill(h);
  EXPECT_EQ(cudaMemcpy(dsend, send.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(drecv, recv.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  c.send = static_cast<char*>(dsend), c.recv = static_cast<char*>(drecv);
  EXPECT_EQ(ops.run(c), COLL_SUCCESS) << coll_get_last_error(c.comm);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  coll_result_t async = COLL_SUCCESS;
  EXPECT_EQ(coll_comm_get_async_error(c.comm, &async), COLL_SUCCESS);
  EXPECT_EQ(async, COLL_SUCCESS) << coll_get_last_error(c.comm);
  EXPECT_EQ(cudaMemcpy(send.data(), dsend, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(recv.data(), drecv, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return ops.wrong(h);
}

// How device buffers travel: "staged" (the default transports), "nvlink"
// (the copy engine), or "nvlinkkernel" (every copy by the SM kernel).
std::map<std::string, std::string> path_env(const std::string& path) {
  // 64 KiB slots: the larger counts take many chunks.
  if (path == "staged") return {{"COLL_STAGING_CHUNK_BYTES", "65536"}};
  if (path == "nvlinkkernel") return {{"COLL_TRANSPORTS", "nvlink,shm"}, {"COLL_NVLINK_KERNEL_BYTES", "1G"}};
  return {{"COLL_TRANSPORTS", "nvlink,shm"}};
}

class DeviceCollectives : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {};

TEST_P(DeviceCollectives, ExactForEveryDtypeOpCountInAndOutOfPlace) {
  SKIP_WITHOUT_GPU();
  const std::string name = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  RankOptions options{.limit_s = 300, .env = path_env(std::get<2>(GetParam()))};
  run_ranks_with_comm(
      nranks,
      [&](coll_comm_t comm, int rank, int n) {
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
        const perf::Ops& ops = *perf::find(name);
        const size_t max_count = 100003 * static_cast<size_t>(n), bytes = max_count * 8;
        void *dsend = nullptr, *drecv = nullptr;
        ASSERT_EQ(cudaMalloc(&dsend, bytes), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&drecv, bytes), cudaSuccess);
        for (coll_datatype_t t : {COLL_FLOAT32, COLL_BFLOAT16, COLL_FLOAT16, COLL_INT32, COLL_UINT8, COLL_FLOAT64})
          for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MAX, COLL_AVG})
            for (size_t per_rank : {size_t{0}, size_t{1}, size_t{7}, size_t{1021}, size_t{100003}})
              for (bool in_place : {false, true}) {
                const perf::Case c{.comm = comm,
                                   .rank = rank,
                                   .n = n,
                                   .t = t,
                                   .op = op,
                                   .root = n - 1,
                                   .count = ops.bus_factor == perf::part_factor ? per_rank * n : per_rank,
                                   .in_place = in_place,
                                   .send = nullptr,
                                   .recv = nullptr};
                ASSERT_EQ(checked(ops, c, dsend, drecv, bytes), 0u)
                    << name << " " << coll::reduce::datatype_name(t) << " " << coll::reduce::redop_name(op) << " count "
                    << c.count << (in_place ? " in place" : "");
              }
        cudaFree(dsend), cudaFree(drecv);
      },
      options);
}

std::vector<std::tuple<std::string, int, std::string>> cases() {
  std::vector<std::tuple<std::string, int, std::string>> all;
  for (const char* c : {"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall"}) {
    for (int n : {1, 2, 3, 4}) all.emplace_back(c, n, "staged");
    for (int n : {2, 3, 4}) all.emplace_back(c, n, "nvlink");
    all.emplace_back(c, 3, "nvlinkkernel");
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Gpu, DeviceCollectives, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks_" + std::get<2>(info.param);
});

// A slow kernel writes the input just before the call and a kernel reads
// the output just after it, on the caller's stream, with no host
// synchronisation between them: the allreduce must wait for the first and
// the second must wait for the allreduce. Three rounds on one stream, with
// the call returning at once and holding the stream ("_held":
// COLL_DEVICE_HOST_SYNC=0, the test's kernels loaded first) or returning
// once done (the default under lazy module loading).
class DeviceStream : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceStream, OrderedBetweenKernelsOnTheCallersStream) {
  SKIP_WITHOUT_GPU();
  const std::string param = GetParam();
  const bool held = param.ends_with("_held");
  RankOptions options{.limit_s = 300, .env = path_env(held ? param.substr(0, param.size() - 5) : param)};
  options.env["COLL_DEVICE_HOST_SYNC"] = held ? "0" : "-1";
  run_ranks_with_comm(
      2,
      [&](coll_comm_t comm, int rank, int n) {
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
        cudaStream_t stream;
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        ASSERT_EQ(load_stream_kernels(), cudaSuccess);
        const size_t count = 3 << 20;  // 12 MiB: three staging chunks
        float *x = nullptr, *seen = nullptr;
        ASSERT_EQ(cudaMalloc(&x, count * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&seen, count * 4), cudaSuccess);
        for (int round = 0; round < 3; ++round) {
          ASSERT_EQ(cudaMemset(x, 0, count * 4), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          // About 20 ms at 2 GHz before the writes land.
          ASSERT_EQ(launch_slow_fill(stream, x, count, static_cast<float>(rank + round), 40'000'000LL), cudaSuccess);
          ASSERT_EQ(coll_allreduce(x, x, count, COLL_FLOAT32, COLL_SUM, comm, stream), COLL_SUCCESS)
              << coll_get_last_error(comm);
          ASSERT_EQ(launch_copy_out(stream, seen, x, count), cudaSuccess);
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          std::vector<float> host(count);
          ASSERT_EQ(cudaMemcpy(host.data(), seen, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int r = 0; r < n; ++r) want += static_cast<float>(r + round) + static_cast<float>(i % 7);
            wrong += host[i] != want;
          }
          ASSERT_EQ(wrong, 0u) << "round " << round;
        }
        coll_result_t async = COLL_SUCCESS;
        EXPECT_EQ(coll_comm_get_async_error(comm, &async), COLL_SUCCESS);
        EXPECT_EQ(async, COLL_SUCCESS);
        cudaFree(x), cudaFree(seen), cudaStreamDestroy(stream);
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(Gpu, DeviceStream,
                         ::testing::Values("staged", "nvlink", "nvlinkkernel", "staged_held", "nvlink_held",
                                           "nvlinkkernel_held"),
                         [](const auto& info) { return std::string(info.param); });

// Bad input is refused at the call: mixed kinds, a stream with host buffers.
TEST(DeviceRefusals, MixedKindsAndAStreamWithHostBuffersAreRefused) {
  SKIP_WITHOUT_GPU();
  run_ranks_with_comm(1, [&](coll_comm_t comm, int, int) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    float* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
    std::vector<float> h(16);
    EXPECT_EQ(coll_allreduce(d, h.data(), 16, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(coll_get_last_error(comm)).find("both must be of one kind"), std::string::npos)
        << coll_get_last_error(comm);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    EXPECT_EQ(coll_allreduce(h.data(), h.data(), 16, COLL_FLOAT32, COLL_SUM, comm, stream), COLL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(coll_get_last_error(comm)).find("host memory"), std::string::npos)
        << coll_get_last_error(comm);
    EXPECT_EQ(coll_send(d, 16, COLL_FLOAT32, 0, comm, nullptr), COLL_INVALID_USAGE);
    cudaFree(d), cudaStreamDestroy(stream);
  });
}

}  // namespace
}  // namespace coll::testing
