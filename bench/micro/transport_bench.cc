// The transports alone, below any collective: ping-pong latency (a round
// trip) and streaming bandwidth (a window of sends in flight) for shm and
// tcp, between this process and a forked echo peer; and the floor under all
// of them, pingpong/cache_line: one 64-byte line handed to a forked process
// and back, no library in between.
//
//   build/bench/micro/transport_bench --benchmark_filter='pingpong'
//
// The peer learns what to do from the first byte of each message: 0 data,
// 1 "this benchmark is over". Tags: 1 data, 2 the peer's acknowledgement.
#include "support/transport_link.h"

#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using coll::testing::Link;
using coll::testing::wait_all;

constexpr uint64_t kData = 1, kAck = 2;
constexpr int kWindow = 16;  // streaming: sends in flight per acknowledgement

enum class Mode : char { kPingPong, kStream };

// Rank 1: echoes each ping, or acknowledges each window, until told to stop.
void peer_loop(Link& link, Mode mode, size_t bytes) {
  auto& t = *link.transport;
  std::vector<char> buf(bytes * kWindow);
  char ack = 0;
  for (;;) {
    if (mode == Mode::kPingPong) {
      wait_all(t, {t.post_recv(0, buf.data(), bytes, kData)});
      if (buf[0] == 1) return;
      wait_all(t, {t.post_send(0, buf.data(), bytes, kData)});
    } else {
      std::vector<coll::transport::RequestId> ids;
      for (int w = 0; w < kWindow; ++w) ids.push_back(t.post_recv(0, buf.data() + w * bytes, bytes, kData));
      wait_all(t, ids);
      if (buf[0] == 1) return;
      wait_all(t, {t.post_send(0, &ack, 1, kAck)});
    }
  }
}

void run(benchmark::State& state, const std::string& kind, Mode mode, size_t bytes) {
  coll_unique_id_t id;
  if (coll_get_unique_id(&id) != COLL_SUCCESS) {
    state.SkipWithError(coll_get_last_error(nullptr));
    return;
  }
  pid_t child = fork();
  if (child == 0) {
    int rc = 0;
    try {
      Link link = coll::testing::connect_pair(1, id, kind);
      peer_loop(link, mode, bytes);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "transport_bench peer: %s\n", e.what());
      rc = 1;
    }
    _exit(rc);
  }
  Link link = coll::testing::connect_pair(0, id, kind);
  auto& t = *link.transport;
  std::vector<char> buf(bytes * kWindow, 0);
  char ack = 0;
  for (auto _ : state) {
    if (mode == Mode::kPingPong) {
      wait_all(t, {t.post_send(1, buf.data(), bytes, kData)});
      wait_all(t, {t.post_recv(1, buf.data(), bytes, kData)});
    } else {
      std::vector<coll::transport::RequestId> ids;
      for (int w = 0; w < kWindow; ++w) ids.push_back(t.post_send(1, buf.data() + w * bytes, bytes, kData));
      ids.push_back(t.post_recv(1, &ack, 1, kAck));
      wait_all(t, ids);
    }
  }
  buf[0] = 1;  // stop the peer
  if (mode == Mode::kPingPong) {
    wait_all(t, {t.post_send(1, buf.data(), bytes, kData)});
  } else {
    std::vector<coll::transport::RequestId> ids;
    for (int w = 0; w < kWindow; ++w) ids.push_back(t.post_send(1, buf.data() + w * bytes, bytes, kData));
    wait_all(t, ids);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kWindow * bytes));
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("the echo peer failed");
}

// Two lines in memory shared with a forked peer: we write a count into
// `ping`, the peer answers it in `pong`. What a message between two ranks on
// this machine can cost at the least; -1 stops the peer, and so does our
// exit (it looks at its parent now and then).
void cache_line(benchmark::State& state) {
  struct alignas(64) Line {
    std::atomic<int64_t> value{0};
  };
  void* shared = mmap(nullptr, 2 * sizeof(Line), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    state.SkipWithError("mmap");
    return;
  }
  Line* ping = new (shared) Line();
  Line* pong = new (ping + 1) Line();
  const pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    for (int64_t seen = 0;;) {
      int64_t v;
      for (int looks = 0; (v = ping->value.load(std::memory_order_acquire)) == seen; ++looks)
        if (looks % (1 << 20) == 0 && getppid() != parent) _exit(1);
      if (v < 0) _exit(0);
      pong->value.store(v, std::memory_order_release);
      seen = v;
    }
  }
  int64_t n = 0;
  int status = 0;
  bool gone = false;
  for (auto _ : state) {
    ping->value.store(++n, std::memory_order_release);
    for (int looks = 1; !gone && pong->value.load(std::memory_order_acquire) != n; ++looks)
      gone = looks % (1 << 20) == 0 && waitpid(child, &status, WNOHANG) == child;
    if (gone) break;
  }
  ping->value.store(-1, std::memory_order_release);
  if (!gone) waitpid(child, &status, 0);
  munmap(shared, 2 * sizeof(Line));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("the peer failed");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("pingpong/cache_line", cache_line)->UseRealTime()->MinWarmUpTime(0.05);
  for (const char* kind : {"shm", "tcp"}) {
    for (size_t bytes : {size_t{8}, size_t{4} << 10, size_t{64} << 10})
      benchmark::RegisterBenchmark((std::string("pingpong/") + kind + "/" + std::to_string(bytes)).c_str(), run, kind,
                                   Mode::kPingPong, bytes)
          ->UseRealTime()
          ->MinWarmUpTime(0.05);
    for (size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{4} << 20})
      benchmark::RegisterBenchmark((std::string("stream/") + kind + "/" + std::to_string(bytes)).c_str(), run, kind,
                                   Mode::kStream, bytes)
          ->UseRealTime()
          ->MinWarmUpTime(0.05);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
