// The bootstrap store in one process: set/get/add, waiting with a deadline,
// and the secret and frame checks that keep strangers out.
#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/store_client.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_server.h"
#include "bootstrap/unique_id.h"
#include "support/proc_self.h"
#include "support/sanitizers.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace coll::bootstrap {
namespace {

// This process's CPU time so far (user and system), in ms.
double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000.0 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000.0;
}

// A store on loopback; `server` (optional) receives it, to watch it end.
UniqueId start_store(StoreServer** server = nullptr) {
  UniqueId id;
  id.secret = auth::random_secret();
  StoreServer* started = StoreServer::start(net::SockAddr::parse("127.0.0.1:0", "test"), id.secret);
  id.store_address = started->address().to_string();
  if (server != nullptr) *server = started;
  return id;
}

TEST(Store, SetGetAdd) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(5000);
  StoreClient a(id, deadline, kStoreClientIdentity), b(id, deadline, kStoreClientIdentity);
  a.set("k", "value", deadline);
  EXPECT_EQ(b.get("k", deadline, "k"), "value");
  EXPECT_EQ(a.add("n", 5, deadline), 5);
  EXPECT_EQ(b.add("n", -2, deadline), 3);
  std::string big(1 << 20, 'q');
  a.set("big", big, deadline);
  EXPECT_EQ(b.get("big", deadline, "big"), big);
}

TEST(Store, GetWaitsForTheKeyThenTimesOutNamingIt) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(5000);
  StoreClient a(id, deadline, kStoreClientIdentity), b(id, deadline, kStoreClientIdentity);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    a.set("late", "here", Deadline::after_ms(5000));
  });
  EXPECT_EQ(b.get("late", deadline, "the late key"), "here");
  late.join();
  auto start = std::chrono::steady_clock::now();
  try {
    b.get("never", Deadline::after_ms(300), "rank 7 to join");
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kTimeout);
    EXPECT_NE(std::string(e.what()).find("rank 7 to join"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1300));
}

// A get that asks whether the key's writer is gone: the server holds each
// WAIT for a look only, so the client asks between them. A key written
// meanwhile is read at once; a writer found gone ends the wait with kRemote
// at the look that finds it, not at the deadline; the connection still
// serves requests after the WAITs it saw end.
TEST(Store, AGetThatLooksAtTheWriterEndsWhenItIsGone) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(5000);
  StoreClient a(id, deadline, kStoreClientIdentity), b(id, deadline, kStoreClientIdentity);
  int looks = 0;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    a.set("late", "here", Deadline::after_ms(5000));
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(b.get("late", deadline, "the late key", [&] { return ++looks, false; }), "here");
  late.join();
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 1300.0);  // read as it came, not at the next look (1400 ms)
  EXPECT_GE(looks, 1);    // at 200 ms, then 600 ms
  looks = 0;
  start = std::chrono::steady_clock::now();
  try {
    b.get("never", Deadline::after_ms(20000), "rank 5's blob", [&] { return ++looks == 2; });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kRemote);
    EXPECT_NE(std::string(e.what()).find("stopped waiting for rank 5's blob (store key 'never'): its writer is gone"),
              std::string::npos)
        << e.what();
  }
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(ms, 500.0);  // the second look, at 600 ms
  EXPECT_LT(ms, 2000.0);
  EXPECT_EQ(looks, 2);
  a.set("after", "yes", deadline);
  EXPECT_EQ(b.get("after", deadline, "after"), "yes");
  try {
    b.get("never", Deadline::after_ms(300), "rank 5's blob", [] { return false; });
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kTimeout);
    EXPECT_NE(std::string(e.what()).find("waiting for rank 5's blob (store key 'never')"), std::string::npos)
        << e.what();
  }
  // A GET the server still holds when it times out: its answer would come
  // later, so the connection is closed rather than let the next request
  // take that answer for its own. (A WAIT's answer may come whole before
  // its deadline or not, by a hair: this one never does.)
  EXPECT_THROW(b.get("never", Deadline::after_ms(200), "rank 6's blob"), Error);
  try {
    b.set("next", "x", deadline);
    ADD_FAILURE() << "a connection with a reply in flight was used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("closed after an earlier request got no answer in time"), std::string::npos)
        << e.what();
  }
}

// The store ends when every rank said goodbye, or left without one (died):
// a dead rank must not keep it running in the survivor that hosts it.
TEST(Store, EndsWhenEveryRankSaidGoodbyeOrDied) {
  StoreServer* server = nullptr;
  UniqueId id = start_store(&server);
  auto deadline = Deadline::after_ms(5000);
  auto rank0 = std::make_unique<StoreClient>(id, deadline, 0);
  auto rank1 = std::make_unique<StoreClient>(id, deadline, 1);
  auto split = std::make_unique<StoreClient>(id, deadline, kStoreClientIdentity);
  split.reset();  // a split communicator leaving says nothing about its rank
  rank1.reset();  // rank 1 dies: its connection closes without a goodbye
  rank0->bye(2);
  for (int i = 0; i < 300 && !server->finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(server->finished());
}

// A rank that leaves without a goodbye is marked gone (gone_key), and a
// wait for the mark ends as it is set; a goodbye or a split's connection
// marks nothing; the rank coming again clears it.
TEST(Store, ARankLeavingWithoutAGoodbyeIsMarkedGone) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(5000);
  StoreClient watcher(id, deadline, 0);
  auto rank1 = std::make_unique<StoreClient>(id, deadline, 1);
  auto rank2 = std::make_unique<StoreClient>(id, deadline, 2);
  auto split = std::make_unique<StoreClient>(id, deadline, kStoreClientIdentity);
  std::thread leaving([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rank2->bye(3);
    rank2.reset();
    split.reset();
    rank1.reset();
  });
  EXPECT_EQ(watcher.get(gone_key(1), deadline, "rank 1 to leave"), "");
  leaving.join();
  EXPECT_TRUE(watcher.has(gone_key(1), deadline));
  EXPECT_FALSE(watcher.has(gone_key(2), deadline));
  EXPECT_FALSE(watcher.has(gone_key(kStoreClientIdentity), deadline));
  EXPECT_FALSE(watcher.has(gone_key(0), deadline));
  StoreClient again(id, deadline, 1);  // its init retried with the same id
  EXPECT_FALSE(watcher.has(gone_key(1), deadline));
}

// stop() wakes the serving thread: a store stopped while it waits for its
// clients (a failed join's, or at exit) ends at once, not at its wait's
// 500 ms end. Stopped right after it served a request, when that wait has
// just begun.
TEST(Store, AStoppedStoreEndsAtOnceWhileItsClientsAreConnected) {
  for (int i = 0; i < 3; ++i) {
    StoreServer* server = nullptr;
    UniqueId id = start_store(&server);
    const Deadline deadline = Deadline::after_ms(5000);
    StoreClient rank0(id, deadline, 0);
    rank0.set("k", "v", deadline);
    EXPECT_EQ(rank0.get("k", deadline, "k"), "v");
    const auto stopped = std::chrono::steady_clock::now();
    server->stop();
    while (!server->finished() && std::chrono::steady_clock::now() - stopped < std::chrono::seconds(5))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(server->finished());
    EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::milliseconds(300)) << "stop " << i;
  }
}

// A forked child that stops the store it inherited (a communicator
// destroyed in the child) stops nothing of its parent's: the parent's store
// still serves, and its thread does not spin on the wake-up they share.
TEST(Store, AForkedChildStoppingItsCopyLeavesTheParentsStoreServing) {
  StoreServer* server = nullptr;
  UniqueId id = start_store(&server);
  const Deadline deadline = Deadline::after_ms(5000);
  StoreClient rank0(id, deadline, 0);
  rank0.set("k", "v", deadline);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    server->stop();
    _exit(0);
  }
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const double before = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(process_cpu_ms() - before, 150.0) << "the parent's store thread spins";
  EXPECT_FALSE(server->finished());
  EXPECT_EQ(rank0.get("k", deadline, "k"), "v");
  server->stop();
}

// At exit the process stops its stores and waits for their threads to be
// done with the crypto library before the library's exit handler runs: a
// thread ending while that handler ran crashed rank 0 about once in 450 runs
// under load. The child exits with a store serving (stopped at exit, which
// wakes it), and ten children as their store's thread ends, which
// must not outlive it (a rank that makes many jobs would gather threads).
TEST(Store, AProcessExitsCleanlyWithItsStoreServingOrJustEnded) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // this process has threads of its own
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EXIT(
      {
        UniqueId id = start_store();
        const Deadline deadline = Deadline::after_ms(5000);
        StoreClient(id, deadline, 0).set("k", "v", deadline);
        std::exit(0);  // rank 1 has not said goodbye: the store still serves
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  for (int i = 0; i < 10; ++i)
    EXPECT_EXIT(
        {
          StoreServer* server = nullptr;
          UniqueId id = start_store(&server);
          const int serving = coll::testing::threads();  // counted here: a sanitizer adds threads of its own
          { StoreClient(id, Deadline::after_ms(5000), 0).bye(1); }
          if (i == 0) {  // the thread ends with its store
            while (!server->finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            for (int t = 0; t < 1000 && coll::testing::threads() == serving; ++t)
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (coll::testing::threads() != serving - 1) std::exit(2);
          }
          std::exit(0);  // as the store's thread ends
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(Store, AWrongSecretIsRefusedAndOthersGoOn) {
  UniqueId id = start_store();
  UniqueId forged = id;
  forged.secret[0] ^= 1;
  try {
    StoreClient intruder(forged, Deadline::after_ms(3000), kStoreClientIdentity);
    ADD_FAILURE() << "a wrong secret was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kRemote);
    EXPECT_NE(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
  StoreClient good(id, Deadline::after_ms(3000), kStoreClientIdentity);
  good.set("still", "works", Deadline::after_ms(3000));
}

TEST(Store, AMalformedFrameDropsOnlyThatConnection) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(5000);
  // Authenticate by hand, then send an oversized request header.
  net::Fd fd = net::connect_to(net::SockAddr::parse(id.store_address, "store"), deadline, "store");
  auth::client_handshake(fd.get(), id.secret, kStorePurpose, kStoreClientIdentity, deadline, "store");
  StoreRequestHeader h{static_cast<uint32_t>(StoreOp::kSet), 3, uint64_t{1} << 40};
  net::send_all(fd.get(), &h, sizeof(h), deadline, "store");
  char byte;
  EXPECT_THROW(net::recv_all(fd.get(), &byte, 1, deadline, "store"), Error) << "the connection should be closed";
  StoreClient good(id, deadline, kStoreClientIdentity);
  good.set("ok", "1", deadline);
  EXPECT_EQ(good.get("ok", deadline, "ok"), "1");
}

// A client that sends on while its GET waits (ours never does) is dropped
// once it sent more than a request could hold; before, the store kept
// reading it, 64 KiB a wake, without bound. Others go on.
TEST(Store, AClientFloodingBehindAWaitingGetIsDropped) {
  UniqueId id = start_store();
  auto deadline = Deadline::after_ms(20000);
  net::Fd fd = net::connect_to(net::SockAddr::parse(id.store_address, "store"), deadline, "store");
  auth::client_handshake(fd.get(), id.secret, kStorePurpose, kStoreClientIdentity, deadline, "store");
  const std::string key = "never";
  StoreRequestHeader h{static_cast<uint32_t>(StoreOp::kGet), static_cast<uint32_t>(key.size()), 0};
  net::send_all(fd.get(), &h, sizeof(h), deadline, "store");
  net::send_all(fd.get(), key.data(), key.size(), deadline, "store");
  const std::string flood(1 << 20, 'x');
  bool dropped = false;
  for (int mib = 0; mib < 64 && !dropped; ++mib) {
    try {
      net::send_all(fd.get(), flood.data(), flood.size(), Deadline::after_ms(5000), "store");
    } catch (const Error&) {
      dropped = true;  // the store closed it while we sent
    }
  }
  if (!dropped) {
    char byte;
    try {
      net::recv_all(fd.get(), &byte, 1, Deadline::after_ms(3000), "store");
      ADD_FAILURE() << "the store replied to a GET of a key never set";
    } catch (const Error& e) {
      EXPECT_NE(e.code(), Code::kTimeout) << "the connection should be closed, not kept: " << e.what();
    }
  }
  StoreClient good(id, deadline, kStoreClientIdentity);
  good.set("ok", "1", deadline);
  EXPECT_EQ(good.get("ok", deadline, "ok"), "1");
}

// Reads `n` bytes from a pipe within 20 s: a child that hung fails the test,
// not ctest's limit.
bool read_within(int fd, void* into, size_t n) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 20000) == 1 && read(fd, into, n) == static_cast<ssize_t>(n);
}

// ThreadSanitizer ends a child of a threaded process that starts a thread,
// as a child store does (this process runs the stores of earlier tests).
constexpr bool kChildStoresRun = !coll::testing::kUnderThreadSanitizer;

// A store in a child process, whose descriptors a test may limit: the
// child starts it, reports its address, and on the word measures its own
// CPU time over 500 ms and counts its descriptors, then serves until killed.
class ChildStore {
 public:
  explicit ChildStore(int spare_descriptors) {
    id_.secret = auth::random_secret();
    if (pipe(to_parent_) != 0 || pipe(to_child_) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      try {
        serve(spare_descriptors);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child store: %s\n", e.what());
      }
      _exit(1);
    }
    uint16_t port = 0;
    if (pid_ < 0 || !read_within(to_parent_[0], &port, sizeof(port)))
      throw std::runtime_error("the child store did not start");
    address_ = net::SockAddr::parse("127.0.0.1:" + std::to_string(port), "test");
    id_.store_address = address_.to_string();
  }
  ~ChildStore() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    for (int fd : {to_parent_[0], to_parent_[1], to_child_[0], to_child_[1]}) close(fd);
  }
  const UniqueId& id() const { return id_; }
  const net::SockAddr& address() const { return address_; }
  // Its CPU time (ms) over 500 ms from now, and its descriptors then.
  std::pair<double, int> measure() const {
    std::pair<double, int> got{-1, -1};
    if (write(to_child_[1], "m", 1) != 1 || !read_within(to_parent_[0], &got, sizeof(got)))
      throw std::runtime_error("the child store did not answer");
    return got;
  }

 private:
  // `spare` >= 0: a descriptor limit that leaves it that many free, once
  // the store's thread serves (it makes its epoll set first).
  [[noreturn]] void serve(int spare) {
    StoreServer* server = StoreServer::start(net::SockAddr::parse("127.0.0.1:0", "test"), id_.secret);
    const auto port = static_cast<uint16_t>(server->address().port());
    id_.store_address = server->address().to_string();  // the child's copy
    const Deadline deadline = Deadline::after_ms(10000);
    StoreClient(id_, deadline, kStoreClientIdentity).set("serving", "1", deadline);
    if (spare >= 0) {
      rlimit limit{};
      getrlimit(RLIMIT_NOFILE, &limit);
      limit.rlim_cur = static_cast<rlim_t>(coll::testing::highest_fd() + spare + 8);
      setrlimit(RLIMIT_NOFILE, &limit);
      std::vector<int> fillers;  // every free descriptor below the limit, less `spare`
      for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
      for (int k = 0; k < spare && !fillers.empty(); ++k) close(fillers.back()), fillers.pop_back();
    }
    char word;
    if (write(to_parent_[1], &port, sizeof(port)) != sizeof(port)) _exit(1);
    while (read(to_child_[0], &word, 1) == 1) {
      const double before = process_cpu_ms();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const std::pair<double, int> got{process_cpu_ms() - before, coll::testing::open_fds()};
      if (write(to_parent_[1], &got, sizeof(got)) != sizeof(got)) _exit(1);
    }
    _exit(0);
  }

  UniqueId id_;
  net::SockAddr address_;
  pid_t pid_ = -1;
  int to_parent_[2] = {-1, -1}, to_child_[2] = {-1, -1};
};

// Strangers that connect and say nothing, `n` of them.
std::vector<net::Fd> strangers(const net::SockAddr& address, int n) {
  std::vector<net::Fd> fds;
  for (int k = 0; k < n; ++k) fds.push_back(net::connect_to(address, Deadline::after_ms(5000), "store"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return fds;
}

void expect_it_serves(const ChildStore& store) {
  const Deadline deadline = Deadline::after_ms(10000);
  StoreClient client(store.id(), deadline, kStoreClientIdentity);
  client.set("k", "v", deadline);
  EXPECT_EQ(client.get("k", deadline, "k"), "v");
}

// A store out of descriptors leaves the connections it cannot accept in the
// backlog, where the listener stays readable: it pauses instead of spinning
// on it (before, the store's thread took a whole core until a descriptor
// was free), and serves once descriptors are free again.
TEST(Store, OutOfDescriptorsItPausesAndServesAgainOnceSomeAreFree) {
  if (!kChildStoresRun) GTEST_SKIP() << "a child store starts a thread, which ThreadSanitizer forbids after fork";
  ChildStore store(3);  // room for three connections
  std::vector<net::Fd> flood = strangers(store.address(), 16);
  EXPECT_LT(store.measure().first, 150.0) << "the store's thread spins while it is out of descriptors";
  flood.clear();  // the store sees them leave and has descriptors again
  expect_it_serves(store);
}

// Strangers, connections yet to prove the job secret, hold at most 512 of
// the store's descriptors at once: the rest wait in the backlog, and a
// flood cannot take every descriptor the rank has.
TEST(Store, StrangersHoldAtMostTheirShareOfDescriptors) {
  if (!kChildStoresRun) GTEST_SKIP() << "a child store starts a thread, which ThreadSanitizer forbids after fork";
  ChildStore store(-1);
  const int before = store.measure().second;
  std::vector<net::Fd> flood = strangers(store.address(), 600);
  const auto [cpu_ms, fds] = store.measure();
  EXPECT_EQ(fds - before, 512) << "descriptors the strangers hold in the store's process";
  EXPECT_LT(cpu_ms, 150.0) << "the store's thread spins while strangers hold their share";
  flood.clear();
  expect_it_serves(store);
}

// collrun's hand-down: rank 0 hosts the store on the socket it inherited.
class InheritedListener : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = net::listen_on(net::SockAddr::parse("127.0.0.1:0", "test"), &bound_, "test");
    setenv("COLL_RANK", "0", 1);
    setenv("COLL_NRANKS", "1", 1);
    setenv("COLL_ROOT_ADDR", bound_.to_string().c_str(), 1);
    setenv("COLL_JOB_SECRET", "00112233445566778899aabbccddeeff", 1);
  }
  void TearDown() override {
    for (const char* v : {"COLL_RANK", "COLL_NRANKS", "COLL_ROOT_ADDR", "COLL_JOB_SECRET", "COLL_ROOT_LISTEN_FD"})
      unsetenv(v);
  }
  net::SockAddr bound_;
  net::Fd listener_;
};

TEST_F(InheritedListener, Rank0ServesOnItAndTakesItOnce) {
  setenv("COLL_ROOT_LISTEN_FD", std::to_string(dup(listener_.get())).c_str(), 1);
  EnvJob job = join_from_env();
  EXPECT_EQ(std::getenv("COLL_ROOT_LISTEN_FD"), nullptr) << "a second communicator must not adopt it again";
  listener_.reset();  // only rank 0's copy is left, as under collrun
  auto deadline = Deadline::after_ms(5000);
  StoreClient client(job.id, deadline, kStoreClientIdentity);
  client.set("k", "v", deadline);
  EXPECT_EQ(client.get("k", deadline, "k"), "v");
}

TEST_F(InheritedListener, ADescriptorThatIsNotAListenerIsNamed) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  setenv("COLL_ROOT_LISTEN_FD", std::to_string(pipe_fds[0]).c_str(), 1);
  try {
    join_from_env();
    FAIL() << "a pipe was taken for a listening socket";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("COLL_ROOT_LISTEN_FD"), std::string::npos) << e.what();
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST_F(InheritedListener, OneOnAnotherPortThanTheRootAddressIsRefused) {
  net::SockAddr other_bound;
  net::Fd other = net::listen_on(net::SockAddr::parse("127.0.0.1:0", "test"), &other_bound, "test");
  setenv("COLL_ROOT_LISTEN_FD", std::to_string(dup(other.get())).c_str(), 1);
  try {
    join_from_env();
    FAIL() << "a listener on port " << other_bound.port() << " was taken for " << bound_.to_string();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("COLL_ROOT_ADDR"), std::string::npos) << e.what();
  }
}

// A guest of coll_comm_shrink connects to a host's listener before the host
// serves on it. While no greeting comes it asks `gone` between looks: true
// ends the wait at once with kRemote, false keeps it to the deadline, and a
// greeting that comes late is taken.
class AwaitedGreeting : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = net::listen_on(net::SockAddr::parse("127.0.0.1:0", "test"), &bound_, "a host not yet serving");
    id_.secret = auth::random_secret();
    id_.store_address = bound_.to_string();
  }
  static double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  net::Fd listener_;
  net::SockAddr bound_;
  UniqueId id_;
};

TEST_F(AwaitedGreeting, AHostFoundGoneEndsTheWaitAtOnce) {
  int asked = 0;
  const auto start = std::chrono::steady_clock::now();
  try {
    StoreClient guest(id_, Deadline::after_ms(20000), kStoreClientIdentity, net::Refused::kFail,
                      [&asked] { return ++asked == 2; });
    ADD_FAILURE() << "a silent host was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kRemote) << e.what();
    EXPECT_NE(std::string(e.what()).find("is gone"), std::string::npos) << e.what();
  }
  EXPECT_EQ(asked, 2);
  EXPECT_LT(ms_since(start), 10000.0) << "the 20 s deadline was waited for";
}

TEST_F(AwaitedGreeting, AHostStillThereIsWaitedForUntilTheDeadline) {
  int asked = 0;
  const auto start = std::chrono::steady_clock::now();
  try {
    StoreClient guest(id_, Deadline::after_ms(2000), kStoreClientIdentity, net::Refused::kFail, [&asked] {
      ++asked;
      return false;
    });
    ADD_FAILURE() << "a silent host was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kTimeout) << e.what();
  }
  EXPECT_GE(ms_since(start), 1950.0);
  EXPECT_GE(asked, 2);  // at 0.25, 0.75 and 1.75 s
}

TEST_F(AwaitedGreeting, AGreetingThatComesLateIsTaken) {
  std::thread host([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    StoreServer::start_on(std::move(listener_), bound_, id_.secret);
  });
  int asked = 0;
  StoreClient guest(id_, Deadline::after_ms(10000), kStoreClientIdentity, net::Refused::kFail, [&asked] {
    ++asked;
    return false;
  });
  host.join();
  EXPECT_GE(asked, 1);
  const auto deadline = Deadline::after_ms(5000);
  guest.set("k", "v", deadline);
  EXPECT_EQ(guest.get("k", deadline, "k"), "v");
}

TEST(StoreProtocol, RequestsAreBoundedBeforeUse) {
  EXPECT_EQ(validate_request({1, 3, 10}), "");
  EXPECT_NE(validate_request({0, 3, 10}), "");
  EXPECT_NE(validate_request({9, 3, 10}), "");
  EXPECT_NE(validate_request({1, 0, 10}), "");
  EXPECT_NE(validate_request({1, kMaxKeyBytes + 1, 0}), "");
  EXPECT_NE(validate_request({1, 3, kMaxValueBytes + 1}), "");
  EXPECT_NE(validate_request({3, 3, 4}), "") << "ADD needs exactly 8 bytes";
  EXPECT_NE(validate_request({2, 3, 1}), "") << "GET carries no value";
  EXPECT_EQ(validate_request({5, 3, 8}), "");
  EXPECT_NE(validate_request({5, 3, 0}), "") << "WAIT carries its hold, 8 bytes";
  EXPECT_NE(validate_request({6, 3, 0}), "");
}

TEST(UniqueId, RoundTripAndGarbage) {
  UniqueId id;
  id.store_address = "[fd00::2]:12345";
  id.secret = auth::random_secret();
  UniqueId back = UniqueId::decode(id.encode());
  EXPECT_EQ(back.store_address, id.store_address);
  EXPECT_EQ(back.secret, id.secret);
  coll_unique_id_t raw = id.encode();
  raw.internal[24] = 0;  // address length
  EXPECT_THROW(UniqueId::decode(raw), Error);
  raw.internal[0] = 'x';
  EXPECT_THROW(UniqueId::decode(raw), Error);
}

TEST(Auth, SecretsAndProofs) {
  auth::Secret s = auth::random_secret();
  EXPECT_EQ(auth::secret_from_hex(auth::to_hex(s), "t"), s);
  EXPECT_THROW(auth::secret_from_hex("abc", "t"), Error);
  EXPECT_THROW(auth::secret_from_hex(std::string(32, 'g'), "t"), Error);
  auth::Nonce server_nonce = auth::random_nonce();
  auth::ClientHello hello{auth::kHelloMagic, 3, auth::random_nonce(), {}};
  EXPECT_FALSE(auth::check_client_hello(hello, s, "p", server_nonce)) << "an empty MAC must fail";
}

}  // namespace
}  // namespace coll::bootstrap
