// Every algorithm: a pure function from a collective's shape on one rank to
// that rank's schedule. Each lives in a file that opens with its definition,
// source and cost; select.cc lists them with their cost formulas.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/schedule.h"

namespace coll::algo {

// ring.cc
Schedule ring_allreduce(const CollShape& shape);
Schedule hierarchical_allreduce(const CollShape& shape);
// Ranks per node when every node of shape.node_of has as many, else 0.
int ranks_per_node(const CollShape& shape);
Schedule ring_reduce_scatter(const CollShape& shape);
Schedule ring_allgather(const CollShape& shape);
Schedule ring_broadcast(const CollShape& shape);
// tree.cc
Schedule tree_allreduce(const CollShape& shape);
Schedule tree_reduce(const CollShape& shape);
Schedule tree_broadcast(const CollShape& shape);
// halving_doubling.cc, recursive_doubling.cc
Schedule halving_doubling_allreduce(const CollShape& shape);
Schedule recursive_doubling_allreduce(const CollShape& shape);
// direct.cc
Schedule direct_allreduce(const CollShape& shape);
Schedule direct_reduce(const CollShape& shape);
Schedule direct_alltoall(const CollShape& shape);
// p2p.cc
Schedule p2p_send(const CollShape& shape);
Schedule p2p_recv(const CollShape& shape);
Schedule dissemination_barrier(const CollShape& shape);

}  // namespace coll::algo
