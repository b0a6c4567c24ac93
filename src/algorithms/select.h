// Which algorithm runs a collective: the one COLL_ALGO names, or the one
// the cost model predicts fastest for (collective, size, nranks, transport).
// COLL_ALGO is one name for every collective ("ring") or a list per
// collective ("allreduce:ring;broadcast:tree"); a name a collective does not
// have is an error naming both, never a silent fallback.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/cost_model.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace coll::algo {

struct Algorithm {
  const char* name;
  Collective collective;
  Schedule (*build)(const CollShape&);
  // Predicted seconds on one link class.
  double (*cost)(const CollShape&, const LinkModel&);
  // Built on positions in shape.spread_order (build_schedule): its largest
  // exchanges are between the farthest positions.
  bool spread = false;
};

const std::vector<Algorithm>& all_algorithms();

// a.cost's formula as text, in a (alpha), b (beta) and g (gamma): for
// teaching views (collsim --explain). shared_link: where a node's ranks
// share one link between nodes (the network class's node_beta), as priced then.
const char* cost_formula(const Algorithm& a, bool shared_link = false);

// a.build(shape), in the order of ranks the algorithm wants: rings follow
// shape.ring_order themselves; an allreduce marked `spread` is built for
// this rank's position in shape.spread_order and its peers mapped back to
// ranks, so that its first, largest exchanges pair ranks of one node.
Schedule build_schedule(const Algorithm& a, const CollShape& shape);

// Whether a collective has an algorithm of that name.
bool has_algorithm(Collective c, const std::string& name);

// The algorithm of that name for a collective; kInternal if there is none.
const Algorithm& find_algorithm(Collective c, const std::string& name);

// "ring, tree" for a collective, for messages.
std::string algorithm_names(Collective c);

class Selector {
 public:
  // Parses COLL_ALGO syntax; kInvalidArgument names an unknown collective or algorithm.
  Selector(const std::string& setting, CostModel model);

  // The link class the cost model prices: the slowest that joins this rank
  // to a peer; set once the communicator knows its peers (kInternal when the
  // model has no such class).
  void set_link_class(const std::string& name) { link_ = model_.link(name), link_class_ = name; }

  // The algorithm for this call; kInvalidArgument when COLL_ALGO asks for
  // one this collective does not have. Logs the choice at INFO once per
  // (collective, power-of-two size bucket).
  const Algorithm& choose(const CollShape& shape);

  // Whether COLL_ALGO names the algorithm of this collective.
  bool fixed(Collective c) const;

  const CostModel& model() const { return model_; }
  // The parameters of the link class set above (the model's defaults until then).
  const LinkModel& link() const { return link_; }

 private:
  std::string setting_;
  std::string all_;                          // one name for every collective
  std::map<Collective, std::string> named_;  // per collective
  CostModel model_;
  LinkModel link_{};
  std::string link_class_ = "none";
  std::set<std::pair<Collective, int>> logged_;
};

}  // namespace coll::algo
