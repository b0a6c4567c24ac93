// The nvlink transport on real device memory: two processes on the one GPU
// (CUDA IPC within a device), messages of every size exact and in order,
// puts and gets into registered device memory, a mismatch an error, and
// host buffers refused. The same protocol runs everywhere in the
// conformance suite as "nvlink_emulated"; this is what only a GPU shows.
// Skips without a GPU.
#include "gpu/gpu_present.h"
#include "support/multirank.h"
#include "support/transport_link.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace coll::testing {
namespace {

uint8_t pattern(size_t i, size_t bytes, int rank) { return static_cast<uint8_t>(i * 13 + bytes + rank); }

transport::Buffer device(void* p, size_t bytes) { return transport::Buffer{p, bytes, transport::MemoryKind::kCuda}; }

TEST(Nvlink, MessagesOfEverySizeAreExactAndInOrder) {
  SKIP_WITHOUT_GPU();
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    Link link = connect_pair(rank, id, "nvlink");
    transport::Transport& t = *link.transport;
    const int peer = 1 - rank;
    const std::vector<size_t> sizes = {0, 1, 7, 4099, (1 << 20) + 1, size_t{64} << 20};
    std::vector<void*> out(sizes.size()), in(sizes.size());
    std::vector<transport::RequestId> ids;
    for (size_t k = 0; k < sizes.size(); ++k) {
      const size_t b = sizes[k];
      ASSERT_EQ(cudaMalloc(&out[k], b + 1), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&in[k], b + 1), cudaSuccess);
      std::vector<uint8_t> h(b);
      for (size_t i = 0; i < b; ++i) h[i] = pattern(i, b, rank);
      ASSERT_EQ(cudaMemcpy(out[k], h.data(), b, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(in[k], 0, b + 1), cudaSuccess);
    }
    // Every receive posted before any send on one rank, after on the other.
    for (int pass = 0; pass < 2; ++pass)
      for (size_t k = 0; k < sizes.size(); ++k) {
        if ((pass == 0) == (rank == 0)) ids.push_back(t.post_recv(peer, device(in[k], sizes[k]), 100 + k));
        if ((pass == 1) == (rank == 0)) ids.push_back(t.post_send(peer, device(out[k], sizes[k]), 100 + k));
      }
    wait_all(t, ids, 60000);
    for (size_t k = 0; k < sizes.size(); ++k) {
      const size_t b = sizes[k];
      std::vector<uint8_t> h(b + 1);
      ASSERT_EQ(cudaMemcpy(h.data(), in[k], b + 1, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t wrong = 0;
      for (size_t i = 0; i < b; ++i) wrong += h[i] != pattern(i, b, peer);
      EXPECT_EQ(wrong, 0u) << b << " bytes";
      EXPECT_EQ(h[b], 0) << "a byte past the " << b << "-byte message was written";
      cudaFree(out[k]), cudaFree(in[k]);
    }
  });
}

TEST(Nvlink, PutsAndGetsReachRegisteredDeviceMemory) {
  SKIP_WITHOUT_GPU();
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& raw) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    Link link = connect_pair(rank, raw, "nvlink");
    transport::Transport& t = *link.transport;
    const int peer = 1 - rank;
    const size_t window_bytes = size_t{8} << 20;
    void *window = nullptr, *local = nullptr;
    ASSERT_EQ(cudaMalloc(&window, window_bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&local, window_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(window, rank + 1, window_bytes), cudaSuccess);
    const transport::Registration* mine = t.register_memory(window, window_bytes, transport::MemoryKind::kCuda);
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(t.register_memory(nullptr, 0, transport::MemoryKind::kHost), nullptr) << "host memory is not nvlink's";
    const transport::RemoteMemory remote = swap_registrations(link, rank, *mine);  // windows of one size
    // Each rank gets the peer's window, then puts 5 MiB of 0x77 into it.
    const size_t part = size_t{5} << 20;
    wait_all(t, {t.post_get(peer, device(local, window_bytes), remote, 0)});
    std::vector<uint8_t> h(window_bytes);
    ASSERT_EQ(cudaMemcpy(h.data(), local, window_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t wrong = 0;
    for (uint8_t v : h) wrong += v != static_cast<uint8_t>(peer + 1);
    EXPECT_EQ(wrong, 0u) << "get";
    ASSERT_EQ(cudaMemset(local, 0x77, part), cudaSuccess);
    const uint64_t note = 42;
    uint64_t value = 0;
    wait_all(t, {t.post_put(peer, device(local, part), remote, 3, &note), t.post_notification(peer, &value)});
    EXPECT_EQ(value, 42u);
    ASSERT_EQ(cudaMemcpy(h.data(), window, window_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    wrong = 0;
    for (size_t i = 0; i < window_bytes; ++i)
      wrong += h[i] != (i >= 3 && i < 3 + part ? 0x77 : static_cast<uint8_t>(rank + 1));
    EXPECT_EQ(wrong, 0u) << "put";
    // Both done before either frees its window: a message each way.
    wait_all(t,
             {t.post_send(peer, device(local, 4), 9), t.post_recv(peer, device(static_cast<char*>(local) + 64, 4), 9)});
    t.deregister(mine);
    cudaFree(window), cudaFree(local);
  });
}

TEST(Nvlink, AMismatchFailsAndHostBuffersAreRefused) {
  SKIP_WITHOUT_GPU();
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    Link link = connect_pair(rank, id, "nvlink");
    transport::Transport& t = *link.transport;
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 256), cudaSuccess);
    std::vector<char> host(64);
    try {
      t.post_send(1 - rank, transport::Buffer{host.data(), host.size()}, 1);
      ADD_FAILURE() << "a host buffer was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidUsage) << e.what();
    }
    try {
      if (rank == 0)
        wait_all(t, {t.post_send(1, device(d, 64), 5)});
      else
        wait_all(t, {t.post_recv(0, device(d, 100), 5)});
      ADD_FAILURE() << "a 64-byte message completed a 100-byte receive";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find("64 bytes"), std::string::npos) << e.what();
    }
    cudaFree(d);
  });
}

}  // namespace
}  // namespace coll::testing
