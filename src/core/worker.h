// A thread that runs a communicator's operations one after another, in the
// order they were issued, so that non-blocking operations progress while
// the caller computes. Completion is what a coll_request_t waits on.
#pragma once

#include <coll/coll.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace coll {

class Completion {
 public:
  void finish(coll_result_t result, std::string message);
  bool done() const;
  // Blocks until finished; returns the result.
  coll_result_t wait();
  const std::string& message() const { return message_; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  coll_result_t result_ = COLL_SUCCESS;
  std::string message_;
};

class Worker {
 public:
  Worker();
  ~Worker();  // runs what is queued, then stops

  // `task` returns a result and message; `completion` receives them.
  void enqueue(std::function<void()> task);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace coll
