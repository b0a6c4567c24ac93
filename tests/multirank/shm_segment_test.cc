// A rank killed between making its shared-memory segment and its local
// peers mapping it cannot unlink it: the peer that outlives it does, when
// its transport ends, so a job's failure leaves nothing in /dev/shm under
// any launcher.
#include "base/deadline.h"
#include "base/error.h"
#include "transport/shm/process.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm_transport.h"
#include "transport/transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace coll::testing {
namespace {

// Setup asks for nothing through it here: the segments carry all.
struct NoPairs : transport::PairExchange {
  void publish(int, const std::string&, const std::string&) override {}
  std::string fetch(int, const Deadline&, const std::string&) override { return {}; }
};

bool in_dev_shm(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

TEST(ShmSegment, OneLeftByAPeerKilledBeforeItWasMappedIsUnlinkedByTheSurvivor) {
  const std::string tag = "segment-test-" + std::to_string(getpid());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  // The transport's names: the job's tag, the rank, the maker's pid and pid namespace.
  const std::string dead = "/coll-" + tag + "-r0" + transport::shm::segment_maker(child == 0 ? getpid() : child);
  const std::string own = "/coll-" + tag + "-r1" + transport::shm::segment_maker(getpid());
  if (child == 0) {
    // Rank 0, as far as making its segment (the transport's layout for 2 ranks), then killed.
    using transport::shm::ShmTransport;
    transport::shm::Segment made =
        transport::shm::Segment::create(dead, 2, ShmTransport::kSlots, ShmTransport::kSlotBytes, {});
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_TRUE(in_dev_shm(dead)) << "the killed rank made no segment";

  {
    const std::string host = "segment-test-host";
    transport::shm::ShmTransport survivor(1, 2, tag, host);
    const std::vector<std::string> addresses = {"shm|" + host + "|" + dead + "|" + std::to_string(child),
                                                survivor.local_address()};
    NoPairs pairs;
    try {
      survivor.connect({0}, addresses, pairs, Deadline::after_ms(10000));
      ADD_FAILURE() << "connected to a rank that was killed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kRemote) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0 (pid " + std::to_string(child) + ") exited"), std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(in_dev_shm(dead)) << "unlinked while the survivor's transport still lives";
  }
  EXPECT_FALSE(in_dev_shm(dead)) << dead << " left in /dev/shm";
  EXPECT_FALSE(in_dev_shm(own)) << own << " left in /dev/shm";
  std::filesystem::remove("/dev/shm" + dead);  // whatever the outcome, nothing of the test stays
}

}  // namespace
}  // namespace coll::testing
