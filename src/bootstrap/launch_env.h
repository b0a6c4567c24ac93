// Finds this process's rank, the job size and the rendezvous from the
// variables its launcher set, in this order: collrun, torchrun, Open MPI,
// Slurm. Pure reading: starting the store and MPI_Bcast happen in
// bootstrap.cc.
#pragma once

#include "base/auth.h"

#include <string>

namespace coll::bootstrap {

struct Launch {
  std::string launcher;  // "collrun", "torchrun", "Open MPI", "Slurm"
  int rank = -1;
  int nranks = 0;
  bool use_mpi = false;   // the unique id travels by MPI_Bcast
  std::string root_addr;  // else: rank 0 hosts the store here ("host:port")
  int listen_fd = -1;     // COLL_ROOT_LISTEN_FD: the store's socket, bound by collrun
  auth::Secret secret{};
};

// kInvalidUsage when no launcher's variables are found or they are
// inconsistent; the message lists what was looked for.
Launch discover_launch();

}  // namespace coll::bootstrap
