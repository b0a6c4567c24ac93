// Verbs failures as messages a user can act on: who (peer rank and host),
// where (local and remote device and port, the QP number), what the device
// said (ibv_wc_status_str, the async event) and what to do about it. The
// opaque "Got completion with error 12" of other libraries becomes "retry
// count exceeded: the peer's link or process is gone, or COLL_IB_TIMEOUT is
// too short" (docs/TROUBLESHOOTING.md lists them all).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace coll::transport::ib {

// The two ends of the pair a failure happened on.
struct PairNames {
  int self = 0;
  int peer = 0;
  std::string peer_host;
  std::string local;   // "rxe0:1"
  std::string remote;  // the peer's "rxe0:1"
};

// What to do about a completion status; `detection` names the QP timeout
// setting in force ("COLL_IB_TIMEOUT=20, COLL_IB_RETRY_CNT=7: about 34 s").
std::string hint_for(ibv_wc_status status, const std::string& detection);

// The whole message of a failed completion on QP `qpn`. `first`: the pair's
// first error, when this one (a flush) only follows from it.
std::string completion_error(const PairNames& names, uint32_t qpn, ibv_wc_status status, const char* status_text,
                             const char* doing, const std::string& detection, const std::string& first);

// The message of a fatal asynchronous event.
std::string event_error(const PairNames& names, const std::string& event);

}  // namespace coll::transport::ib
