#include "sim/fit.h"

#include "algorithms/select.h"
#include "base/error.h"
#include "sim/collective_run.h"
#include "sim/tuning.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

namespace coll::sim {
namespace {

// The fitted parameters, as logarithms so that each stays positive and a
// step means the same ratio at any scale.
constexpr int kParams = 12;
using Point = std::array<double, kParams>;

// Each parameter is held in a box, wide but physical, so that one the runs
// leave free (a second cache larger than every run, an alpha under the
// noise) cannot drift to 0 or to infinity: what is written is then always a
// tuning file that the simulator and the selector accept. Rates are boxed
// around beta0, the largest run's seconds per byte.
constexpr double kLargestCache = 4.0 * (1 << 30);  // a second cache, or L3s of all sockets

struct Box {
  Point lo, hi;              // logarithms
  bool shared_cores = true;  // else a read within a core and the turn are not fitted: 1 and 0
};

Box box_around(double beta0) {
  const std::array<std::pair<double, double>, kParams> range{
      {{1e-3, 1e4},                 // alpha_us
       {beta0 / 1e3, beta0 * 1e2},  // beta
       {4096, 1 << 30},             // cache_bytes
       {beta0 / 1e3, beta0 * 1e2},  // cache_beta
       {beta0 / 1e3, beta0 * 1e2},  // node_beta
       {beta0 / 1e6, beta0 * 1e2},  // gamma: reductions may be nearly free
       {1.0 / 16, 1024},            // cache2_bytes / cache_bytes - 1
       {beta0 / 1e3, beta0 * 1e2},  // cache2_beta
       {0.1, 2},                    // local_weight: a copy in cache, without a message's slots, or more
       {1, 4},                      // reduce_weight: a reduction at least a copy
       {0.02, 1},                   // same_core_read_weight: a read from the core's own cache, at most a copy
       {0.01, 20}}};                // turn_us: from a switch to the core's other ranks, to several time slices
  Box box;
  for (size_t k = 0; k < range.size(); ++k) box.lo[k] = std::log(range[k].first), box.hi[k] = std::log(range[k].second);
  return box;
}

Point inside(Point x, const Box& box) {
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::clamp(x[k], box.lo[k], box.hi[k]);
  return x;
}

algo::LinkModel model_of(const Point& x, const Box& box) {
  Point v = inside(x, box);
  for (double& p : v) p = std::exp(p);
  algo::LinkModel m;
  m.alpha_us = v[0];
  m.beta_ns_per_byte = v[1];
  m.cache_bytes = std::round(v[2]);
  m.cache_beta_ns_per_byte = v[3];
  m.node_beta_ns_per_byte = v[4];
  m.gamma_ns_per_byte = v[5];
  m.cache2_bytes = std::round(std::min(m.cache_bytes * (1 + v[6]), kLargestCache));  // beyond the first
  m.cache2_beta_ns_per_byte = v[7];
  m.local_weight = v[8];
  m.reduce_weight = v[9];
  m.same_core_read_weight = box.shared_cores ? v[10] : 1;
  m.turn_us = box.shared_cores ? v[11] : 0;
  return m;
}

// Nelder-Mead (reflect, expand, contract, shrink) from x0, steps of `step` in each coordinate,
// until the simplex is flat or `evaluations` reaches `max_evaluations`.
template <typename F>
Point minimise(F f, Point x0, double step, int max_evaluations, int& evaluations) {
  std::array<Point, kParams + 1> p;
  std::array<double, kParams + 1> v;
  for (int i = 0; i <= kParams; ++i) {
    p[static_cast<size_t>(i)] = x0;
    if (i > 0) p[static_cast<size_t>(i)][static_cast<size_t>(i - 1)] += step;
    v[static_cast<size_t>(i)] = f(p[static_cast<size_t>(i)]);
  }
  evaluations += kParams + 1;
  const auto along = [](const Point& from, const Point& to, double t) {
    Point r;
    for (size_t k = 0; k < r.size(); ++k) r[k] = from[k] + t * (to[k] - from[k]);
    return r;
  };
  while (evaluations < max_evaluations) {
    std::array<size_t, kParams + 1> order;
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[kParams - 1];
    if (v[worst] - v[best] < 1e-9 * (1 + v[best])) break;
    Point centre{};
    for (size_t i = 0; i < p.size(); ++i)
      if (i != worst)
        for (size_t k = 0; k < centre.size(); ++k) centre[k] += p[i][k] / kParams;
    const Point reflected = along(p[worst], centre, 2);
    const double fr = f(reflected);
    ++evaluations;
    if (fr < v[best]) {
      const Point expanded = along(p[worst], centre, 3);
      const double fe = f(expanded);
      ++evaluations;
      std::tie(p[worst], v[worst]) = fe < fr ? std::pair{expanded, fe} : std::pair{reflected, fr};
    } else if (fr < v[second]) {
      p[worst] = reflected, v[worst] = fr;
    } else {
      const Point contracted = along(p[worst], centre, fr < v[worst] ? 1.5 : 0.5);
      const double fc = f(contracted);
      ++evaluations;
      if (fc < std::min(fr, v[worst])) {
        p[worst] = contracted, v[worst] = fc;
      } else {
        for (size_t i = 0; i < p.size(); ++i)
          if (i != best) {
            p[i] = along(p[best], p[i], 0.5);
            v[i] = f(p[i]);
            ++evaluations;
          }
      }
    }
  }
  return *std::min_element(p.begin(), p.end(), [&](const Point& a, const Point& b) {
    return v[static_cast<size_t>(&a - p.data())] < v[static_cast<size_t>(&b - p.data())];
  });
}

}  // namespace

std::vector<Measured> parse_measured(const std::string& text, const std::string& origin) {
  std::vector<Measured> runs;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string collective;
    Measured m;
    double us = 0;
    const std::string where = origin + ":" + std::to_string(number);
    // (Seconds that round to 0 or to infinity are refused too: the fit's scale comes from them.)
    if (!(fields >> collective >> m.algorithm >> m.ranks >> m.bytes >> us) || m.ranks < 1 || !(us * 1e-6 > 0) ||
        !std::isfinite(us))
      fail(Code::kInvalidArgument, where, ": expected 'collective algorithm ranks bytes microseconds', got '", line,
           "'");
    const std::optional<algo::Collective> c = algo::collective_named(collective);
    if (!c) fail(Code::kInvalidArgument, where, ": unknown collective '", collective, "'");
    m.collective = *c;
    if (!algo::has_algorithm(m.collective, m.algorithm))
      fail(Code::kInvalidArgument, where, ": ", collective, " has no algorithm '", m.algorithm, "'");
    m.seconds = us * 1e-6;
    runs.push_back(m);
  }
  return runs;
}

void set_node_class(Cluster& c, const algo::LinkModel& m) {
  c.costs.alpha_s = m.alpha_us * 1e-6;
  c.costs.gamma_s_per_byte = m.gamma_ns_per_byte * 1e-9;
  set_weights(c, m);
  set_caches(c, m);
  set_node_rates(c, 1e9 / m.beta_ns_per_byte, m.node_beta_ns_per_byte > 0 ? 1e9 / m.node_beta_ns_per_byte : 0);
  // Alpha is all of a message's latency, as under a tuning file.
  for (int r = 0; r < c.fabric.nranks(); ++r)
    for (int l : {c.fabric.place(r).gpu_up, c.fabric.place(r).gpu_down}) c.fabric.link(l).latency_s = 0;
}

FitResult fit_node_class(const std::function<Cluster(int)>& cluster_of, const std::vector<Measured>& runs) {
  if (runs.empty()) fail(Code::kInvalidArgument, "fit: no measured runs");
  std::map<int, Cluster> clusters;
  const Measured* largest = &runs.front();  // its seconds per byte: where beta starts
  for (const Measured& r : runs) {
    if (!(r.seconds > 0) || !std::isfinite(r.seconds))
      fail(Code::kInvalidArgument, "fit: a run of ", r.bytes, " bytes took ", r.seconds,
           " s; a time above 0 is needed");
    if (!clusters.count(r.ranks)) {
      Cluster c = cluster_of(r.ranks);
      if (c.fabric.nranks() != r.ranks || c.fabric.place(0).memory < 0 ||
          c.fabric.place(r.ranks - 1).node != c.fabric.place(0).node)
        fail(Code::kInvalidArgument, "fit: ", r.ranks, " ranks need one node with a memory (node.memory_gbps)");
      clusters.emplace(r.ranks, std::move(c));
    }
    if (r.bytes > largest->bytes) largest = &r;
  }
  const double beta0 = largest->seconds / static_cast<double>(std::max<size_t>(largest->bytes, 1)) * 1e9;
  if (!(beta0 > 0) || !std::isfinite(beta0))  // a time too small for its bytes
    fail(Code::kInvalidArgument, "fit: the largest run (", largest->bytes, " bytes) took ", largest->seconds,
         " s; a time above 0 is needed");
  Box box = box_around(beta0);
  // A read within a core and a turn on it happen only where ranks share cores: elsewhere no run decides them.
  box.shared_cores = std::any_of(clusters.begin(), clusters.end(),
                                 [](const auto& rc) { return rc.second.cores > 0 && rc.second.cores < rc.first; });
  if (!box.shared_cores)
    for (size_t k : {10, 11}) box.lo[k] = box.hi[k] = 0;
  const auto predict_all = [&](const algo::LinkModel& m) {
    std::vector<double> out;
    for (const Measured& r : runs) {
      Cluster c = clusters.at(r.ranks);
      set_node_class(c, m);
      CollectiveRun run;
      run.collective = r.collective;
      run.bytes = r.bytes;
      run.algorithm = r.algorithm;
      out.push_back(predict(c, run).result.seconds);
    }
    return out;
  };
  const auto error = [&](const Point& x) {
    const std::vector<double> p = predict_all(model_of(x, box));
    double sum = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
      const double e = p[i] > 0 ? std::log(p[i] / runs[i].seconds) : 10;
      sum += e * e;
    }
    return sum;
  };
  FitResult out;
  // A second cache 64 times the first; the weights a little off 1, so that each can move either way.
  Point x{std::log(2.0),       std::log(beta0), std::log(1 << 20), std::log(beta0 / 3),
          std::log(beta0 / 2), std::log(0.01),  std::log(63.0),    std::log(beta0 / 1.5),
          std::log(0.8),       std::log(1.2),   std::log(0.7),     std::log(1.0)};
  // Twice: a restart from the first minimum gets out of a collapsed simplex.
  constexpr int kBudget = 70 * kParams;
  // Each from within the box: outside it the error is flat, and a coordinate
  // left far beyond a bound would never come back.
  x = inside(minimise(error, inside(x, box), 0.7, kBudget, out.evaluations), box);
  x = inside(minimise(error, x, 0.3, out.evaluations + kBudget, out.evaluations), box);
  out.link = model_of(x, box);
  out.predicted_s = predict_all(out.link);
  out.rms_log_error = std::sqrt(error(x) / static_cast<double>(runs.size()));
  return out;
}

std::string tuning_lines(const std::string& c, const algo::LinkModel& m) {
  std::ostringstream out;
  out.precision(6);
  out << c << ".alpha_us = " << m.alpha_us << "\n"
      << c << ".beta_ns_per_byte = " << m.beta_ns_per_byte << "\n"
      << c << ".cache_bytes = " << std::llround(m.cache_bytes) << "\n"
      << c << ".cache_beta_ns_per_byte = " << m.cache_beta_ns_per_byte << "\n"
      << c << ".cache2_bytes = " << std::llround(m.cache2_bytes) << "\n"
      << c << ".cache2_beta_ns_per_byte = " << m.cache2_beta_ns_per_byte << "\n"
      << c << ".node_beta_ns_per_byte = " << m.node_beta_ns_per_byte << "\n"
      << c << ".gamma_ns_per_byte = " << m.gamma_ns_per_byte << "\n"
      << c << ".local_weight = " << m.local_weight << "\n"
      << c << ".reduce_weight = " << m.reduce_weight << "\n"
      << c << ".same_core_read_weight = " << m.same_core_read_weight << "\n"
      << c << ".turn_us = " << m.turn_us << "\n";
  return out.str();
}

}  // namespace coll::sim
