// A point in time by which a blocking wait must end. Every wait on a peer in
// coll goes through one, so that nothing blocks longer than COLL_TIMEOUT_MS.
// The budget starts at the first look at the clock (the first wait), not at
// construction: a call that never has to wait never reads the clock, which
// is a measurable part of a sub-microsecond collective.
#pragma once

#include <chrono>
#include <cstdint>

namespace coll {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after_ms(int64_t ms) { return Deadline(ms); }

  bool expired() const {
    Clock::time_point now = Clock::now();
    return now >= end(now);
  }
  int64_t budget_ms() const { return budget_ms_; }

  // Milliseconds left, clamped to [0, cap]; for poll()-style timeouts.
  int remaining_ms(int cap = 1 << 30) const {
    Clock::time_point now = Clock::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end(now) - now).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  explicit Deadline(int64_t ms) : budget_ms_(ms) {}

  Clock::time_point end(Clock::time_point now) const {
    if (!started_) end_ = now + std::chrono::milliseconds(budget_ms_), started_ = true;
    return end_;
  }

  int64_t budget_ms_;
  mutable bool started_ = false;
  mutable Clock::time_point end_{};
};

}  // namespace coll
