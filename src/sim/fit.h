// Calibration by simulation: the node class's link parameters (alpha, beta,
// two caches' sizes and betas, the node's memory, gamma, the weights of a
// CPU rank's copies on its core and its turn there: sim::Costs) that make the
// simulator reproduce measured runs, found by minimising the squared log
// error of its predictions (Nelder-Mead). The runs are simulated as the
// tool would simulate them, so the parameters mean what the model means
// (a local copy shares its rank's link with its messages, and so on), not
// what a closed form of one collective would make of them.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/cost_model.h"
#include "sim/cluster.h"

#include <functional>
#include <string>
#include <vector>

namespace coll::sim {

struct Measured {
  algo::Collective collective = algo::Collective::kAllreduce;
  std::string algorithm;
  int ranks = 0;
  size_t bytes = 0;  // nccl-tests' size
  double seconds = 0;
};

// "allgather ring 2 65536 21.0" lines (collective, algorithm, ranks, bytes,
// microseconds; # comments), as scripts/calibrate.sh writes them.
// kInvalidArgument naming `origin` and the line for a bad one.
std::vector<Measured> parse_measured(const std::string& text, const std::string& origin);

struct FitResult {
  algo::LinkModel link;             // the node class's, fitted
  double rms_log_error = 0;         // of the predictions over the runs, at the fit
  std::vector<double> predicted_s;  // each run's, at the fit
  int evaluations = 0;
};

// `cluster_of(ranks)` gives the cluster of that many ranks, one node with a
// memory link (CPU ranks). kInvalidArgument for runs that cannot be fitted
// (none, ranks the cluster lacks, a node without memory).
FitResult fit_node_class(const std::function<Cluster(int)>& cluster_of, const std::vector<Measured>& runs);

// The fitted parameters as tuning-file lines of `link_class`.
std::string tuning_lines(const std::string& link_class, const algo::LinkModel& m);

// The cluster with its node class's links at m's rates (each rank's link,
// the node's memory where it has one), alpha and gamma.
void set_node_class(Cluster& c, const algo::LinkModel& m);

}  // namespace coll::sim
