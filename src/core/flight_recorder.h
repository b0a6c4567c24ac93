// The flight recorder: each communicator keeps its last kEntries operations
// (sequence number, collective, size, algorithm, steps done, the peers a
// long wait is on, timestamps, outcome) so that a hang can be located after
// the fact. Dumped as text to COLL_FLIGHT_RECORDER_DIR when an operation
// fails (a timeout, a dead peer), on coll_comm_abort and on SIGUSR1; tools/colldiag merges the dumps of all
// ranks and names the ranks that are behind.
//
// Cheap enough for every call: a record is a fixed-size slot (no
// allocation), stamped with the coarse clock, under a mutex that only a
// dump contends for.
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

  uint64_t seq = 0;
  const char* collective = "";  // a string literal
  size_t count = 0;
  int dtype = 0;
  int op = 0;
  int root = 0;
  uint32_t jobs = 0;  // operations in the batch (a group)
  uint32_t steps = 0;
  std::atomic<uint32_t> steps_done{0};
  std::atomic<int> state{kEmpty};
  int64_t start_us = 0;  // wall clock, coarse
  int64_t end_us = 0;
  std::array<char, 32> algorithm{};
  std::array<char, 96> waiting_on{};  // "1,3": peers with unfinished transfers at the last long wait
  std::array<char, 192> error{};
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
  uint64_t next_ = 0;
};

}  // namespace coll
