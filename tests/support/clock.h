// Small helpers the multi-rank tests share: time since a start, and a
// communicator's last error as a string for a failed expectation's message.
#pragma once

#include <coll/coll.h>

#include <chrono>
#include <string>

namespace coll::testing {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline std::string last_error(coll_comm_t comm) { return coll_get_last_error(comm); }

}  // namespace coll::testing
