// colldiag --ib: what the verbs transport sees on this node and what it
// would use: every device port (state, link layer, MTU, speed), the port
// this rank chooses (COLL_IB_HCA, LOCAL_RANK), and on RoCE the GID table
// with the entry chosen and why, or the error that a job would get.
#pragma once

#ifdef COLL_WITH_IB
#include "base/config.h"
#include "base/error.h"
#include "transport/ib/device.h"
#include "transport/roce/gid.h"
#endif

#include <cstdio>
#include <string>

namespace coll::tools {

// 0: ib can run here; 1: it cannot, and the reason was printed.
inline int ib_report() {
#ifndef COLL_WITH_IB
  std::printf("ib: not built (COLL_WITH_IB=OFF: no libibverbs-dev when coll was configured)\n");
  return 1;
#else
  using namespace coll::transport::ib;
  std::string why;
  const Verbs* verbs = load_verbs(&why);
  if (verbs == nullptr) {
    std::printf("ib: off: %s\n", why.c_str());
    return 1;
  }
  const std::vector<PortInfo> ports = discover_ports(*verbs, &why);
  if (ports.empty()) {
    std::printf("ib: off: %s\n", why.c_str());
    return 1;
  }
  for (const PortInfo& p : ports) std::printf("port %s\n", p.describe().c_str());
  try {
    const PortInfo& chosen = choose_port(ports, config::get_string("COLL_IB_HCA"), "", launcher_local_rank());
    std::printf("chosen %s\n", chosen.describe().c_str());
    if (chosen.ethernet())
      std::printf("GID table:\n%s\n", coll::transport::roce::describe_table(
                                          coll::transport::roce::read_gid_table("/sys", chosen.device, chosen.port))
                                          .c_str());
    Device device(*verbs, chosen);
    std::printf("gid index %d: %s\n", device.gid_index(), device.gid_reason().c_str());
    return 0;
  } catch (const coll::Error& e) {
    std::printf("ib: error: %s\n", e.what());
    return 1;
  }
#endif
}

}  // namespace coll::tools
