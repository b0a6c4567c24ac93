#include "sim/maxmin.h"

#include <cstddef>
#include <limits>
#include <unordered_map>

namespace coll::sim {

void max_min_rates(const std::vector<double>& capacity, const std::vector<const std::vector<Hop>*>& paths,
                   std::vector<double>& rates, double unbounded) {
  const size_t nflows = paths.size();
  rates.assign(nflows, unbounded);
  // Only the links some flow crosses take part: the fabric may have millions.
  struct Load {
    double left = 0;    // capacity not yet given to frozen flows
    double rising = 0;  // the weights of the flows through it still rising
    std::vector<size_t> flows;
  };
  std::unordered_map<int, Load> loads;
  for (size_t f = 0; f < nflows; ++f)
    for (const Hop& h : *paths[f]) {
      Load& load = loads[h.link];
      if (load.flows.empty()) load.left = capacity[static_cast<size_t>(h.link)];
      load.flows.push_back(f);
      load.rising += h.weight;
    }
  std::vector<bool> frozen(nflows, false);
  for (size_t f = 0; f < nflows; ++f) frozen[f] = paths[f]->empty();
  size_t left = 0;
  for (size_t f = 0; f < nflows; ++f) left += frozen[f] ? 0 : 1;
  auto share_of = [](const Load& l) {
    return l.rising > 0 ? l.left / l.rising : std::numeric_limits<double>::infinity();
  };
  while (left > 0) {
    // The link whose fair share is smallest fills first.
    double share = std::numeric_limits<double>::infinity();
    for (const auto& [id, load] : loads) share = std::min(share, share_of(load));
    for (auto& [id, load] : loads) {
      if (load.rising <= 0 || share_of(load) > share * (1 + 1e-12)) continue;
      for (size_t f : load.flows) {
        if (frozen[f]) continue;
        frozen[f] = true;
        rates[f] = share;
        --left;
        for (const Hop& h : *paths[f]) {
          Load& other = loads[h.link];
          other.left -= share * h.weight;
          other.rising -= h.weight;
        }
      }
    }
  }
}

}  // namespace coll::sim
