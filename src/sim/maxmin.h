// Max-min fair rates (progressive filling; Bertsekas & Gallager, "Data
// Networks", 6.5.2): every flow's rate rises together until a link it
// crosses is full; those flows keep that rate and the rest go on rising.
#pragma once

#include <vector>

namespace coll::sim {

// A flow's use of a link: `weight` times its rate counts against the
// link's capacity (1 for one flow on one link; the symmetric simulation's
// flows stand for many, spread over many links of a kind).
struct Hop {
  int link = 0;
  double weight = 1;
};

// rates[f] for flows that cross the links in paths[f] (each link at most
// once per path), with capacity[l] per link. A flow with an empty path
// gets `unbounded`.
void max_min_rates(const std::vector<double>& capacity, const std::vector<const std::vector<Hop>*>& paths,
                   std::vector<double>& rates, double unbounded = 1e18);

}  // namespace coll::sim
