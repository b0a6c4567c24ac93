// One collective on a cluster, as a communicator of the cluster's ranks
// would run it: the ranks ordered by node as coll orders them, the
// algorithm named or the one coll's selector picks from the cost model
// (the network's link as its slowest class, the GPU link inside a node),
// each rank's schedule built by coll's algorithms, then simulated.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/select.h"
#include "base/error.h"
#include "sim/cluster.h"
#include "sim/engine.h"
#include "sim/symmetry.h"

#include <optional>

#include <string>
#include <vector>

namespace coll::sim {

struct CollectiveRun {
  algo::Collective collective = algo::Collective::kAllreduce;
  size_t bytes = 0;  // nccl-tests' size: the vector (allreduce, broadcast, reduce), the whole output
                     // (allgather), the whole input (reduce_scatter), each rank's buffer (alltoall)
  size_t elem_size = 4;
  std::string algorithm;  // empty or "auto": the selector's choice
  // Run one node's ranks for all when the schedules are symmetric under
  // translation by a node (symmetry.h): automatically from kSymmetricFrom ranks.
  enum class Symmetry { kAuto, kUse, kNever } symmetry = Symmetry::kAuto;
  static constexpr int kSymmetricFrom = 1024;
};

struct Prediction {
  std::string algorithm;    // what ran
  std::string auto_choice;  // what coll's selector would pick
  Result result;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;   // nccl-tests' definition
  int symmetric_classes = 0;      // under a symmetry: the units simulated, each for a class
  std::string symmetry;           // under a symmetry: what its classes are (Symmetry::describe)
  bool classes_listed = false;    // the tree's classes: a kind's NICs group by nodes alike
  bool same_dependencies = true;  // under a symmetry: SymmetricPlan's
};

// The cost model the selector prices the cluster with, by the cluster's
// class names: the network's (a message between nodes: alpha plus the
// NIC's rate; "net" unless the file names it) and the node's ("gpu").
algo::CostModel cost_model_of(const Cluster& cluster);

// nccl-tests' bus bandwidth factor of a collective on n ranks.
double bus_factor(algo::Collective c, int n);

// What predict simulates: every rank's schedule of the algorithm asked for
// (or coll's choice), with the shape and the link the cost model prices.
struct Plan {
  algo::CollShape shape;  // rank 0's
  const algo::Algorithm* algorithm = nullptr;
  std::string auto_choice;
  std::string link_class;  // the cluster's network class across nodes, its node class on one
  algo::LinkModel link;
  std::vector<algo::Schedule> schedules;  // every rank's, or the symmetry's representatives'
  std::optional<Symmetry> symmetry;
  bool same_dependencies = true;
};
// kInvalidArgument for a bad run; TooBig where it is too big to simulate
// here (more than 8192 ranks or 10^8 steps without a symmetry, or 10^8
// route walks with one), which a sweep shows as not simulated and goes on.
struct TooBig : Error {
  using Error::Error;
};
Plan plan(const Cluster& cluster, const CollectiveRun& run);

// A CPU cluster's links at the share of its cache that the run's buffers
// take (algo::buffer_bytes; tuning.h, at_size); none for a cluster without
// a cache.
std::optional<Cluster> sized_for(const Cluster& whole, const CollectiveRun& run);

Prediction predict(const Cluster& cluster, const CollectiveRun& run, std::vector<StepTime>* timeline = nullptr,
                   const Progress* progress = nullptr);

}  // namespace coll::sim
