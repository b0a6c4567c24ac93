// Bootstrap with real processes: the job secret keeps strangers out without
// disturbing the job, and a rank that never arrives is a timeout naming it.
#include "base/socket.h"
#include "bootstrap/unique_id.h"
#include "support/handshake.h"
#include "support/multirank.h"
#include "support/proc_self.h"
#include "support/sanitizers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace coll::testing {
namespace {

// A sanitizer's runtime needs descriptors of its own (UBSan, built with
// ASan here, checks an object's type through a pipe): out of them, it
// reports its own failure.
constexpr bool kUnderSanitizer = kUnderAddressSanitizer || kUnderThreadSanitizer;

bool allreduce_ok(coll_comm_t comm, int nranks) {
  std::vector<int32_t> v(33, 1);
  if (coll_allreduce(v.data(), v.data(), v.size(), COLL_INT32, COLL_SUM, comm, nullptr) != COLL_SUCCESS) return false;
  for (int32_t x : v)
    if (x != nranks) return false;
  return true;
}

// Ranks 0 and 1 form a job; "rank 2" is an intruder holding an id with the
// wrong secret, which must be refused while the job completes.
TEST(Bootstrap, WrongSecretIsRefusedAndTheJobGoesOn) {
  run_ranks(
      3,
      [](int rank, int, const coll_unique_id_t& id) {
        // The store closes when the job's ranks say goodbye: rank 0 stays
        // until the intruder was answered, which it says with this file.
        const std::string answered = "/tmp/coll-test-intruder." + std::to_string(getppid());
        if (rank < 2) {
          coll_comm_t comm = init_or_die(rank, 2, id);
          ASSERT_NE(comm, nullptr);
          EXPECT_TRUE(allreduce_ok(comm, 2));
          for (int i = 0; rank == 0 && access(answered.c_str(), F_OK) != 0 && i < 2000; ++i) usleep(10000);
          if (rank == 0) unlink(answered.c_str());
          coll_comm_destroy(comm);  // the last goodbye closes the store
          return;
        }
        coll_unique_id_t forged = id;
        forged.internal[8] ^= 0x5a;  // first byte of the secret
        coll_comm_t comm = nullptr;
        coll_result_t r = coll_comm_init_rank(&comm, 2, forged, 1);
        EXPECT_EQ(r, COLL_REMOTE_ERROR);
        std::string message = coll_get_last_error(nullptr);
        EXPECT_NE(message.find("secret"), std::string::npos) << message;
        EXPECT_EQ(comm, nullptr);
        fclose(fopen(answered.c_str(), "w"));
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}}});
}

// Strangers on the store port (garbage, silence, a truncated handshake) are
// dropped; the job completes. Rank 1 joins once the strangers are there,
// and the silent one stays until both ranks are done.
TEST(Bootstrap, StrangersOnTheStorePortDoNotStallTheJob) {
  Handshake arrived;  // first the strangers, then ranks 0 and 1 when done
  run_ranks(
      3,
      [&arrived](int rank, int, const coll_unique_id_t& id) {
        if (rank < 2) {
          if (rank == 1) ASSERT_TRUE(arrived.wait_for(1)) << "the strangers never came";
          coll_comm_t comm = init_or_die(rank, 2, id);
          ASSERT_NE(comm, nullptr);
          EXPECT_TRUE(allreduce_ok(comm, 2));
          coll_comm_destroy(comm);
          arrived.arrive();
          return;
        }
        auto addr = net::SockAddr::parse(bootstrap::UniqueId::decode(id).store_address, "store");
        auto deadline = Deadline::after_ms(5000);
        net::Fd silent = net::connect_to(addr, deadline, "store");
        net::Fd garbage = net::connect_to(addr, deadline, "store");
        std::string junk(4096, 'x');
        net::send_all(garbage.get(), junk.data(), junk.size(), deadline, "store");
        net::Fd truncated = net::connect_to(addr, deadline, "store");
        net::send_all(truncated.get(), "COLL", 4, deadline, "store");
        truncated.reset();
        arrived.arrive();
        EXPECT_TRUE(arrived.wait_for(3)) << "ranks 0 and 1 never finished";  // the silent one stays open
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}}});
}

TEST(Bootstrap, ARankThatNeverArrivesIsATimeoutNamingIt) {
  constexpr int kTimeoutMs = 2000;
  Handshake failed;  // ranks 1 and 2, once their init has failed
  run_ranks(
      4,
      [&failed](int rank, int nranks, const coll_unique_id_t& id) {
        auto start = std::chrono::steady_clock::now();
        coll_comm_t comm = nullptr;
        coll_result_t r = coll_comm_init_rank(&comm, nranks, id, rank);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(r, COLL_TIMEOUT) << coll_get_last_error(nullptr);
        std::string message = coll_get_last_error(nullptr);
        EXPECT_NE(message.find("rank 3"), std::string::npos) << message;
        EXPECT_NE(message.find("COLL_INIT_TIMEOUT_MS"), std::string::npos) << message;
        EXPECT_GE(ms, kTimeoutMs * 0.95);
        EXPECT_LE(ms, kTimeoutMs + 1000.0) << "the timeout must hold within a second";
        // Rank 0's process hosts the store: if it exited at once, ranks whose
        // deadline falls a moment later would see the store close instead.
        if (rank == 0)
          EXPECT_TRUE(failed.wait_for(2)) << "ranks 1 and 2 never gave up";
        else
          failed.arrive();
      },
      // Init has its own timeout: the operations' 10 minutes must not apply.
      RankOptions{.limit_s = 60,
                  .env = {{"COLL_INIT_TIMEOUT_MS", std::to_string(kTimeoutMs)}, {"COLL_TIMEOUT_MS", "600000"}},
                  .absent_rank = 3});
}

// Operations that must fail fast, in a job whose ranks start late: a short
// COLL_TIMEOUT_MS does not bound init, which waits up to ten minutes unless
// COLL_INIT_TIMEOUT_MS says otherwise; the config's field does the same.
TEST(Bootstrap, InitWaitsLongerThanAShortOperationTimeout) {
  run_ranks(
      3,
      [](int rank, int nranks, const coll_unique_id_t& id) {
        if (rank == 2) usleep(1500000);  // three times the operations' timeout
        coll_comm_t comm = nullptr;
        coll_config_t config = COLL_CONFIG_INIT;
        config.timeout_ms = rank == 1 ? 400 : 0;
        config.init_timeout_ms = rank == 1 ? 30000 : 0;
        ASSERT_EQ(coll_comm_init_rank_config(&comm, nranks, id, rank, &config), COLL_SUCCESS)
            << coll_get_last_error(nullptr);
        int x = 1;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_INT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
            << coll_get_last_error(comm);
        EXPECT_EQ(x, 3);
        coll_comm_destroy(comm);
        coll_config_t negative = COLL_CONFIG_INIT;
        negative.init_timeout_ms = -1;
        EXPECT_EQ(coll_comm_init_rank_config(&comm, nranks, id, rank, &negative), COLL_INVALID_ARGUMENT);
        EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("init_timeout_ms"), std::string::npos);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "500"}}});
}

// Rank 1 has `spare` descriptors free; over tcp it must reach the store,
// connect to rank 0 and accept rank 2. Wherever its init runs out, it
// fails at once saying so (before, out of descriptors while accepting, it
// spun until its timeout and then blamed rank 2), and so do its peers once
// it has joined the store (before it joins, nobody can know it failed:
// they wait for it to join until their timeout). True when init succeeded;
// `marked_gone` is set where a peer learnt it from the store's gone mark.
bool init_with_spare_descriptors(int spare, bool* marked_gone) {
  constexpr int kInitTimeoutMs = 6000;
  constexpr double kFastMs = 3500;  // within the waits' looks at 200, 600, 1400 and 3000 ms
  Handshake done;                   // rank 0 hosts the store: it stays until the others are done
  const std::string files = "/tmp/coll-test-spare." + std::to_string(getpid());
  const std::string joined = files + ".joined", gone = files + ".gone";
  run_ranks(
      3,
      [&](int rank, int nranks, const coll_unique_id_t& id) {
        if (rank == 1) {
          const int highest = highest_fd();  // the holes below it filled: only `spare` are free
          for (int fd = open("/dev/null", O_RDONLY); fd >= 0 && fd < highest; fd = open("/dev/null", O_RDONLY)) {
          }
          rlimit limit{};
          getrlimit(RLIMIT_NOFILE, &limit);
          limit.rlim_cur = static_cast<rlim_t>(highest_fd() + 1 + spare);
          ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
        }
        auto start = std::chrono::steady_clock::now();
        coll_comm_t comm = nullptr;
        coll_result_t r = coll_comm_init_rank(&comm, nranks, id, rank);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const std::string message = coll_get_last_error(nullptr);
        if (r == COLL_SUCCESS) {
          EXPECT_TRUE(allreduce_ok(comm, nranks));
          coll_comm_destroy(comm);
          if (rank == 1) fclose(fopen(joined.c_str(), "w"));
        } else if (rank == 1) {
          EXPECT_NE(message.find("open files"), std::string::npos) << spare << " spare: " << message;
          EXPECT_LT(ms, kFastMs) << spare << " spare: " << message;
        } else {
          const bool never_joined = message.find("timed out") != std::string::npos &&
                                    message.find("rank 1 of 3 to join") != std::string::npos;
          EXPECT_TRUE(ms < kFastMs || never_joined) << spare << " spare, rank " << rank << ": " << message;
          if (message.find("its writer is gone") != std::string::npos) fclose(fopen(gone.c_str(), "w"));
        }
        if (rank == 0)
          EXPECT_TRUE(done.wait_for(2));
        else
          done.arrive();
      },
      RankOptions{.limit_s = 60,
                  .env = {{"COLL_TRANSPORTS", "tcp"}, {"COLL_INIT_TIMEOUT_MS", std::to_string(kInitTimeoutMs)}}});
  *marked_gone = *marked_gone || access(gone.c_str(), F_OK) == 0;
  const bool ok = access(joined.c_str(), F_OK) == 0;
  unlink(joined.c_str());
  unlink(gone.c_str());
  return ok;
}

TEST(Bootstrap, OutOfDescriptorsInitFailsAtOnceSayingSo) {
  if (kUnderSanitizer) GTEST_SKIP() << "a sanitizer's runtime fails on its own without spare descriptors";
  int spare = 0;
  bool marked_gone = false;
  while (spare < 64 && !init_with_spare_descriptors(spare, &marked_gone) && !::testing::Test::HasFailure()) ++spare;
  EXPECT_LT(spare, 64) << "init never succeeded";
  EXPECT_GT(spare, 2) << "init needs more descriptors than that";
  EXPECT_TRUE(marked_gone) << "no peer learnt from the store that rank 1 had left before publishing its address";
}

TEST(Bootstrap, AnUninitialisedIdIsAnInvalidArgument) {
  run_ranks(1, [](int, int, const coll_unique_id_t&) {
    coll_unique_id_t zero;
    std::memset(&zero, 0, sizeof(zero));
    coll_comm_t comm = nullptr;
    EXPECT_EQ(coll_comm_init_rank(&comm, 1, zero, 0), COLL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("unique id"), std::string::npos);
  });
}

}  // namespace
}  // namespace coll::testing
