#include "sim/tuning.h"

#include "algorithms/cost_model.h"
#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace coll::sim {
namespace {

// Bytes per second to ns per byte and back; 0 (none) stays 0.
double inverse_rate(double v) { return v > 0 ? 1e9 / v : 0; }

// The CPU ranks' cores, weights and turn (sim::Costs): the node class's, on
// nodes of CPU ranks; a weight of 0 would make a copy take no time.
void check_cpu_settings(const Cluster& c, const Tuning& tuning, const algo::LinkModel& tin, const algo::LinkModel& in0,
                        const algo::LinkModel& tnet, const algo::LinkModel& net0) {
  struct Setting {
    const char* name;
    double algo::LinkModel::*field;
    double least;  // above it, or equal where least_ok
    bool least_ok;
    double most;
    bool whole;
    const char* expected;
  };
  constexpr const char* kWeight = "a weight above 0 and at most 100 (1: as a message's bytes)";
  const Setting settings[] = {
      {"cores", &algo::LinkModel::cores, 1, true, 1 << 30, true, "a whole number of at least 1"},
      {"local_weight", &algo::LinkModel::local_weight, 0, false, 100, false, kWeight},
      {"reduce_weight", &algo::LinkModel::reduce_weight, 0, false, 100, false, kWeight},
      {"same_core_read_weight", &algo::LinkModel::same_core_read_weight, 0, false, 100, false, kWeight},
      {"turn_us", &algo::LinkModel::turn_us, 0, true, 10000, false, "a time of 0 to 10000 microseconds"}};
  for (const auto& [name, field, least, least_ok, most, whole, expected] : settings) {
    if (tnet.*field != net0.*field)
      fail(Code::kInvalidArgument, tuning.origin, ": ", c.network_class, ".", name,
           ": the CPU ranks' cores, weights and turn are the node class's (", c.node_class, ".", name, ")");
    const double set = tin.*field;
    if (set == in0.*field) continue;
    if (c.memory_bytes_per_s <= 0)
      fail(Code::kInvalidArgument, tuning.origin, ": ", c.node_class, ".", name,
           " is for nodes of CPU ranks; the cluster's nodes have no node.memory_gbps");
    if (!(set > least || (least_ok && set == least)) || !std::isfinite(set) || set > most ||
        (whole && set != std::floor(set)))
      fail(Code::kInvalidArgument, tuning.origin, ": ", c.node_class, ".", name, " is ", set, "; ", expected,
           " is expected");
  }
}

}  // namespace

void caches_to_model(const Cluster& c, algo::LinkModel& m) {
  m.cache_bytes = c.cache_bytes;
  m.cache_beta_ns_per_byte = inverse_rate(c.cache_bytes_per_s);
  m.cache2_bytes = c.cache2_bytes;
  m.cache2_beta_ns_per_byte = inverse_rate(c.cache2_bytes_per_s);
}

void set_caches(Cluster& c, const algo::LinkModel& m) {
  c.cache_bytes = m.cache_bytes;
  c.cache_bytes_per_s = inverse_rate(m.cache_beta_ns_per_byte);
  c.cache2_bytes = m.cache2_bytes;
  c.cache2_bytes_per_s = inverse_rate(m.cache2_beta_ns_per_byte);
}

void weights_to_model(const Cluster& c, algo::LinkModel& m) {
  m.local_weight = c.costs.local_weight;
  m.reduce_weight = c.costs.reduce_weight;
  m.same_core_read_weight = c.costs.same_core_read_weight;
  m.turn_us = c.costs.turn_s * 1e6;
}

void set_weights(Cluster& c, const algo::LinkModel& m) {
  c.costs.local_weight = m.local_weight;
  c.costs.reduce_weight = m.reduce_weight;
  c.costs.same_core_read_weight = m.same_core_read_weight;
  c.costs.turn_s = m.turn_us * 1e-6;
}

void apply_tuning(Cluster& c, const Tuning& tuning, double& gpu_latency, double& hop_latency, bool one_node) {
  algo::CostModel m;
  algo::LinkModel& in = m.links[c.node_class];
  in.alpha_us = (c.costs.alpha_s + 2 * gpu_latency) * 1e6;
  in.beta_ns_per_byte = 1e9 / c.gpu_link_bytes_per_s;
  in.node_beta_ns_per_byte = inverse_rate(c.memory_bytes_per_s);
  in.gamma_ns_per_byte = c.costs.gamma_s_per_byte * 1e9;
  caches_to_model(c, in);
  in.cores = c.cores;
  weights_to_model(c, in);
  in.chunk_bytes = static_cast<double>(c.chunk_bytes);
  algo::LinkModel& net = m.links[c.network_class];
  net = in;
  net.alpha_us = (c.costs.alpha_s + 2 * hop_latency) * 1e6;
  net.beta_ns_per_byte = 1e9 / c.nic_bytes_per_s;
  net.node_beta_ns_per_byte = 0;
  const algo::LinkModel in0 = in, net0 = net;
  m.apply(tuning.text, tuning.origin);
  const algo::LinkModel &tin = m.links[c.node_class], &tnet = m.links[c.network_class];
  if (tin.beta_ns_per_byte <= 0 || tnet.beta_ns_per_byte <= 0)
    fail(Code::kInvalidArgument, tuning.origin, ": ", c.node_class, ".beta_ns_per_byte and ", c.network_class,
         ".beta_ns_per_byte must be above 0 for a simulation");
  for (const auto& [name, set] : {std::pair{"node_beta_ns_per_byte", tin.node_beta_ns_per_byte > 0},
                                  std::pair{"cache_bytes", tin.cache_bytes > 0 || tin.cache2_bytes > 0}})
    if (set && c.memory_bytes_per_s <= 0)
      fail(Code::kInvalidArgument, tuning.origin, ": ", c.node_class, ".", name,
           " is for nodes of CPU ranks; the cluster's nodes have no node.memory_gbps");
  check_cpu_settings(c, tuning, tin, in0, tnet, net0);
  if (tin.cache2_beta_ns_per_byte > 0 &&
      (tin.cache_bytes <= 0 || tin.cache_beta_ns_per_byte <= 0 || tin.cache2_bytes <= tin.cache_bytes))
    fail(Code::kInvalidArgument, tuning.origin, ": ", c.node_class, ".cache2_bytes (", tin.cache2_bytes,
         ") is a second cache: it needs the first (cache_bytes, cache_beta_ns_per_byte) and must be larger");
  if (tin.cores != in0.cores) c.cores = static_cast<int>(tin.cores);
  if (tin.alpha_us != in0.alpha_us) {
    c.costs.alpha_s = tin.alpha_us * 1e-6;
    gpu_latency = 0;
  }
  if (tnet.alpha_us != net0.alpha_us) {
    if (tnet.alpha_us < tin.alpha_us)
      fail(Code::kInvalidArgument, tuning.origin, ": ", c.network_class, ".alpha_us (", tnet.alpha_us, ") is below ",
           c.node_class, ".alpha_us (", tin.alpha_us, "): a message between nodes costs its",
           " sender's alpha and more");
    hop_latency = (tnet.alpha_us - tin.alpha_us) * 1e-6 / 2;
  }
  c.gpu_link_bytes_per_s = 1e9 / tin.beta_ns_per_byte;
  c.memory_bytes_per_s = inverse_rate(tin.node_beta_ns_per_byte);
  c.nic_bytes_per_s = 1e9 / tnet.beta_ns_per_byte;
  c.costs.gamma_s_per_byte = tin.gamma_ns_per_byte * 1e-9;
  set_weights(c, tin);
  set_caches(c, tin);
  c.chunk_bytes = static_cast<size_t>((one_node ? tin : tnet).chunk_bytes);
}

Cluster at_size(const Cluster& c, double bytes) {
  algo::LinkModel m;
  m.beta_ns_per_byte = 1e9 / c.gpu_link_bytes_per_s;
  caches_to_model(c, m);
  const int per_node = std::min(c.gpus_per_node, c.fabric.nranks());
  const double faster = m.beta_ns_per_byte / m.at_size(bytes, per_node).beta_ns_per_byte;
  Cluster out = c;
  set_node_rates(out, c.gpu_link_bytes_per_s * faster, c.memory_bytes_per_s * faster);
  return out;
}

void set_node_rates(Cluster& c, double gpu_link_bytes_per_s, double memory_bytes_per_s) {
  if (gpu_link_bytes_per_s <= 0 || (memory_bytes_per_s <= 0 && c.fabric.nranks() > 0 && c.fabric.place(0).memory >= 0))
    fail(Code::kInvalidArgument, c.name, ": a rank's link and its node's memory need a rate above 0");
  c.gpu_link_bytes_per_s = gpu_link_bytes_per_s;
  c.memory_bytes_per_s = memory_bytes_per_s;
  for (int r = 0; r < c.fabric.nranks(); ++r) {
    const Fabric::Place& p = c.fabric.place(r);
    for (int l : {p.gpu_up, p.gpu_down}) c.fabric.link(l).bytes_per_s = gpu_link_bytes_per_s;
    if (p.memory >= 0) c.fabric.link(p.memory).bytes_per_s = memory_bytes_per_s;
  }
}

}  // namespace coll::sim
