#include "sim/maxmin.h"

#include <cstddef>
#include <limits>
#include <unordered_map>

namespace coll::sim {

void max_min_rates(const std::vector<double>& capacity, const std::vector<const std::vector<int>*>& paths,
                   std::vector<double>& rates, double unbounded) {
  const size_t nflows = paths.size();
  rates.assign(nflows, unbounded);
  // Only the links some flow crosses take part: the fabric may have millions.
  struct Load {
    double left = 0;   // capacity not yet given to frozen flows
    int unfrozen = 0;  // flows through it still rising
    std::vector<size_t> flows;
  };
  std::unordered_map<int, Load> loads;
  for (size_t f = 0; f < nflows; ++f)
    for (int l : *paths[f]) {
      Load& load = loads[l];
      if (load.flows.empty()) load.left = capacity[static_cast<size_t>(l)];
      load.flows.push_back(f);
      ++load.unfrozen;
    }
  std::vector<bool> frozen(nflows, false);
  for (size_t f = 0; f < nflows; ++f) frozen[f] = paths[f]->empty();
  size_t left = 0;
  for (size_t f = 0; f < nflows; ++f) left += frozen[f] ? 0 : 1;
  while (left > 0) {
    // The link whose fair share is smallest fills first.
    double share = std::numeric_limits<double>::infinity();
    for (const auto& [id, load] : loads)
      if (load.unfrozen > 0 && load.left / load.unfrozen < share) share = load.left / load.unfrozen;
    for (auto& [id, load] : loads) {
      if (load.unfrozen == 0 || load.left / load.unfrozen > share * (1 + 1e-12)) continue;
      for (size_t f : load.flows) {
        if (frozen[f]) continue;
        frozen[f] = true;
        rates[f] = share;
        --left;
        for (int l : *paths[f]) {
          Load& other = loads[l];
          other.left -= share;
          --other.unfrozen;
        }
      }
    }
  }
}

}  // namespace coll::sim
