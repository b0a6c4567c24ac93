#include "sim/explain.h"

#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

namespace coll::sim {
namespace {

const char* buffer_name(algo::BufferId b) {
  switch (b) {
    case algo::BufferId::kSend:
      return "input";
    case algo::BufferId::kRecv:
      return "output";
    case algo::BufferId::kScratch:
      return "scratch";
  }
  return "?";
}

// "elements [256, 512) of its input"
std::string where(const algo::Region& r, size_t bytes, size_t elem) {
  char text[96];
  std::snprintf(text, sizeof text, "elements [%zu, %zu) of its %s", r.offset / elem, (r.offset + bytes) / elem,
                buffer_name(r.buffer));
  return text;
}

std::string us(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", s * 1e6);
  return text;
}

}  // namespace

Cluster teaching_cluster(int ranks, int per_node) {
  if (ranks < 1) fail(Code::kInvalidArgument, "-n ", ranks, ": at least 1 rank");
  if (per_node <= 0) per_node = ranks;
  if (ranks % per_node != 0) fail(Code::kInvalidArgument, ranks, " ranks do not fill nodes of ", per_node, " evenly");
  const std::string json =
      "{\"name\": \"teaching\", \"nodes\": " + std::to_string(ranks / per_node) +
      ", \"node\": {\"gpus\": " + std::to_string(per_node) + ", \"nics\": " + std::to_string(per_node) +
      ", \"gpu_link_gbps\": 100}, \"nic_gbps\": 100, \"latency_us\": {\"gpu_link\": 1, \"hop\": 1},"
      " \"costs\": {\"alpha_us\": 5, \"gamma_ns_per_byte\": 0.01}, \"network\": {\"levels\": "
      "[{\"ports\": 1000000}]}}";
  return parse_cluster(json, "teaching cluster");
}

Explanation explain(const Cluster& whole, const CollectiveRun& run) {
  // As predict does: a CPU cluster's links at this size's share of the cache.
  const std::optional<Cluster> sized = sized_for(whole, run);
  const Cluster& cluster = sized ? *sized : whole;
  Explanation e;
  CollectiveRun every_rank = run;  // each rank's steps are what it shows
  every_rank.symmetry = CollectiveRun::Symmetry::kNever;
  e.plan = plan(cluster, every_rank);
  std::vector<StepTime> timeline;
  e.result = simulate(e.plan.schedules, cluster.fabric, cluster.costs, &timeline);
  // Each send's receive: the k-th from a to b is b's k-th from a.
  // Each send with the receive the simulator matched it to, by start, then rank and step.
  std::sort(timeline.begin(), timeline.end(), [](const StepTime& a, const StepTime& b) {
    return std::tie(a.start_s, a.rank, a.step) < std::tie(b.start_s, b.rank, b.step);
  });
  std::vector<Transfer> all;
  for (const StepTime& t : timeline) {
    if (t.kind != algo::OpKind::kSend) continue;
    const algo::Step& send = e.plan.schedules[static_cast<size_t>(t.rank)].steps[static_cast<size_t>(t.step)];
    const algo::Step& recv = e.plan.schedules[static_cast<size_t>(t.peer)].steps[static_cast<size_t>(t.peer_step)];
    all.push_back(Transfer{t.rank, t.peer, send.src, recv.dst, t.bytes, recv.kind == algo::OpKind::kRecvReduce,
                           t.start_s, t.end_s});
  }
  for (const Transfer& t : all) {
    if (e.rounds.empty() || t.start_s > e.rounds.back().start_s + 1e-9)  // a nanosecond: rounding
      e.rounds.push_back(Round{t.start_s, t.end_s, {}});
    e.rounds.back().end_s = std::max(e.rounds.back().end_s, t.end_s);
    e.rounds.back().transfers.push_back(t);
  }
  return e;
}

std::string explain_text(const Explanation& e, const CollectiveRun& run) {
  const algo::CollShape& shape = e.plan.shape;
  const size_t elem = shape.elem_size;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s %s on %d ranks, %zu bytes (%zu elements of %zu bytes)\n\n",
                e.plan.algorithm->name, algo::collective_name(shape.collective), shape.nranks, run.bytes,
                run.bytes / elem, elem);
  out += line;
  for (size_t k = 0; k < e.rounds.size(); ++k) {
    const Round& r = e.rounds[k];
    std::snprintf(line, sizeof line, "round %zu (%s to %s)\n", k + 1, us(r.start_s).c_str(), us(r.end_s).c_str());
    out += line;
    for (const Transfer& t : r.transfers) {
      std::snprintf(line, sizeof line, "  rank %d -> rank %d: %s, %s into %s\n", t.from, t.to,
                    where(t.src, t.bytes, elem).c_str(), t.reduce ? "reduced" : "copied",
                    where(t.dst, t.bytes, elem).c_str());
      out += line;
    }
  }
  const algo::LinkModel& m = e.plan.link;
  std::snprintf(line, sizeof line,
                "\ncost: %s\n  with n = %d, S = %zu B, a = %.3g us, b = %.3g ns/B (%.3g GB/s), g = %.3g ns/B",
                algo::cost_formula(*e.plan.algorithm, !shape.node_of.empty() && m.node_beta_ns_per_byte > 0),
                shape.nranks, run.bytes, m.alpha_us, m.beta_ns_per_byte, 1 / m.beta_ns_per_byte, m.gamma_ns_per_byte);
  out += line;
  if (!shape.node_of.empty()) {
    std::snprintf(line, sizeof line, ", a_in = %.3g us, b_in = %.3g ns/B", shape.node_link.alpha_us,
                  shape.node_link.beta_ns_per_byte);
    out += line;
  }
  if (!shape.node_of.empty() && m.node_beta_ns_per_byte > 0) {
    std::snprintf(line, sizeof line, ", b_node = %.3g ns/B", m.node_beta_ns_per_byte);
    out += line;
  }
  std::snprintf(line, sizeof line, "\n  = %s by coll's cost model; simulated: %s (%zu rounds)\n",
                us(e.plan.algorithm->cost(shape, m)).c_str(), us(e.result.seconds).c_str(), e.rounds.size());
  out += line;
  return out;
}

}  // namespace coll::sim
