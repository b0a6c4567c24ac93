// collrun's watch over the ranks it started: their tagged output, their
// ends, the failure that ends the others, the spares left waiting, and the
// shared-memory segments that ended ranks left behind.
#pragma once

#include "options.h"

#include <sys/types.h>

#include <string>
#include <vector>

namespace collrun {

struct Rank {
  pid_t pid = -1;
  int out_fd = -1;  // with --tag-output: the rank's stdout+stderr
  std::string partial;
  bool running = false;
  bool spare = false;
  bool spare_ended = false;  // still waiting when the ranks were done: ended, no failure
};

// A rank ended by a signal (ours, after another failed) before its local peers
// mapped its shared-memory segment leaves it in /dev/shm. A segment's name
// ends with its maker's pid: what an ended rank made, for any communicator,
// is removed while the rank is still a zombie, so that no other process has
// its pid yet. A rank run through a wrapper made its segments in a child of
// it: those of the job's secret (the first communicator and its splits) are
// removed once every rank has ended.
class Leftovers {
 public:
  void remove_by(pid_t pid);
  void remove_of(const std::string& secret_hex);
  void report() const;  // how many were removed, on stderr

 private:
  void remove(const std::vector<std::string>& names);
  size_t removed_ = 0;
  std::string first_;
};

// SIGINT and SIGTERM end the job: SIGTERM to the ranks at once, with no grace period, SIGKILL 2 s later
// (at a second signal, at once). SIGPIPE is ignored.
void catch_signals();

// Until every rank and spare has ended: their output, each end, and after
// the first failure the grace period, SIGTERM, and SIGKILL 2 s later.
// Returns the first failure's status (128 + signal for a signal), else 0.
int supervise(const Options& opt, std::vector<Rank>& ranks, const std::string& spares_dir, Leftovers& leftovers);

// A rank that could not be started (no pipe, no fork): the ones that were
// would wait for it until their timeout, so they are ended now, without a
// grace period: SIGTERM, and SIGKILL two seconds later.
void end_started(std::vector<Rank>& ranks, Leftovers& leftovers);

}  // namespace collrun
