#include "algorithms/select.h"

#include "algorithms/algorithms.h"
#include "algorithms/fold.h"
#include "base/error.h"
#include "base/log.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace coll::algo {
namespace {

// Cost formulas, in seconds: the alpha-beta-gamma costs each algorithm's
// file derives. S is the bytes the collective moves as nccl-tests counts
// them (the whole vector; for allgather/reduce_scatter/alltoall the whole
// n-block buffer).
double us(double v) { return v * 1e-6; }
double ns(double v) { return v * 1e-9; }
double bytes_of(const CollShape& s) {
  double b = static_cast<double>(s.count * s.elem_size);
  switch (s.collective) {
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
      return b * s.nranks;
    default:
      return b;
  }
}
double log2n(int n) { return std::ceil(std::log2(std::max(n, 1))); }
double fold_extra(const CollShape& s, const LinkModel& m) {
  Fold f(0, s.nranks);
  return f.rem == 0 ? 0 : 2 * us(m.alpha_us) + bytes_of(s) * (2 * ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}

// Time on the network for `per_rank` bytes from each rank and `per_node`
// from each node, where the node's ranks share its links (node_beta, as
// calibrate.sh -e measures it); without node_beta each rank has its own.
double network_time(const LinkModel& m, double per_rank, double per_node) {
  return std::max(per_rank * ns(m.beta_ns_per_byte), per_node * ns(m.node_beta_ns_per_byte));
}
// Nodes of equal size (ranks per node L > 1) across which `s` runs; 0 otherwise.
int nodes_of(const CollShape& s, int& per_node) {
  per_node = ranks_per_node(s);
  if (s.node_of.empty() || per_node <= 1 || per_node == s.nranks) return 0;
  return s.nranks / per_node;
}

double ring_allreduce_cost(const CollShape& s, const LinkModel& m) {
  double n = s.nranks, S = bytes_of(s);
  return 2 * (n - 1) * us(m.alpha_us) + (n - 1) / n * S * (2 * ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}
// Inside nodes with shape.node_link (the slowest link when unset), between
// them with m; infinite where it does not apply (one node, unequal nodes).
double hierarchical_cost(const CollShape& s, const LinkModel& m) {
  const int per_node = ranks_per_node(s);
  if (s.node_of.empty() || per_node == 0 || per_node == s.nranks) return std::numeric_limits<double>::infinity();
  const LinkModel& in = s.node_link.alpha_us > 0 ? s.node_link : m;
  double L = per_node, N = s.nranks / per_node, S = bytes_of(s);
  // Between nodes each rank reduces S/L with its peers; a node's L ranks share its links where node_beta says so.
  const double across = 2 * (N - 1) / N * S / L;
  return 2 * (L - 1) * us(in.alpha_us) + (L - 1) / L * S * (2 * ns(in.beta_ns_per_byte) + ns(in.gamma_ns_per_byte)) +
         2 * (N - 1) * us(m.alpha_us) + network_time(m, across, across * L) + across / 2 * ns(m.gamma_ns_per_byte);
}
double ring_rs_cost(const CollShape& s, const LinkModel& m) {
  double n = s.nranks, S = bytes_of(s);
  return (n - 1) * us(m.alpha_us) + (n - 1) / n * S * (ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}
double ring_ag_cost(const CollShape& s, const LinkModel& m) {
  double n = s.nranks, S = bytes_of(s);
  return (n - 1) * us(m.alpha_us) + (n - 1) / n * S * ns(m.beta_ns_per_byte);
}
double ring_bcast_cost(const CollShape& s, const LinkModel& m) {
  return (s.nranks - 1) * us(m.alpha_us) + bytes_of(s) * ns(m.beta_ns_per_byte);
}
double tree_allreduce_cost(const CollShape& s, const LinkModel& m) {
  double S = bytes_of(s);
  int L = 0;
  const int N = nodes_of(s, L);
  // Across nodes whose ranks share their links: the reduction up and the broadcast down overlap on
  // full-duplex links, each node sending about S out (2S where it is inner in a tree of 3 or more nodes),
  // half of it from each of two ranks (the two trees' chains run opposite ways: partition.h, node_tree).
  if (N > 0 && m.node_beta_ns_per_byte > 0) {
    const double out = N == 2 ? S : 2 * S;
    return 2 * log2n(s.nranks) * us(m.alpha_us) + network_time(m, out / 2, out) + S * ns(m.gamma_ns_per_byte);
  }
  return 2 * log2n(s.nranks) * us(m.alpha_us) + S * (2 * ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}
double tree_reduce_cost(const CollShape& s, const LinkModel& m) {
  return (log2n(s.nranks) + 1) * us(m.alpha_us) + bytes_of(s) * (ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}
double tree_bcast_cost(const CollShape& s, const LinkModel& m) {
  return (log2n(s.nranks) + 1) * us(m.alpha_us) + bytes_of(s) * ns(m.beta_ns_per_byte);
}
double hd_cost(const CollShape& s, const LinkModel& m) {
  double p = Fold(0, s.nranks).p, S = bytes_of(s);
  int per_node = 0;
  const int N = nodes_of(s, per_node);
  // Spread over nodes of a power of two, its largest exchanges (distance p/2 first) stay inside the
  // nodes and the last log2(N) go between them: the hierarchical allreduce's bytes, in fewer steps.
  if (N > 0 && m.node_beta_ns_per_byte > 0 && p == s.nranks && (per_node & (per_node - 1)) == 0) {
    const LinkModel& in = s.node_link.alpha_us > 0 ? s.node_link : m;
    const double L = per_node, across = 2 * (N - 1.0) / N * S / L;
    return 2 * std::log2(L) * us(in.alpha_us) +
           (L - 1) / L * S * (2 * ns(in.beta_ns_per_byte) + ns(in.gamma_ns_per_byte)) +
           2 * std::log2(N) * us(m.alpha_us) + network_time(m, across, across * L) +
           across / 2 * ns(m.gamma_ns_per_byte);
  }
  return 2 * std::log2(p) * us(m.alpha_us) + (p - 1) / p * S * (2 * ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte)) +
         fold_extra(s, m);
}
double rd_cost(const CollShape& s, const LinkModel& m) {
  double p = Fold(0, s.nranks).p, S = bytes_of(s);
  return std::log2(p) * (us(m.alpha_us) + S * (ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte))) + fold_extra(s, m);
}
double direct_allreduce_cost(const CollShape& s, const LinkModel& m) {
  double n = s.nranks, S = bytes_of(s);
  return us(m.alpha_us) + (n - 1) * S * (ns(m.beta_ns_per_byte) + ns(m.gamma_ns_per_byte));
}
double direct_alltoall_cost(const CollShape& s, const LinkModel& m) {
  double n = s.nranks, S = bytes_of(s);
  return (n - 1) * us(m.alpha_us) + (n - 1) / n * S * ns(m.beta_ns_per_byte);
}
double p2p_cost(const CollShape& s, const LinkModel& m) {
  return us(m.alpha_us) + bytes_of(s) * ns(m.beta_ns_per_byte);
}
double barrier_cost(const CollShape& s, const LinkModel& m) { return log2n(s.nranks) * us(m.alpha_us); }

Collective parse_collective(const std::string& name, const std::string& setting) {
  if (std::optional<Collective> c = collective_named(name)) return *c;
  fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': unknown collective '", name,
       "' (allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, barrier, send, recv)");
}

}  // namespace

bool has_algorithm(Collective c, const std::string& name) {
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && name == a.name) return true;
  return false;
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> table = {
      {"ring", Collective::kAllreduce, ring_allreduce, ring_allreduce_cost},
      {"tree", Collective::kAllreduce, tree_allreduce, tree_allreduce_cost},
      {"halving_doubling", Collective::kAllreduce, halving_doubling_allreduce, hd_cost, /*spread=*/true},
      {"recursive_doubling", Collective::kAllreduce, recursive_doubling_allreduce, rd_cost},
      {"direct", Collective::kAllreduce, direct_allreduce, direct_allreduce_cost},
      {"hierarchical", Collective::kAllreduce, hierarchical_allreduce, hierarchical_cost},
      {"ring", Collective::kBroadcast, ring_broadcast, ring_bcast_cost},
      {"tree", Collective::kBroadcast, tree_broadcast, tree_bcast_cost},
      {"tree", Collective::kReduce, tree_reduce, tree_reduce_cost},
      {"direct", Collective::kReduce, direct_reduce, direct_allreduce_cost},
      {"ring", Collective::kAllgather, ring_allgather, ring_ag_cost},
      {"ring", Collective::kReduceScatter, ring_reduce_scatter, ring_rs_cost},
      {"direct", Collective::kAlltoall, direct_alltoall, direct_alltoall_cost},
      {"dissemination", Collective::kBarrier, dissemination_barrier, barrier_cost},
      {"direct", Collective::kSend, p2p_send, p2p_cost},
      {"direct", Collective::kRecv, p2p_recv, p2p_cost},
  };
  return table;
}

const char* cost_formula(const Algorithm& a, bool shared_link) {
  // The formulas of the cost functions above, as text (S: bytes of the vector, or of the whole
  // output or input; n ranks; p the largest power of two <= n; L ranks a node, N nodes).
  static const std::map<std::pair<Collective, std::string>, const char*> formulas = {
      {{Collective::kAllreduce, "ring"}, "2(n-1) a + (n-1)/n S (2 b + g)"},
      {{Collective::kAllreduce, "tree"}, "2 ceil(log2 n) a + S (2 b + g)"},
      {{Collective::kAllreduce, "halving_doubling"},
       "2 log2(p) a + (p-1)/p S (2 b + g)  [+ 2 a + S (2 b + g) when n != p]"},
      {{Collective::kAllreduce, "recursive_doubling"}, "log2(p) (a + S (b + g))  [+ 2 a + S (2 b + g) when n != p]"},
      {{Collective::kAllreduce, "direct"}, "a + (n-1) S (b + g)"},
      {{Collective::kAllreduce, "hierarchical"},
       "2(L-1) a_in + (L-1)/L S (2 b_in + g) + 2(N-1) a + (N-1)/N S/L (2 b + g)"},
      {{Collective::kBroadcast, "ring"}, "(n-1) a + S b"},
      {{Collective::kBroadcast, "tree"}, "(ceil(log2 n) + 1) a + S b"},
      {{Collective::kReduce, "tree"}, "(ceil(log2 n) + 1) a + S (b + g)"},
      {{Collective::kReduce, "direct"}, "a + (n-1) S (b + g)"},
      {{Collective::kAllgather, "ring"}, "(n-1) a + (n-1)/n S b"},
      {{Collective::kReduceScatter, "ring"}, "(n-1) a + (n-1)/n S (b + g)"},
      {{Collective::kAlltoall, "direct"}, "(n-1) a + (n-1)/n S b"},
      {{Collective::kBarrier, "dissemination"}, "ceil(log2 n) a"},
      {{Collective::kSend, "direct"}, "a + S b"},
      {{Collective::kRecv, "direct"}, "a + S b"},
  };
  // Where a node's L ranks share one link (b_node: a node's bytes between nodes at it), as the cost
  // functions above price them (equal nodes; halving-doubling on powers of two).
  static const std::map<std::pair<Collective, std::string>, const char*> shared = {
      {{Collective::kAllreduce, "tree"},
       "2 ceil(log2 n) a + max(k S/2 b, k S b_node) + S g  (k = 1 on 2 nodes, else 2)"},
      {{Collective::kAllreduce, "halving_doubling"},
       "2 log2(L) a_in + (L-1)/L S (2 b_in + g) + 2 log2(N) a + max(X b, L X b_node) + X g/2  (X = 2(N-1)/N S/L)"},
      {{Collective::kAllreduce, "hierarchical"},
       "2(L-1) a_in + (L-1)/L S (2 b_in + g) + 2(N-1) a + max(X b, L X b_node) + X g/2  (X = 2(N-1)/N S/L)"},
  };
  if (shared_link) {
    auto it = shared.find({a.collective, a.name});
    if (it != shared.end()) return it->second;
  }
  auto it = formulas.find({a.collective, a.name});
  return it == formulas.end() ? "" : it->second;
}

Schedule build_schedule(const Algorithm& a, const CollShape& shape) {
  const std::vector<int>& order = shape.spread_order;
  if (order.empty() || !a.spread || a.collective != Collective::kAllreduce) return a.build(shape);
  // Allreduce's result does not depend on which rank holds which block, so
  // the algorithm may run on positions instead of ranks.
  CollShape virtual_shape = shape;
  virtual_shape.rank = static_cast<int>(std::find(order.begin(), order.end(), shape.rank) - order.begin());
  virtual_shape.ring_order.clear();
  virtual_shape.spread_order.clear();
  Schedule s = a.build(virtual_shape);
  for (Step& step : s.steps)
    if (step.peer >= 0) step.peer = order.at(static_cast<size_t>(step.peer));
  return s;
}

const Algorithm& find_algorithm(Collective c, const std::string& name) {
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && name == a.name) return a;
  fail(Code::kInternal, collective_name(c), " has no algorithm '", name, "'");
}

std::string algorithm_names(Collective c) {
  std::string out;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

Selector::Selector(const std::string& setting, CostModel model) : setting_(setting), model_(model) {
  if (setting.empty()) return;
  if (setting.find(':') == std::string::npos) {
    bool known = false;
    for (const Algorithm& a : all_algorithms()) known = known || setting == a.name;
    if (!known)
      fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': no collective has an algorithm '", setting,
           "' (allreduce has: ", algorithm_names(Collective::kAllreduce), ")");
    all_ = setting;
    return;
  }
  std::stringstream items(setting);
  std::string item;
  while (std::getline(items, item, ';')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    if (colon == std::string::npos)
      fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': '", item, "' is not collective:algorithm");
    Collective c = parse_collective(item.substr(0, colon), setting);
    std::string name = item.substr(colon + 1);
    if (!has_algorithm(c, name))
      fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': ", collective_name(c), " has no algorithm '", name,
           "' (it has: ", algorithm_names(c), ")");
    named_[c] = name;
  }
}

bool Selector::fixed(Collective c) const { return named_.count(c) > 0 || (!all_.empty() && has_algorithm(c, all_)); }

const Algorithm& Selector::choose(const CollShape& shape) {
  std::string wanted = named_.count(shape.collective) ? named_[shape.collective] : all_;
  // Point-to-point and barrier have one way each; a global name does not apply to them.
  bool single = shape.collective == Collective::kSend || shape.collective == Collective::kRecv ||
                shape.collective == Collective::kBarrier;
  if (single && !named_.count(shape.collective)) wanted.clear();
  const Algorithm* best = nullptr;
  double best_cost = 0;
  // With a cache (a tuning file's), the links at the share of the buffers the node's ranks hold;
  // only then, as counting the ranks of a node costs O(n).
  LinkModel sized = link();
  CollShape sized_shape;
  const CollShape* priced = &shape;
  if (link().cache_bytes > 0 || shape.node_link.cache_bytes > 0) {
    const int per_node = ranks_per_node(shape);
    const int sharing = per_node > 0 ? per_node : shape.nranks;
    sized = link().at_size(buffer_bytes(shape), sharing);
    sized_shape = shape;
    sized_shape.node_link = shape.node_link.at_size(buffer_bytes(shape), sharing);
    priced = &sized_shape;
  }
  for (const Algorithm& a : all_algorithms()) {
    if (a.collective != shape.collective) continue;
    if (!wanted.empty()) {
      if (wanted == a.name) best = &a;
      continue;
    }
    // The direct allreduce sends every vector to every rank: a choice for
    // ranks of one node only, never across the network.
    if (shape.collective == Collective::kAllreduce && std::string(a.name) == "direct" && !link().one_node) continue;
    double cost = a.cost(*priced, sized);
    if (best == nullptr || cost < best_cost) best = &a, best_cost = cost;
  }
  if (best == nullptr)
    fail(Code::kInvalidArgument, "COLL_ALGO='", setting_, "': ", collective_name(shape.collective),
         " has no algorithm '", wanted, "' (it has: ", algorithm_names(shape.collective), ")");
  size_t bytes = static_cast<size_t>(bytes_of(shape));
  int bucket = 0;
  while ((size_t{1} << bucket) < bytes && bucket < 63) ++bucket;
  if (log::enabled(log::Level::kInfo, log::kColl) && logged_.insert({shape.collective, bucket}).second)
    log::info(log::kColl, collective_name(shape.collective), " of ~", bytes, " bytes on ", shape.nranks, " ranks (",
              link_class_, "): ", best->name, wanted.empty() ? " (cost model)" : " (COLL_ALGO)", ", predicted ",
              best->cost(*priced, sized) * 1e6, " us");
  return *best;
}

}  // namespace coll::algo
