// What collrun's ranks share: where each goes (this machine or an emulated
// node, its rank there), the bootstrap store's address, the job's secret,
// torchrun's variables; and a rank's own start, in the forked child.
#pragma once

#include "base/socket.h"
#include "bootstrap/emulated_node.h"
#include "options.h"

#include <string>
#include <vector>

namespace collrun {

struct Job {
  std::vector<coll::bootstrap::EmulatedNode> nodes;  // empty: this machine only
  std::vector<int> node_of;                          // each rank's node
  std::vector<int> local_rank;                       // each rank's rank on its node
  std::vector<int> local_size;                       // each node's ranks
  std::vector<int> cpus;                             // --bind-to core: the CPUs dealt round
  coll::net::Fd store_listener;                      // the store's port, bound here for rank 0 (loopback only)
  std::string root;                                  // COLL_ROOT_ADDR
  std::string secret;                                // COLL_JOB_SECRET, hex
  std::string master_addr, master_port;              // torchrun's MASTER_ADDR, MASTER_PORT
  std::string spares_dir;                            // --spares: where spares find their seats
};

// Places the ranks and makes the job's addresses and secret. An error
// (emulated nodes missing, no directory for the spares) is printed; then
// false, and `exit_code` is what collrun returns.
bool plan_job(const Options& opt, Job& job, int& exit_code);

// In the forked child of rank or spare `r` (spares after the ranks): its
// process group, signals, output (into `out_fd` with --tag-output), its
// variables, CPU and node; then runs the program. Exits 127 where it cannot.
[[noreturn]] void run_rank(const Options& opt, const Job& job, int r, int out_fd);

}  // namespace collrun
