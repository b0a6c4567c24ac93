#include "algorithms/select.h"

#include "core/error.h"

#include <sstream>

namespace coll::algo {
namespace {

const char* const kAllreduceAlgorithms[] = {"ring"};

bool known_allreduce(const std::string& name) {
  for (const char* a : kAllreduceAlgorithms)
    if (name == a) return true;
  return false;
}

// Parses "name" or "coll:name;coll:name" into the allreduce entry.
std::string parse(const std::string& setting, bool strict) {
  if (setting.empty()) return "";
  if (setting.find(':') == std::string::npos) {
    if (!known_allreduce(setting))
      fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': unknown algorithm '", setting,
           "' (allreduce has: ring)");
    return setting;
  }
  std::string chosen;
  std::stringstream items(setting);
  std::string item;
  while (std::getline(items, item, ';')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    std::string coll = item.substr(0, colon), name = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (coll == "allreduce") {
      if (!known_allreduce(name))
        fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': allreduce has no algorithm '", name,
             "' (it has: ring)");
      chosen = name;
    } else if (strict) {
      fail(Code::kInvalidArgument, "COLL_ALGO='", setting, "': unknown collective '", coll,
           "' (this build has: allreduce)");
    }
  }
  return chosen;
}

}  // namespace

void check_algorithm_setting(const std::string& setting) { parse(setting, true); }

std::string allreduce_algorithm(const std::string& setting) { return parse(setting, true); }

Schedule build_allreduce(const std::string& setting, const AllreduceShape& shape) {
  std::string name = allreduce_algorithm(setting);
  (void)name;  // only "ring" exists: every valid choice and the default build the ring
  return ring_allreduce(shape);
}

}  // namespace coll::algo
