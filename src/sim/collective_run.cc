#include "sim/collective_run.h"

#include "algorithms/select.h"
#include "base/error.h"
#include "sim/tree_classes.h"
#include "sim/tuning.h"
#include "topology/nodes.h"

namespace coll::sim {
namespace {

using algo::Collective;

constexpr size_t kMaxSteps = 100'000'000;
constexpr int kMaxEveryRank = 8192;

// Elements per rank's call, from nccl-tests' size.
size_t count_of(Collective c, size_t bytes, size_t elem, int n) {
  const size_t total = bytes / elem;
  switch (c) {
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
      return total / static_cast<size_t>(n);
    default:
      return total;
  }
}

[[noreturn]] void too_big(const algo::Algorithm& a, int n, const std::string& what) {
  throw TooBig(Code::kInvalidArgument, str_cat("simulate: ", a.name, " on ", n, " ranks ", what,
                                               " (docs/SIMULATION.md, Scale): ask for fewer ranks"));
}

}  // namespace

algo::CostModel cost_model_of(const Cluster& c) {
  algo::CostModel m;
  // A message between nodes crosses, at the farthest, the NICs and every switch level twice.
  const Fabric::Place& p0 = c.fabric.place(0);
  double farthest = 2 * c.fabric.link(p0.nic_up).latency_s;
  for (int up : p0.group_up) farthest += 2 * c.fabric.link(up).latency_s;
  algo::LinkModel net;
  net.alpha_us = (c.costs.alpha_s + farthest) * 1e6;
  net.beta_ns_per_byte = 1e9 / c.nic_bytes_per_s;
  net.gamma_ns_per_byte = c.costs.gamma_s_per_byte * 1e9;
  net.chunk_bytes = static_cast<double>(c.chunk_bytes);
  // Ranks that outnumber their node's NICs share them (the emulated cluster's one link a node).
  if (c.nics_per_node < c.gpus_per_node) net.node_beta_ns_per_byte = 1e9 / (c.nic_bytes_per_s * c.nics_per_node);
  algo::LinkModel gpu = net;
  const double gpu_latency = c.fabric.link(c.fabric.place(0).gpu_up).latency_s;
  gpu.node_beta_ns_per_byte = c.memory_bytes_per_s > 0 ? 1e9 / c.memory_bytes_per_s : 0;
  gpu.alpha_us = (c.costs.alpha_s + 2 * gpu_latency) * 1e6;
  gpu.beta_ns_per_byte = 1e9 / c.gpu_link_bytes_per_s;
  gpu.one_node = true;
  m.links[c.network_class] = net;
  m.links[c.node_class] = gpu;
  return m;
}

double bus_factor(Collective c, int n) {
  const double nd = n;
  switch (c) {
    case Collective::kAllreduce:
      return 2 * (nd - 1) / nd;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
      return (nd - 1) / nd;
    default:
      return 1;
  }
}

Plan plan(const Cluster& cluster, const CollectiveRun& run) {
  const Fabric& f = cluster.fabric;
  const int n = f.nranks();
  std::vector<std::string> hosts;
  for (int r = 0; r < n; ++r) hosts.push_back("node" + std::to_string(f.place(r).node));
  const std::vector<std::vector<int>> nodes = ranks_by_node(hosts);
  Plan p;
  algo::CollShape& shape = p.shape;
  shape.collective = run.collective;
  shape.nranks = n;
  shape.elem_size = run.elem_size;
  shape.count = count_of(run.collective, run.bytes, run.elem_size, n);
  shape.chunk_bytes = cluster.chunk_bytes;
  shape.ring_order = ring_by_node(nodes);
  shape.spread_order = spread_over_nodes(nodes);
  if (nodes.size() > 1)
    for (int r = 0; r < n; ++r) shape.node_of.push_back(f.place(r).node);
  const algo::CostModel model = cost_model_of(cluster);
  shape.node_link = model.link(cluster.node_class);
  p.link_class = nodes.size() > 1 ? cluster.network_class : cluster.node_class;
  p.link = model.link(p.link_class);
  algo::Selector selector("", model);
  selector.set_link_class(p.link_class);
  p.auto_choice = selector.choose(shape).name;
  p.algorithm = &algo::find_algorithm(run.collective,
                                      run.algorithm.empty() || run.algorithm == "auto" ? p.auto_choice : run.algorithm);
  using Sym = CollectiveRun::Symmetry;
  if (run.symmetry == Sym::kUse || (run.symmetry == Sym::kAuto && n >= CollectiveRun::kSymmetricFrom)) {
    std::optional<SymmetricPlan> sym = find_symmetry(*p.algorithm, shape);
    if (!sym) sym = find_tree_classes(*p.algorithm, shape);
    if (sym) {
      p.symmetry = sym->symmetry;
      p.same_dependencies = sym->same_dependencies;
      p.schedules = std::move(sym->schedules);
      // Each representative's peers have their class's routes walked once: every rank's.
      size_t walks = 0;
      for (size_t c = 0; c < p.schedules.size(); ++c)
        walks += p.schedules[c].peers().size() * static_cast<size_t>(sym->symmetry.members(static_cast<int>(c)));
      if (walks > kMaxSteps)
        too_big(*p.algorithm, n, str_cat("sends between ", walks, " pairs of ranks, more than ", kMaxSteps));
      return p;
    }
  }
  // Building each rank's schedule may cost O(n) itself (the trees'), and running every rank is slow long before.
  const std::string unaided = "; no symmetry stands in for them (none found or asked for)";
  if (n > kMaxEveryRank)
    too_big(*p.algorithm, n, str_cat("would simulate every rank, at most ", kMaxEveryRank, unaided));
  p.schedules.reserve(static_cast<size_t>(n));
  size_t steps = 0;
  for (int r = 0; r < n; ++r) {
    shape.rank = r;
    p.schedules.push_back(algo::build_schedule(*p.algorithm, shape));
    // About 100 bytes a step: stop before the machine's memory does (rank 0's steps times n, first).
    steps += p.schedules.back().steps.size();
    if (steps > kMaxSteps || (r == 0 && steps * static_cast<size_t>(n) > kMaxSteps))
      too_big(*p.algorithm, n, str_cat("has more than ", kMaxSteps, " steps", unaided));
  }
  shape.rank = 0;
  return p;
}

std::optional<Cluster> sized_for(const Cluster& whole, const CollectiveRun& run) {
  if (!has_cache(whole)) return std::nullopt;
  algo::CollShape shape;
  shape.collective = run.collective;
  shape.nranks = whole.fabric.nranks();
  shape.elem_size = run.elem_size;
  shape.count = count_of(run.collective, run.bytes, run.elem_size, shape.nranks);
  return at_size(whole, algo::buffer_bytes(shape));
}

Prediction predict(const Cluster& whole, const CollectiveRun& run, std::vector<StepTime>* timeline,
                   const Progress* progress) {
  const std::optional<Cluster> sized = sized_for(whole, run);
  const Cluster& cluster = sized ? *sized : whole;
  const Plan plan_ = plan(cluster, run);
  Prediction p;
  p.auto_choice = plan_.auto_choice;
  p.algorithm = plan_.algorithm->name;
  if (plan_.symmetry) {
    p.symmetric_classes = plan_.symmetry->classes();
    p.symmetry = plan_.symmetry->describe();
    p.classes_listed = plan_.symmetry->listed();
  }
  p.same_dependencies = plan_.same_dependencies;
  p.result = simulate(plan_.schedules, cluster.fabric, cluster.costs, timeline, progress,
                      plan_.symmetry ? &*plan_.symmetry : nullptr);
  if (p.result.seconds > 0) {
    p.algbw_bytes_per_s = static_cast<double>(run.bytes) / p.result.seconds;
    p.busbw_bytes_per_s = p.algbw_bytes_per_s * bus_factor(run.collective, cluster.fabric.nranks());
  }
  return p;
}

}  // namespace coll::sim
