#include "core/link_models.h"

#include "base/config.h"
#include "base/error.h"
#include "transport/registry.h"

#include <fstream>
#include <sstream>

namespace coll {

algo::LinkModel link_model(const transport::Capabilities& caps) {
  algo::LinkModel m;
  m.alpha_us = caps.link.alpha_us;
  m.beta_ns_per_byte = caps.link.beta_ns_per_byte;
  m.chunk_bytes = caps.link.chunk_bytes;
  m.one_node = caps.same_host_only;
  return m;
}

algo::CostModel link_models(const std::vector<const transport::Capabilities*>& transports) {
  algo::CostModel model;
  for (const transport::Capabilities* caps : transports) model.links[caps->name] = link_model(*caps);
  const std::string path = config::get_string("COLL_TUNING_FILE");
  if (path.empty()) return model;
  std::ifstream in(path);
  if (!in) fail(Code::kInvalidArgument, "COLL_TUNING_FILE='", path, "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  // One file serves the machine whichever transports a job uses: the lines
  // of the others compiled in are passed over.
  std::vector<std::string> absent;
  for (const transport::Entry& e : transport::registered())
    if (model.links.count(e.name) == 0) absent.push_back(e.name);
  model.apply(text.str(), path, absent);
  return model;
}

}  // namespace coll
