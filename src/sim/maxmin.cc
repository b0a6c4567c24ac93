#include "sim/maxmin.h"

#include <algorithm>
#include <limits>

namespace coll::sim {

void MaxMin::solve(const std::vector<double>& capacity, const std::vector<const std::vector<Hop>*>& paths,
                   std::vector<double>& rates, double unbounded) {
  const size_t nflows = paths.size();
  rates.assign(nflows, unbounded);
  // Only the links some flow crosses take part: the fabric may have millions.
  slot_.resize(capacity.size(), -1);
  touched_.clear();
  for (size_t f = 0; f < nflows; ++f)
    for (const Hop& h : *paths[f]) {
      int& slot = slot_[static_cast<size_t>(h.link)];
      if (slot < 0) {
        slot = static_cast<int>(touched_.size());
        touched_.push_back(h.link);
        if (flows_.size() < touched_.size()) flows_.resize(touched_.size());
        left_.resize(touched_.size());
        rising_.resize(touched_.size());
        unfrozen_.resize(touched_.size());
        left_[static_cast<size_t>(slot)] = capacity[static_cast<size_t>(h.link)];
        rising_[static_cast<size_t>(slot)] = 0;
        unfrozen_[static_cast<size_t>(slot)] = 0;
        flows_[static_cast<size_t>(slot)].clear();
      }
      flows_[static_cast<size_t>(slot)].push_back(f);
      rising_[static_cast<size_t>(slot)] += h.weight;
      ++unfrozen_[static_cast<size_t>(slot)];
    }
  frozen_.assign(nflows, 0);
  size_t left = 0;
  for (size_t f = 0; f < nflows; ++f) {
    frozen_[f] = paths[f]->empty();
    left += frozen_[f] ? 0 : 1;
  }
  const double inf = std::numeric_limits<double>::infinity();
  // A link counts while a flow through it still rises (by count: the weights' sum may not reach 0 exactly).
  auto share_of = [&](size_t s) {
    return unfrozen_[s] > 0 && rising_[s] > 0 ? std::max(0.0, left_[s]) / rising_[s] : inf;
  };
  while (left > 0) {
    // The link whose fair share is smallest fills first.
    double share = inf;
    for (size_t s = 0; s < touched_.size(); ++s) share = std::min(share, share_of(s));
    if (share == inf) {  // what still rises crosses only links of no weight
      for (size_t f = 0; f < nflows; ++f) frozen_[f] = 1;
      break;
    }
    for (size_t s = 0; s < touched_.size(); ++s) {
      if (share_of(s) > share * (1 + 1e-12)) continue;
      for (size_t f : flows_[s]) {
        if (frozen_[f]) continue;
        frozen_[f] = 1;
        rates[f] = share;
        --left;
        for (const Hop& h : *paths[f]) {
          const size_t other = static_cast<size_t>(slot_[static_cast<size_t>(h.link)]);
          left_[other] -= share * h.weight;
          rising_[other] -= h.weight;
          --unfrozen_[other];
        }
      }
    }
  }
  for (int link : touched_) slot_[static_cast<size_t>(link)] = -1;
}

}  // namespace coll::sim
