// A rank's connection to the bootstrap store. Every call is bounded by the
// deadline it is given; a missing key is waited for until then, and the
// timeout message names the key (and so the rank that never wrote it).
#pragma once

#include "base/deadline.h"
#include "base/socket.h"
#include "bootstrap/unique_id.h"

#include <cstdint>
#include <functional>
#include <string>

namespace coll::bootstrap {

class StoreClient {
 public:
  // Connects (retrying while the store is not up yet, unless `refused` says
  // its listener is known to be up) and authenticates. `rank` identifies
  // the job's first communicator of each rank (whose goodbyes end the
  // store); others pass kStoreClientIdentity.
  //
  // `gone`, when given, is asked between looks while the store has not yet
  // greeted us (every 250 ms at first, then less often, up to 2 s): true
  // ends the wait with kRemote. coll_comm_shrink meets on a socket that
  // listens before its host serves on it, and a guest's connection, taken
  // by the kernel for a host that died, was once left without a reset for
  // the whole timeout: the guest must look at the host again while it waits.
  StoreClient(const UniqueId& id, const Deadline& deadline, uint32_t rank, net::Refused refused = net::Refused::kRetry,
              const std::function<bool()>& gone = nullptr);

  void set(const std::string& key, const std::string& value, const Deadline& deadline);
  // Waits until the key exists. `waiting_for` completes the timeout message,
  // e.g. "rank 3 to arrive".
  std::string get(const std::string& key, const Deadline& deadline, const std::string& waiting_for);
  // The same, asking `writer_gone` now and then (Looks) while the key is
  // missing: true ends the wait with kRemote, as the key will never come.
  std::string get(const std::string& key, const Deadline& deadline, const std::string& waiting_for,
                  const std::function<bool()>& writer_gone);
  // Whether the key exists now (a WAIT held for no time).
  bool has(const std::string& key, const Deadline& deadline);
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline);
  // Best effort: the store may already be gone.
  void bye(int nranks) noexcept;

  const std::string& address() const { return address_; }

 private:
  // A WAIT held up to hold_ms for the key; *absent where it did not come.
  std::string wait(const std::string& key, int64_t hold_ms, const Deadline& deadline, const std::string& waiting_for,
                   bool* absent);
  // `absent`, when given, is set on a kAbsent reply instead of failing.
  std::string request(uint32_t op, const std::string& key, const std::string& value, const Deadline& deadline,
                      const std::string& waiting_for, bool* absent = nullptr);
  void await_greeting(const std::function<bool()>& gone, const Deadline& deadline, const std::string& what);

  std::string address_;
  net::Fd fd_;
};

}  // namespace coll::bootstrap
