#include "algorithms/cost_model.h"

#include "core/config.h"
#include "core/error.h"

#include <fstream>
#include <sstream>

namespace coll::algo {
namespace {

// Measured with coll_perf on the 2-core development machine, 2 ranks (one
// per core), ring allreduce (README, "Algorithms and how one is chosen"):
// alpha from the 64-byte time over its 2 steps, beta from 16 MiB, gamma the
// float32 sum kernel.
CostModel defaults() {
  CostModel m;
  m.tcp = LinkModel{15.0, 0.63, 0.1};
  m.shm = LinkModel{2.7, 0.29, 0.1};
  return m;
}

}  // namespace

CostModel CostModel::parse(const std::string& text, const std::string& origin) {
  CostModel m = defaults();
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
    LinkModel* link = cls == "tcp" ? &m.tcp : cls == "shm" ? &m.shm : nullptr;
    double* field = link == nullptr                ? nullptr
                    : param == "alpha_us"          ? &link->alpha_us
                    : param == "beta_ns_per_byte"  ? &link->beta_ns_per_byte
                    : param == "gamma_ns_per_byte" ? &link->gamma_ns_per_byte
                                                   : nullptr;
    if (field == nullptr)
      fail(Code::kInvalidArgument, origin, ":", number, ": unknown parameter '", key,
           "' (classes tcp, shm; parameters alpha_us, beta_ns_per_byte, gamma_ns_per_byte)");
    if (value < 0) fail(Code::kInvalidArgument, origin, ":", number, ": '", key, "' must not be negative");
    *field = value;
  }
  return m;
}

CostModel CostModel::load() {
  std::string path = config::get_string("COLL_TUNING_FILE");
  if (path.empty()) return defaults();
  std::ifstream in(path);
  if (!in) fail(Code::kInvalidArgument, "COLL_TUNING_FILE='", path, "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

}  // namespace coll::algo
