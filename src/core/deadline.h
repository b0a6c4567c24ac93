// A point in time by which a blocking wait must end. Every wait on a peer in
// coll goes through one, so that nothing blocks longer than COLL_TIMEOUT_MS.
#pragma once

#include <chrono>
#include <cstdint>

namespace coll {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after_ms(int64_t ms) { return Deadline(ms); }

  bool expired() const { return Clock::now() >= end_; }
  int64_t budget_ms() const { return budget_ms_; }

  // Milliseconds left, clamped to [0, cap]; for poll()-style timeouts.
  int remaining_ms(int cap = 1 << 30) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  explicit Deadline(int64_t ms) : end_(Clock::now() + std::chrono::milliseconds(ms)), budget_ms_(ms) {}

  Clock::time_point end_;
  int64_t budget_ms_;
};

}  // namespace coll
