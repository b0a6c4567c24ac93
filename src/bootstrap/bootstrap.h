// Rendezvous: creating a job's unique id (and its store), hosting the store
// for launcher-given addresses, and turning the launcher's environment into
// (rank, nranks, unique id).
#pragma once

#include "bootstrap/unique_id.h"

namespace coll::bootstrap {

// A fresh secret and a store on the interface COLL_SOCKET_IFNAME picks.
UniqueId create_unique_id();

struct EnvJob {
  int rank;
  int nranks;
  UniqueId id;
};

// Reads the launcher's variables (launch_env.h); rank 0 starts the store at
// the launcher's address, or creates the id and MPI_Bcasts it.
EnvJob join_from_env();

}  // namespace coll::bootstrap
