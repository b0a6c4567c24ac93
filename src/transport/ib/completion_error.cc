#include "transport/ib/completion_error.h"

#include "base/error.h"

namespace coll::transport::ib {
namespace {

std::string where(const PairNames& n) {
  return str_cat("rank ", n.self, ": ", n.local, " to rank ", n.peer, " (host ", n.peer_host, ", ", n.remote, ")");
}

}  // namespace

std::string hint_for(ibv_wc_status status, const std::string& detection) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
      return str_cat("the peer did not acknowledge in time: its link or its process is gone, or the QP timeout (",
                     detection, ") is too short for this fabric (raise COLL_IB_TIMEOUT)");
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the peer had no receive posted for too long: its process is stuck or gone";
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_MW_BIND_ERR:
      return "a memory registration problem (wrong key, address or length): a bug in coll or a handle from another "
             "communicator; please report it with the COLL_DEBUG=INFO output of both ranks";
    case IBV_WC_WR_FLUSH_ERR:
      return "the queue pair had already failed";
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_REM_OP_ERR:
      return "the peer refused the operation: do both ranks run the same coll version?";
    case IBV_WC_FATAL_ERR:
      return "the device failed: see the kernel log (dmesg)";
    default:
      return "see the device's documentation for this status";
  }
}

std::string completion_error(const PairNames& names, uint32_t qpn, ibv_wc_status status, const char* status_text,
                             const char* doing, const std::string& detection, const std::string& first) {
  std::string out = str_cat(where(names), ", QP ", qpn, ": ", doing, " failed: ", status_text, " (status ",
                            static_cast<int>(status), "): ", hint_for(status, detection));
  if (status == IBV_WC_WR_FLUSH_ERR && !first.empty()) out += str_cat("; the first error was: ", first);
  return out;
}

std::string event_error(const PairNames& names, const std::string& event) {
  return str_cat(where(names), ": the device reported ", event,
                 ": the pair's work is failed (a port that went down: check the cable, switch or `ip link`)");
}

}  // namespace coll::transport::ib
