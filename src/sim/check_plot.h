// collsim's predictions against coll_perf's measurements, as
// scripts/sim-check.sh writes them (check.csv), drawn as one plot: each
// point is a run, measured across, predicted up, with the band where the
// prediction is within 20% (docs/SIMULATION.md, "Predicted against measured").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace coll::sim {

struct CheckPoint {
  std::string where;  // "shm", or "emulated" between emulated nodes
  int ranks = 0;
  std::string algorithm;
  size_t bytes = 0;
  double predicted_us = 0, measured_us = 0;
  double error = 0;     // predicted / measured - 1, as the file gives it (sim-check counts by it)
  double again_us = 0;  // the second sweep's measurement (sim-check -r); 0 without
};

// check.csv's rows; kInvalidArgument naming origin:line for a row that is
// not one, or for a file without rows.
std::vector<CheckPoint> parse_check(const std::string& text, const std::string& origin);

// |error| <= 0.2.
bool within_20_percent(const CheckPoint& p);

// A self-contained SVG: log-log, the diagonal and its ±20% band, a colour
// per algorithm and a shape per rank count (hollow between emulated nodes),
// a second sweep's measurement as a grey line from the first's; each point
// names itself on hover.
std::string check_svg(const std::vector<CheckPoint>& points, const std::string& title);

}  // namespace coll::sim
