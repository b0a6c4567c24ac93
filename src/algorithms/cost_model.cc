#include "algorithms/cost_model.h"

#include "base/error.h"

#include <algorithm>
#include <sstream>

namespace coll::algo {

LinkModel LinkModel::at_size(double bytes, int per_node) const {
  if (cache_bytes <= 0 || cache_beta_ns_per_byte <= 0 || beta_ns_per_byte <= 0) return *this;
  const double held = bytes * std::max(per_node, 1);
  const auto share = [held](double cache) { return held <= cache ? 1 : cache / held; };
  const double in_cache = share(cache_bytes);
  const double in_cache2 = cache2_beta_ns_per_byte > 0 ? std::max(in_cache, share(cache2_bytes)) : in_cache;
  const double beta = cache_beta_ns_per_byte * in_cache + cache2_beta_ns_per_byte * (in_cache2 - in_cache) +
                      beta_ns_per_byte * (1 - in_cache2);
  LinkModel m = *this;
  m.node_beta_ns_per_byte *= beta / beta_ns_per_byte;
  m.beta_ns_per_byte = beta;
  return m;
}

std::string CostModel::class_names() const {
  std::string out;
  for (const auto& [name, link] : links) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const LinkModel& CostModel::link(const std::string& link_class) const {
  auto it = links.find(link_class);
  if (it == links.end())
    fail(Code::kInternal, "no link parameters for '", link_class, "' (there are: ", class_names(), ")");
  return it->second;
}

void CostModel::apply(const std::string& text, const std::string& origin, const std::vector<std::string>& absent) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string key, eq;
    double value = 0;
    std::istringstream fields(line);
    if (!(fields >> key >> eq >> value) || eq != "=")
      fail(Code::kInvalidArgument, origin, ":", number, ": expected 'class.parameter = number', got '", line, "'");
    auto dot = key.find('.');
    std::string cls = key.substr(0, dot), param = dot == std::string::npos ? "" : key.substr(dot + 1);
    auto it = links.find(cls);
    if (it == links.end() && std::find(absent.begin(), absent.end(), cls) != absent.end()) continue;
    LinkModel* link = it == links.end() ? nullptr : &it->second;
    double* field = link == nullptr                      ? nullptr
                    : param == "alpha_us"                ? &link->alpha_us
                    : param == "beta_ns_per_byte"        ? &link->beta_ns_per_byte
                    : param == "node_beta_ns_per_byte"   ? &link->node_beta_ns_per_byte
                    : param == "cache_bytes"             ? &link->cache_bytes
                    : param == "cache_beta_ns_per_byte"  ? &link->cache_beta_ns_per_byte
                    : param == "cache2_bytes"            ? &link->cache2_bytes
                    : param == "cache2_beta_ns_per_byte" ? &link->cache2_beta_ns_per_byte
                    : param == "cores"                   ? &link->cores
                    : param == "local_weight"            ? &link->local_weight
                    : param == "reduce_weight"           ? &link->reduce_weight
                    : param == "same_core_read_weight"   ? &link->same_core_read_weight
                    : param == "turn_us"                 ? &link->turn_us
                    : param == "gamma_ns_per_byte"       ? &link->gamma_ns_per_byte
                    : param == "chunk_bytes"             ? &link->chunk_bytes
                                                         : nullptr;
    if (field == nullptr)
      fail(Code::kInvalidArgument, origin, ":", number, ": unknown parameter '", key, "' (classes ", class_names(),
           "; parameters alpha_us, beta_ns_per_byte, node_beta_ns_per_byte, cache_bytes, cache_beta_ns_per_byte, ",
           "cache2_bytes, cache2_beta_ns_per_byte, cores, local_weight, reduce_weight, same_core_read_weight, ",
           "turn_us, gamma_ns_per_byte, chunk_bytes)");
    if (value < 0) fail(Code::kInvalidArgument, origin, ":", number, ": '", key, "' must not be negative");
    if (field == &link->chunk_bytes && (value < 64 || value > double(1 << 30)))
      fail(Code::kInvalidArgument, origin, ":", number, ": '", key, "' must be between 64 and 1G");
    *field = value;
  }
}

}  // namespace coll::algo
