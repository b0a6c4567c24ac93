// The flight recorder: each communicator keeps its last kEntries operations
// (sequence number, collective, size, algorithm, steps done, the peers a
// long wait is on, timestamps, outcome) so that a hang can be located after
// the fact. Dumped as text to COLL_FLIGHT_RECORDER_DIR when an operation
// fails (a timeout, a dead peer), on coll_comm_abort and on SIGUSR1; tools/colldiag merges the dumps of all
// ranks and names the ranks that are behind.
//
// Cheap enough for every call: a record is a fixed-size slot (no
// allocation) of relaxed atomics, stamped with the coarse clock; no lock on
// the success path. A dump that races an operation may show that record
// half old, half new: it is a diagnosis, not a ledger. The texts of slow
// paths (whom a long wait is on, the error) are written under a mutex.
#pragma once

#include <coll/coll.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace coll {

struct OpRecord {
  enum State : int { kEmpty = 0, kRunning = 1, kDone = 2, kFailed = 3 };

  std::atomic<uint64_t> seq{0};
  std::atomic<const char*> collective{""};  // a string literal
  std::atomic<size_t> count{0};
  std::atomic<int> dtype{0}, op{0}, root{0};
  std::atomic<uint32_t> jobs{0};  // operations in the batch (a group)
  std::atomic<uint32_t> steps{0};
  std::atomic<uint32_t> steps_done{0};
  std::atomic<int> state{kEmpty};
  std::atomic<int64_t> start_us{0};  // wall clock, coarse
  std::atomic<int64_t> end_us{0};
  std::array<std::atomic<uint64_t>, 4> algorithm{};  // its name, 8 characters a word (up to 31)
  std::array<char, 96> waiting_on{};                 // under the mutex: "1,3", peers a long wait is on
  std::array<char, 192> error{};                     // under the mutex
};

class FlightRecorder {
 public:
  static constexpr size_t kEntries = 64;

  // `comm` names the communicator the same way on every rank (the dumps of
  // one communicator are merged by it).
  FlightRecorder(int rank, int nranks, std::string comm, std::string host);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  OpRecord& begin(uint64_t seq, const char* collective, size_t count, int dtype, int op, int root, uint32_t jobs,
                  uint32_t steps, const std::string& algorithm);
  // The algorithm an operation turned out to run, when it was chosen after
  // begin (core/fastpath/peer_access_allreduce.cc).
  void set_algorithm(OpRecord& r, const std::string& algorithm);
  static std::string algorithm(const OpRecord& r);
  // Whom a wait that outlived the first poll is on.
  void waiting_on(OpRecord& r, const std::string& peers);
  void end(OpRecord& r, const char* error);

  // Writes this recorder to COLL_FLIGHT_RECORDER_DIR (if set); returns the
  // file written, or empty.
  std::string dump(const char* reason) const;
  // Every live recorder of this process (SIGUSR1).
  static void dump_all(const char* reason);
  // Installs the SIGUSR1 handler once, when COLL_FLIGHT_RECORDER_DIR is set.
  static void install_signal_handler();

  // The text of a dump, for tests and colldiag's own tests.
  std::string text(const char* reason) const;

 private:
  int rank_;
  int nranks_;
  std::string comm_;
  std::string host_;
  mutable std::mutex mutex_;
  std::array<OpRecord, kEntries> ring_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace coll
