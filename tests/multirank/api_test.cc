// Bad input at the C ABI: each case returns its specific code and the last
// error names the argument. Run on real communicators (one rank, and two
// for a second thread on a busy communicator).
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

void expect_error(coll_result_t got, coll_result_t want, coll_comm_t comm, const char* needle) {
  EXPECT_EQ(got, want) << coll_get_error_string(got);
  std::string message = coll_get_last_error(comm);
  EXPECT_NE(message.find(needle), std::string::npos)
      << "message '" << message << "' does not mention '" << needle << "'";
}

TEST(Api, VersionAndErrorStrings) {
  int version = 0;
  EXPECT_EQ(coll_get_version(&version), COLL_SUCCESS);
  EXPECT_EQ(version, COLL_VERSION_CODE);
  EXPECT_EQ(coll_get_version(nullptr), COLL_INVALID_ARGUMENT);
  for (int r = COLL_SUCCESS; r <= COLL_REVOKED; ++r)
    EXPECT_NE(std::string(coll_get_error_string(static_cast<coll_result_t>(r))).find("COLL_"), std::string::npos);
  EXPECT_STREQ(coll_get_error_string(static_cast<coll_result_t>(99)), "unknown coll_result_t");
}

TEST(Api, NullCommunicatorIsRefusedEverywhere) {
  int x = 0;
  float buf[1] = {0};
  EXPECT_EQ(coll_comm_rank(nullptr, &x), COLL_INVALID_ARGUMENT);
  EXPECT_EQ(coll_comm_size(nullptr, &x), COLL_INVALID_ARGUMENT);
  EXPECT_EQ(coll_comm_destroy(nullptr), COLL_INVALID_ARGUMENT);
  EXPECT_EQ(coll_comm_abort(nullptr), COLL_INVALID_ARGUMENT);
  expect_error(coll_allreduce(buf, buf, 1, COLL_FLOAT32, COLL_SUM, nullptr, nullptr), COLL_INVALID_ARGUMENT, nullptr,
               "comm");
  EXPECT_EQ(coll_get_unique_id(nullptr), COLL_INVALID_ARGUMENT);
}

TEST(Api, InitArgumentsAreChecked) {
  coll_unique_id_t id{};
  coll_comm_t comm = nullptr;
  expect_error(coll_comm_init_rank(&comm, 0, id, 0), COLL_INVALID_ARGUMENT, nullptr, "nranks");
  expect_error(coll_comm_init_rank(&comm, 4, id, 4), COLL_INVALID_ARGUMENT, nullptr, "rank");
  expect_error(coll_comm_init_rank(&comm, 4, id, -1), COLL_INVALID_ARGUMENT, nullptr, "rank");
  expect_error(coll_comm_init_rank(nullptr, 1, id, 0), COLL_INVALID_ARGUMENT, nullptr, "comm");
}

TEST(Api, InitFromEnvWithoutALauncherSaysWhatItLookedFor) {
  run_ranks(1, [](int, int, const coll_unique_id_t&) {
    for (const char* v : {"COLL_RANK", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) unsetenv(v);
    coll_comm_t comm = nullptr;
    expect_error(coll_comm_init_from_env(&comm), COLL_INVALID_USAGE, nullptr, "OMPI_COMM_WORLD_RANK");
    setenv("COLL_RANK", "3", 1);
    setenv("COLL_NRANKS", "2", 1);
    setenv("COLL_ROOT_ADDR", "127.0.0.1:1", 1);
    setenv("COLL_JOB_SECRET", "00112233445566778899aabbccddeeff", 1);
    expect_error(coll_comm_init_from_env(&comm), COLL_INVALID_USAGE, nullptr, "COLL_RANK=3");
    setenv("COLL_RANK", "0", 1);
    setenv("COLL_JOB_SECRET", "xyz", 1);
    expect_error(coll_comm_init_from_env(&comm), COLL_INVALID_ARGUMENT, nullptr, "COLL_JOB_SECRET");
  });
}

TEST(Api, AllreduceArgumentsAreChecked) {
  run_ranks(1, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    std::vector<float> a(16, 1.0f), b(16);
    auto call = [&](const void* s, void* r, size_t n, int t, int op, coll_stream_t st = nullptr) {
      return coll_allreduce(s, r, n, static_cast<coll_datatype_t>(t), static_cast<coll_redop_t>(op), comm, st);
    };
    expect_error(call(a.data(), b.data(), 16, 77, COLL_SUM), COLL_INVALID_ARGUMENT, comm, "datatype");
    expect_error(call(a.data(), b.data(), 16, -1, COLL_SUM), COLL_INVALID_ARGUMENT, comm, "datatype");
    expect_error(call(a.data(), b.data(), 16, COLL_FLOAT32, 9), COLL_INVALID_ARGUMENT, comm, "op");
    expect_error(call(nullptr, b.data(), 16, COLL_FLOAT32, COLL_SUM), COLL_INVALID_ARGUMENT, comm, "sendbuf");
    expect_error(call(a.data(), nullptr, 16, COLL_FLOAT32, COLL_SUM), COLL_INVALID_ARGUMENT, comm, "recvbuf");
    expect_error(call(a.data(), b.data(), SIZE_MAX / 2, COLL_FLOAT32, COLL_SUM), COLL_INVALID_ARGUMENT, comm,
                 "overflows");
    expect_error(call(a.data(), a.data() + 1, 8, COLL_FLOAT32, COLL_SUM), COLL_INVALID_ARGUMENT, comm, "overlap");
    int stream = 0;
    expect_error(call(a.data(), b.data(), 16, COLL_FLOAT32, COLL_SUM, &stream), COLL_INVALID_ARGUMENT, comm, "stream");
    // Null buffers are fine with count 0, and the communicator is still usable.
    EXPECT_EQ(call(nullptr, nullptr, 0, COLL_FLOAT32, COLL_SUM), COLL_SUCCESS) << coll_get_last_error(comm);
    EXPECT_EQ(call(a.data(), b.data(), 16, COLL_FLOAT32, COLL_SUM), COLL_SUCCESS) << coll_get_last_error(comm);
    EXPECT_EQ(b[15], 1.0f);
    int r = -1, n = -1;
    EXPECT_EQ(coll_comm_rank(comm, &r), COLL_SUCCESS);
    EXPECT_EQ(coll_comm_size(comm, &n), COLL_SUCCESS);
    EXPECT_EQ(r, 0);
    EXPECT_EQ(n, 1);
    EXPECT_EQ(coll_comm_rank(comm, nullptr), COLL_INVALID_ARGUMENT);
    // After abort every collective is refused.
    EXPECT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
    expect_error(call(a.data(), b.data(), 16, COLL_FLOAT32, COLL_SUM), COLL_INVALID_USAGE, comm, "aborted");
    EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
  });
}

// A destroyed communicator's handle is refused by every call, with a
// message, rather than read after it was freed (ASan runs this too).
// Registered buffers (coll_comm_register): counted per range, checked
// arguments, ordered with non-blocking operations, and the allreduces on
// them exact, over shm and tcp.
TEST(Api, RegisteredBuffersAreCountedCheckedAndUsable) {
  for (const char* transports : {"shm", "tcp"}) {
    RankOptions options;
    options.env = {{"COLL_TRANSPORTS", transports}};
    run_ranks(
        3,
        [](int rank, int nranks, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, nranks, id);
          const size_t count = 10007;
          std::vector<int64_t> in(count), out(count);
          void *h1 = nullptr, *h2 = nullptr, *other = nullptr;
          EXPECT_EQ(coll_comm_register(comm, nullptr, 8, &h1), COLL_INVALID_ARGUMENT);
          EXPECT_EQ(coll_comm_register(comm, in.data(), 0, &h1), COLL_INVALID_ARGUMENT);
          EXPECT_EQ(coll_comm_register(comm, in.data(), 8, nullptr), COLL_INVALID_ARGUMENT);
          EXPECT_NE(std::string(coll_get_last_error(comm)).find("handle"), std::string::npos);
          ASSERT_EQ(coll_comm_register(comm, in.data(), count * sizeof(int64_t), &h1), COLL_SUCCESS);
          ASSERT_EQ(coll_comm_register(comm, in.data(), count * sizeof(int64_t), &h2), COLL_SUCCESS);
          EXPECT_EQ(h1, h2) << "the same range is the same registration";
          // Registration after a non-blocking operation waits for it.
          for (size_t i = 0; i < count; ++i) in[i] = static_cast<int64_t>(i) * (rank + 1);
          coll_request_t request = nullptr;
          ASSERT_EQ(coll_allreduce_async(in.data(), out.data(), count, COLL_INT64, COLL_SUM, comm, nullptr, &request),
                    COLL_SUCCESS);
          ASSERT_EQ(coll_comm_register(comm, out.data(), count * sizeof(int64_t), &other), COLL_SUCCESS);
          ASSERT_EQ(coll_wait(request), COLL_SUCCESS);
          const int64_t ranks_sum = int64_t{nranks} * (nranks + 1) / 2;
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], static_cast<int64_t>(i) * ranks_sum) << i;
          ASSERT_EQ(coll_allreduce(in.data(), in.data(), count, COLL_INT64, COLL_MAX, comm, nullptr), COLL_SUCCESS);
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(in[i], static_cast<int64_t>(i) * nranks) << i;
          EXPECT_EQ(coll_comm_deregister(comm, h1), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(comm, h2), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(comm, h1), COLL_INVALID_ARGUMENT) << "released twice";
          // A registration made after h1 was released (where the memory behind a handle would be reused).
          void* later = nullptr;
          ASSERT_EQ(coll_comm_register(comm, in.data(), 8, &later), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(comm, h1), COLL_INVALID_ARGUMENT) << "a released handle named a later one";
          EXPECT_EQ(coll_comm_deregister(comm, later), COLL_SUCCESS);
          // Another communicator's handles are not this one's, whatever it registered.
          coll_comm_t twin = nullptr;
          ASSERT_EQ(coll_comm_split(comm, 0, rank, &twin), COLL_SUCCESS) << coll_get_last_error(comm);
          void *t1 = nullptr, *t2 = nullptr;
          ASSERT_EQ(coll_comm_register(twin, in.data(), 8, &t1), COLL_SUCCESS);
          ASSERT_EQ(coll_comm_register(twin, in.data(), 16, &t2), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(comm, t1), COLL_INVALID_ARGUMENT) << "another communicator's handle";
          EXPECT_EQ(coll_comm_deregister(comm, t2), COLL_INVALID_ARGUMENT) << "another communicator's handle";
          EXPECT_EQ(coll_comm_deregister(twin, t1), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(twin, t2), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_destroy(twin), COLL_SUCCESS);
          EXPECT_EQ(coll_comm_deregister(comm, nullptr), COLL_INVALID_ARGUMENT);
          int stranger = 0;
          EXPECT_EQ(coll_comm_deregister(comm, &stranger), COLL_INVALID_ARGUMENT) << "not a handle of ours";
          EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS) << "destroy drops the registration left";
        },
        options);
  }
}

TEST(Api, ADestroyedCommunicatorIsRefusedEverywhere) {
  run_ranks(1, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    ASSERT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
    float buf[4] = {1, 2, 3, 4};
    int x = 0;
    coll_request_t request = nullptr;
    coll_comm_t child = nullptr;
    expect_error(coll_allreduce(buf, buf, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_INVALID_USAGE, comm,
                 "allreduce: comm was destroyed");
    expect_error(coll_allreduce_async(buf, buf, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr, &request), COLL_INVALID_USAGE,
                 comm, "destroyed");
    expect_error(coll_broadcast(buf, 4, COLL_FLOAT32, 0, comm, nullptr), COLL_INVALID_USAGE, comm, "destroyed");
    expect_error(coll_barrier(comm), COLL_INVALID_USAGE, comm, "barrier: comm was destroyed");
    expect_error(coll_comm_rank(comm, &x), COLL_INVALID_USAGE, comm, "comm_rank");
    expect_error(coll_comm_size(comm, &x), COLL_INVALID_USAGE, comm, "comm_size");
    expect_error(coll_comm_split(comm, 0, 0, &child), COLL_INVALID_USAGE, comm, "comm_split");
    expect_error(coll_comm_abort(comm), COLL_INVALID_USAGE, comm, "comm_abort");
    expect_error(coll_comm_destroy(comm), COLL_INVALID_USAGE, comm, "comm_destroy: comm was destroyed");
    EXPECT_EQ(request, nullptr);
    EXPECT_EQ(child, nullptr);
    // Inside a group, the call is refused as it is recorded, and the group with it.
    ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
    EXPECT_EQ(coll_send(buf, 4, COLL_FLOAT32, 0, comm, nullptr), COLL_INVALID_USAGE);
    expect_error(coll_group_end(), COLL_INVALID_USAGE, nullptr, "comm was destroyed");
  });
}

// The checks beyond allreduce: roots and peers out of range, null buffers,
// sizes that overflow, overlaps other than each collective's in-place
// layout, a null request. Each names its argument; none moves data.
TEST(Api, EveryCollectiveNamesItsBadArgument) {
  run_ranks(1, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    std::vector<float> a(16, 1.0f);
    float* p = a.data();
    const coll_result_t bad = COLL_INVALID_ARGUMENT;
    expect_error(coll_broadcast(p, 4, COLL_FLOAT32, 1, comm, nullptr), bad, comm, "root 1 is outside [0, 1)");
    expect_error(coll_broadcast(p, 4, COLL_FLOAT32, -1, comm, nullptr), bad, comm, "root -1 is outside");
    expect_error(coll_broadcast(nullptr, 4, COLL_FLOAT32, 0, comm, nullptr), bad, comm, "buf is null with 16 bytes");
    expect_error(coll_broadcast(p, 4, static_cast<coll_datatype_t>(99), 0, comm, nullptr), bad, comm, "datatype 99");
    expect_error(coll_reduce(p, p + 8, 4, COLL_FLOAT32, COLL_SUM, 3, comm, nullptr), bad, comm, "root 3 is outside");
    expect_error(coll_reduce(nullptr, p, 4, COLL_FLOAT32, COLL_SUM, 0, comm, nullptr), bad, comm, "sendbuf is null");
    expect_error(coll_reduce(p, p + 1, 4, COLL_FLOAT32, COLL_SUM, 0, comm, nullptr), bad, comm, "overlap");
    expect_error(coll_send(p, 4, COLL_FLOAT32, 1, comm, nullptr), bad, comm, "send on rank 0: peer 1 is outside");
    expect_error(coll_recv(p, 4, COLL_FLOAT32, -2, comm, nullptr), bad, comm, "recv on rank 0: peer -2 is outside");
    // A send to the own rank is legal (a copy), but blocking with nothing to answer it, it is refused.
    expect_error(coll_send(p, 4, COLL_FLOAT32, 0, comm, nullptr), COLL_INVALID_USAGE, comm, "peer is this rank itself");
    expect_error(coll_allgather(p, nullptr, 4, COLL_FLOAT32, comm, nullptr), bad, comm, "recvbuf is null");
    expect_error(coll_allgather(p, p, SIZE_MAX / 2, COLL_FLOAT32, comm, nullptr), bad, comm, "overflows size_t");
    expect_error(coll_allgather(p + 1, p, 4, COLL_FLOAT32, comm, nullptr), bad, comm,
                 "in place needs sendbuf == recvbuf + rank * sendcount");
    expect_error(coll_reduce_scatter(nullptr, p, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr), bad, comm,
                 "sendbuf is null");
    expect_error(coll_reduce_scatter(p, p, 4, COLL_FLOAT32, static_cast<coll_redop_t>(42), comm, nullptr), bad, comm,
                 "op 42");
    expect_error(coll_reduce_scatter(p, p + 2, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr), bad, comm,
                 "in place needs recvbuf == sendbuf + rank * recvcount");
    expect_error(coll_alltoall(nullptr, p, 4, COLL_FLOAT32, comm, nullptr), bad, comm, "sendbuf is null");
    expect_error(coll_alltoall(p, p + 3, 4, COLL_FLOAT32, comm, nullptr), bad, comm,
                 "in place needs sendbuf == recvbuf");
    expect_error(coll_allreduce_async(p, p, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr, nullptr), bad, comm,
                 "request is a null pointer");
    expect_error(coll_barrier_async(comm, nullptr), bad, comm, "request is a null pointer");
    // Refused calls leave the communicator usable, and the in-place layouts pass.
    EXPECT_EQ(coll_broadcast(p, 4, COLL_FLOAT32, 0, comm, nullptr), COLL_SUCCESS) << coll_get_last_error(comm);
    EXPECT_EQ(coll_allgather(p, p, 4, COLL_FLOAT32, comm, nullptr), COLL_SUCCESS) << coll_get_last_error(comm);
    EXPECT_EQ(coll_reduce_scatter(p, p, 4, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
    EXPECT_EQ(p[3], 1.0f);
    EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
  });
}

// A communicator is not thread-safe: while one thread is inside an
// allreduce (rank 1 holds it there until told), a second thread's call on
// the same communicator is refused, not interleaved. Either thread may get
// in first; exactly one is refused and the other completes exactly.
TEST(Api, TwoThreadsOnOneCommunicatorAreRefused) {
  const std::string go = "/tmp/coll_api_busy_" + std::to_string(getpid());
  run_ranks(2, [&go](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int64_t x[2] = {rank + 1, rank + 1}, y[2] = {0, 0};
    if (rank == 1) {
      while (access(go.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(coll_allreduce(x, y, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
      EXPECT_EQ(y[0], 3);
    } else {
      std::atomic<int> code[2] = {-1, -1};
      auto call = [&](int i) { code[i] = coll_allreduce(&x[i], &y[i], 1, COLL_INT64, COLL_SUM, comm, nullptr); };
      std::thread first(call, 0), second(call, 1);
      while (code[0] < 0 && code[1] < 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const int refused = code[0] == COLL_INVALID_USAGE ? 0 : 1;
      expect_error(static_cast<coll_result_t>(code[refused].load()), COLL_INVALID_USAGE, comm,
                   "used by two threads at once");
      std::fclose(std::fopen(go.c_str(), "w"));  // now let rank 1 in
      first.join();
      second.join();
      EXPECT_EQ(code[1 - refused], COLL_SUCCESS) << coll_get_last_error(comm);
      EXPECT_EQ(y[1 - refused], 3);
      std::remove(go.c_str());
    }
    EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
  });
}

// coll_comm_destroy while another thread is inside a call would free what
// that call uses: refused, until coll_comm_abort has ended the call.
TEST(Api, DestroyWhileAnotherThreadIsInsideIsRefused) {
  run_ranks(2, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    int64_t v = 0;
    if (rank == 1) {  // waits for a message that never comes, until rank 0 aborts
      EXPECT_EQ(coll_recv(&v, 1, COLL_INT64, 0, comm, nullptr), COLL_REMOTE_ERROR) << coll_get_last_error(comm);
      EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      return;
    }
    std::atomic<int> code{-1};
    std::thread inside([&] {
      coll_result_t r;  // again where it met the probe below, which holds the communicator a moment
      while ((r = coll_recv(&v, 1, COLL_INT64, 1, comm, nullptr)) == COLL_INVALID_USAGE &&
             std::string(coll_get_last_error(comm)).find("two threads") != std::string::npos) {
      }
      code = r;
    });
    // The receive is under way once a registration, which needs the communicator to itself, is refused.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    void* handle = nullptr;
    while (coll_comm_register(comm, &v, sizeof v, &handle) == COLL_SUCCESS &&
           std::chrono::steady_clock::now() < give_up) {
      coll_comm_deregister(comm, handle);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    expect_error(coll_comm_destroy(comm), COLL_INVALID_USAGE, comm, "another thread is inside a call");
    ASSERT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
    inside.join();
    EXPECT_EQ(code, COLL_INVALID_USAGE) << "the receive, aborted";
    EXPECT_NE(std::string(coll_get_last_error(comm)).find("abort"), std::string::npos) << coll_get_last_error(comm);
    EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS) << coll_get_last_error(comm);
  });
}

// A request is released by the coll_wait or coll_test that completes it;
// a second is refused (it freed the request twice), and a refused call
// leaves no request to wait for.
TEST(Api, ARequestIsReleasedOnce) {
  run_ranks(1, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, nranks, id);
    ASSERT_NE(comm, nullptr);
    int32_t v[3] = {1, 2, 3};
    coll_request_t waited = nullptr, tested = nullptr;
    ASSERT_EQ(coll_allreduce_async(v, v, 3, COLL_INT32, COLL_SUM, comm, nullptr, &waited), COLL_SUCCESS);
    ASSERT_EQ(coll_wait(waited), COLL_SUCCESS);
    expect_error(coll_wait(waited), COLL_INVALID_USAGE, nullptr, "released already");
    expect_error(coll_test(waited), COLL_INVALID_USAGE, nullptr, "released already");
    ASSERT_EQ(coll_broadcast_async(v, 3, COLL_INT32, 0, comm, nullptr, &tested), COLL_SUCCESS);
    coll_result_t r;
    while ((r = coll_test(tested)) == COLL_IN_PROGRESS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(r, COLL_SUCCESS);
    expect_error(coll_wait(tested), COLL_INVALID_USAGE, nullptr, "released already");
    EXPECT_EQ(v[2], 3);
    coll_request_t refused = reinterpret_cast<coll_request_t>(&v);  // what a caller's variable held before
    EXPECT_EQ(coll_allreduce_async(nullptr, v, 3, COLL_INT32, COLL_SUM, comm, nullptr, &refused),
              COLL_INVALID_ARGUMENT);
    EXPECT_EQ(refused, nullptr) << "a refused call's request";
    expect_error(coll_wait(refused), COLL_INVALID_ARGUMENT, nullptr, "request is null");
    EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
  });
}

TEST(Api, UnknownAlgorithmIsAnErrorNamingIt) {
  run_ranks(1, [](int rank, int nranks, const coll_unique_id_t& id) {
    setenv("COLL_ALGO", "allreduce:nosuch", 1);
    coll_comm_t comm = nullptr;
    expect_error(coll_comm_init_rank(&comm, nranks, id, rank), COLL_INVALID_ARGUMENT, nullptr, "nosuch");
    setenv("COLL_ALGO", "ring", 1);
    comm = init_or_die(rank, nranks, id);
    EXPECT_NE(comm, nullptr);
    if (comm) coll_comm_destroy(comm);
  });
}

}  // namespace
}  // namespace coll::testing
