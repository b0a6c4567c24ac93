// The communicator: one rank's membership in a group, its connection to the
// bootstrap store, its transport and its executor. Created collectively;
// every operation is collective and numbered (seq) so that messages of
// different operations cannot be confused.
#pragma once

#include "bootstrap/store_client.h"
#include "bootstrap/unique_id.h"
#include "core/executor.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace coll {

class Communicator {
 public:
  // Joins the job: connects to the store, publishes this rank's transport
  // address, waits for every rank (COLL_TIMEOUT_MS), connects the ring.
  Communicator(int nranks, const bootstrap::UniqueId& id, int rank);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  void allreduce(const void* send, void* recv, size_t count, coll_datatype_t dtype, coll_redop_t op);

  // Closes connections so that peers blocked on us fail fast; later calls fail.
  void abort();
  bool aborted() const { return aborted_; }

 private:
  Deadline operation_deadline() const;

  int rank_;
  int nranks_;
  int64_t timeout_ms_;
  size_t chunk_bytes_;
  std::string algo_setting_;  // COLL_ALGO, read once at init
  std::unique_ptr<bootstrap::StoreClient> store_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<std::string> addresses_;
  Executor executor_;
  uint64_t seq_ = 0;
  std::atomic<bool> aborted_{false};
};

}  // namespace coll
