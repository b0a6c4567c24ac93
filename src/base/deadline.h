// A point in time by which a blocking wait must end. Every wait on a peer in
// coll goes through one, so that nothing blocks longer than COLL_TIMEOUT_MS.
// The budget starts at the first look at the clock (the first wait), not at
// construction: a call that never has to wait never reads the clock, which
// is a measurable part of a sub-microsecond collective.
//
// A deadline may also be cancelled from another thread (coll_comm_abort):
// it then counts as expired, and waits on it last at most kCancelCheckMs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace coll {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr int kCancelCheckMs = 50;

  // `setting`: the variable that sets the budget, for messages.
  static Deadline after_ms(int64_t ms, const std::atomic<bool>* cancel = nullptr,
                           const char* setting = "COLL_TIMEOUT_MS") {
    return Deadline(ms, cancel, setting);
  }

  bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }
  bool expired() const {
    if (cancelled()) return true;
    Clock::time_point now = Clock::now();
    return now >= end(now);
  }
  int64_t budget_ms() const { return budget_ms_; }
  const char* setting() const { return setting_; }

  // Milliseconds left, clamped to [0, cap]; for poll()-style timeouts.
  int remaining_ms(int cap = 1 << 30) const {
    if (cancel_ != nullptr) {
      if (cancelled()) return 0;
      if (cap > kCancelCheckMs) cap = kCancelCheckMs;
    }
    Clock::time_point now = Clock::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end(now) - now).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  Deadline(int64_t ms, const std::atomic<bool>* cancel, const char* setting)
      : budget_ms_(ms), cancel_(cancel), setting_(setting) {}

  Clock::time_point end(Clock::time_point now) const {
    if (!started_) end_ = now + std::chrono::milliseconds(budget_ms_), started_ = true;
    return end_;
  }

  int64_t budget_ms_;
  const std::atomic<bool>* cancel_;
  const char* setting_;
  mutable bool started_ = false;
  mutable Clock::time_point end_{};
};

// When to look again at a peer that a wait depends on (whether it is
// gone): soon at first, then less and less often, up to every 2 s, so that
// a long wait neither costs much nor fills the peer's listen queue with looks.
class Looks {
 public:
  Looks() : next_(Deadline::Clock::now() + std::chrono::milliseconds(kFirstMs)) {}
  // Whether a look is due now; if so, the next one is scheduled.
  bool due() {
    const auto now = Deadline::Clock::now();
    if (now < next_) return false;
    every_ms_ = every_ms_ * 2 > kMaxMs ? kMaxMs : every_ms_ * 2;
    next_ = now + std::chrono::milliseconds(every_ms_);
    return true;
  }
  // Milliseconds until the next look is due, at least 1 and at most `cap`.
  int until_due_ms(int cap) const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_ - Deadline::Clock::now()).count();
    return left < 1 ? 1 : (left > cap ? cap : static_cast<int>(left));
  }

 private:
  static constexpr int kFirstMs = 200, kMaxMs = 2000;
  int every_ms_ = kFirstMs;
  Deadline::Clock::time_point next_;
};

}  // namespace coll
