// Per-pair connection data through the job's bootstrap store: rank a's
// blob for rank b under "<prefix>pair/a>b". Transports publish and fetch
// through it while they connect (transport.h, PairExchange).
#pragma once

#include "base/deadline.h"
#include "base/error.h"
#include "bootstrap/store_client.h"
#include "transport/transport.h"

#include <functional>
#include <string>

namespace coll {

class StorePairExchange final : public transport::PairExchange {
 public:
  StorePairExchange(bootstrap::StoreClient& store, std::string prefix, int rank, int64_t timeout_ms,
                    std::function<bool(int)> gone = nullptr)
      : store_(store), prefix_(std::move(prefix)), rank_(rank), timeout_ms_(timeout_ms), gone_(std::move(gone)) {}

  void publish(int peer, const std::string& blob, const std::string& round = {}) override {
    store_.set(str_cat(prefix_, "pair/", rank_, ">", peer, round.empty() ? "" : "/", round), blob,
               Deadline::after_ms(timeout_ms_));
  }
  std::string fetch(int peer, const Deadline& deadline, const std::string& round = {}) override {
    const std::string key = str_cat(prefix_, "pair/", peer, ">", rank_, round.empty() ? "" : "/", round);
    const std::string what = str_cat("rank ", peer, "'s connection data for the pair with rank ", rank_,
                                     round.empty() ? "" : " (", round, round.empty() ? "" : ")");
    if (!gone_) return store_.get(key, deadline, what);
    return store_.get(key, deadline, what, [&] { return gone_(peer); });
  }
  bool gone(int peer) override { return gone_ && gone_(peer); }

 private:
  bootstrap::StoreClient& store_;
  std::string prefix_;
  int rank_;
  int64_t timeout_ms_;
  std::function<bool(int)> gone_;
};

}  // namespace coll
