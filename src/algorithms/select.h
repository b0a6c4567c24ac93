// Which algorithm runs a collective. Today allreduce has one (ring); the
// cost-model selector of later issues plugs in here. COLL_ALGO names an
// algorithm for all collectives ("ring") or per collective
// ("allreduce:ring"); asking for one that does not exist is an error naming
// it, never a silent fallback.
#pragma once

#include "algorithms/ring_allreduce.h"

#include <string>

namespace coll::algo {

// kInvalidArgument when `setting` (COLL_ALGO syntax) names an unknown
// collective or algorithm.
void check_algorithm_setting(const std::string& setting);

// The algorithm `setting` asks for allreduce, or "" to let coll choose.
std::string allreduce_algorithm(const std::string& setting);

Schedule build_allreduce(const std::string& setting, const AllreduceShape& shape);

}  // namespace coll::algo
