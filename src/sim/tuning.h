// Measured link parameters on a cluster: a tuning file's classes applied
// to the cluster's links (scripts/calibrate.sh writes them, collsim
// --tuning reads them), and a CPU cluster as a collective of one size finds
// it, the part of its ranks' buffers the cache holds moving faster.
#pragma once

#include "sim/cluster.h"

#include <string>

namespace coll::algo {
struct LinkModel;  // algorithms/cost_model.h
}  // namespace coll::algo

namespace coll::sim {

// A tuning file's text (COLL_TUNING_FILE's format: "shm.alpha_us = 3"
// lines, as scripts/calibrate.sh writes them) and its name, for errors.
struct Tuning {
  std::string text, origin;
};

// While a cluster file is parsed, before its links are made: the tuning's
// parameters of the cluster's two link classes over the file's, through
// the cost model's own parser (the same lines the selector reads).
// Latencies, where the file sets them: the node class's alpha is each
// message's, at the sender; the network class's is a message's between
// two nodes under one leaf, its part beyond the node's the two NICs'
// latency (the levels above keep the cluster file's; without it, the NICs
// too). Gamma is the node class's: the simulator has one. The pipelining
// chunk is the class's that prices the run, as in coll: the network's when
// the ranks span nodes. gpu_latency and hop_latency come in as the cluster
// file's and go out as the tuning makes them. The node class's cores,
// caches, node_beta, copy weights and turn are for nodes of CPU ranks
// (node.memory_gbps); the weights and the turn are the node class's only.
// kInvalidArgument for a bad line or a value that cannot be.
void apply_tuning(Cluster& c, const Tuning& tuning, double& gpu_latency, double& hop_latency, bool one_node);

// Every rank's link (each way) and each node's memory at these rates;
// kInvalidArgument for a rate of 0 (a memory of 0 where nodes have one).
void set_node_rates(Cluster& c, double gpu_link_bytes_per_s, double memory_bytes_per_s);

inline bool has_cache(const Cluster& c) { return c.cache_bytes > 0 && c.cache_bytes_per_s > 0; }
// The cluster's two caches into a link model's terms (ns per byte), and back.
void caches_to_model(const Cluster& c, algo::LinkModel& m);
void set_caches(Cluster& c, const algo::LinkModel& m);
// The CPU ranks' copy weights and turn (Costs) into a link model, and back.
void weights_to_model(const Cluster& c, algo::LinkModel& m);
void set_weights(Cluster& c, const algo::LinkModel& m);
// The cluster as a collective whose buffers hold `bytes` on each rank
// finds it: its ranks' links and memory faster by the part of a node's
// ranks' buffers in cache (algo::LinkModel::at_size). A copy: for clusters
// with a cache (has_cache), of CPU ranks.
Cluster at_size(const Cluster& c, double bytes);

}  // namespace coll::sim
