// Rendezvous: creating a job's unique id (and its store), hosting the store
// for launcher-given addresses, and turning the launcher's environment into
// (rank, nranks, unique id).
#pragma once

#include "bootstrap/unique_id.h"

namespace coll::bootstrap {

class StoreServer;

// A fresh secret and a store on the interface COLL_SOCKET_IFNAME picks.
UniqueId create_unique_id();

// The same, with the store this process now serves: one that made the id
// for a join which failed (shrink's host, grow's rank 0) stops it, since no
// rank will say goodbye to it and its thread would serve on for nothing.
struct HostedId {
  UniqueId id;
  StoreServer* server = nullptr;
  void stop() const;
};
HostedId host_unique_id();

struct EnvJob {
  int rank;
  int nranks;
  UniqueId id;
};

// Reads the launcher's variables (launch_env.h); rank 0 starts the store at
// the launcher's address, or creates the id and MPI_Bcasts it.
EnvJob join_from_env();

}  // namespace coll::bootstrap
