#include "algorithms/cost_model.h"

#include "base/config.h"
#include "base/error.h"

#include <fstream>
#include <sstream>

namespace coll::algo {
namespace {

// Measured with coll_perf on the 2-core development machine, 2 ranks (one
// per core), ring allreduce (README, "Algorithms and how one is chosen"):
// alpha from the 64-byte time over its 2 steps, beta from 16 MiB, gamma the
// float32 sum kernel. Chunks: over shm one that stays in L2 while it is
// reduced (64 MiB on 2 ranks: 5.9 GB/s busbw at 128 KiB, 5.0 at 512 KiB);
// TCP pays per message and keeps 512 KiB (128 KiB: 0.9 against 1.6 GB/s).
CostModel defaults() {
  CostModel m;
  m.tcp = LinkModel{15.0, 0.63, 0.1, 512 << 10};
  m.shm = LinkModel{2.7, 0.29, 0.1, 128 << 10};
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
                    : param == "chunk_bytes"       ? &link->chunk_bytes
                                                   : nullptr;
    if (field == nullptr)
      fail(Code::kInvalidArgument, origin, ":", number, ": unknown parameter '", key,
           "' (classes tcp, shm; parameters alpha_us, beta_ns_per_byte, gamma_ns_per_byte, chunk_bytes)");
    if (value < 0) fail(Code::kInvalidArgument, origin, ":", number, ": '", key, "' must not be negative");
    if (field == &link->chunk_bytes && (value < 64 || value > double(1 << 30)))
      fail(Code::kInvalidArgument, origin, ":", number, ": '", key, "' must be between 64 and 1G");
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
