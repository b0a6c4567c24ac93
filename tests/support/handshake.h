// A handshake between the ranks of one run_ranks() job, for tests whose
// ranks must act in order: a rank that has to stay away until others are
// done (so that their call times out, or is aborted, with nobody answering)
// waits until they say so. A sleep instead would be outlasted by a rank
// that a loaded machine runs late, and the test would fail for no fault.
//
// Made before run_ranks() forks, so every rank maps the same shared word.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <thread>

namespace coll::testing {

class Handshake {
 public:
  Handshake() {
    void* at = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) throw std::runtime_error("Handshake: mmap failed");
    arrived_ = new (at) std::atomic<int>(0);
  }
  ~Handshake() { munmap(arrived_, sizeof(std::atomic<int>)); }
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  // This rank is done with what the others wait for.
  void arrive() { arrived_->fetch_add(1); }

  // Until `count` arrivals; false if they have not come within `limit`.
  bool wait_for(int count, std::chrono::milliseconds limit = std::chrono::seconds(30)) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (arrived_->load() < count) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  std::atomic<int>* arrived_ = nullptr;
};

}  // namespace coll::testing
