// The cost model's link classes, as data: one per transport in use, from
// the transport's own link parameters, then COLL_TUNING_FILE over them.
// Here, in core, because algorithms/ knows no transport and reads no file.
#pragma once

#include "algorithms/cost_model.h"
#include "transport/transport.h"

#include <vector>

namespace coll {

algo::LinkModel link_model(const transport::Capabilities& caps);
// kInvalidArgument naming the file (and line) when COLL_TUNING_FILE cannot
// be read or does not parse.
algo::CostModel link_models(const std::vector<const transport::Capabilities*>& transports);

}  // namespace coll
