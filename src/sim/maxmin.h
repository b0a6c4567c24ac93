// Max-min fair rates (progressive filling; Bertsekas & Gallager, "Data
// Networks", 6.5.2): every flow's rate rises together until a link it
// crosses is full; those flows keep that rate and the rest go on rising.
#pragma once

#include <cstddef>
#include <vector>

namespace coll::sim {

// A flow's use of a link: `weight` times its rate counts against the
// link's capacity (1 for one flow on one link; the symmetric simulation's
// flows stand for many, spread over many links of a kind).
struct Hop {
  int link = 0;
  double weight = 1;
};

// rates[f] for flows that cross the links in paths[f], with capacity[l]
// per link; a link twice in a path counts twice (two ranks of one core: it
// copies the message out and in). A flow with an empty path
// gets `unbounded`. Keeps its scratch space between calls: a simulation
// solves once per flow that starts or ends.
class MaxMin {
 public:
  void solve(const std::vector<double>& capacity, const std::vector<const std::vector<Hop>*>& paths,
             std::vector<double>& rates, double unbounded = 1e18);

 private:
  // Per link crossed, in the order first crossed: slot_[link] indexes these.
  std::vector<int> slot_, touched_;
  std::vector<double> left_;    // capacity not yet given to frozen flows
  std::vector<double> rising_;  // the weights of the flows through it still rising
  std::vector<int> unfrozen_;   // how many of them
  std::vector<std::vector<size_t>> flows_;
  std::vector<char> frozen_;
};

inline void max_min_rates(const std::vector<double>& capacity, const std::vector<const std::vector<Hop>*>& paths,
                          std::vector<double>& rates, double unbounded = 1e18) {
  MaxMin().solve(capacity, paths, rates, unbounded);
}

}  // namespace coll::sim
