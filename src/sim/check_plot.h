// collsim's predictions against coll_perf's measurements, as
// scripts/sim-check.sh writes them (check.csv), drawn as a plot: how far
// each run's prediction is off, against its size, with the band where it is
// within 20% (docs/SIMULATION.md, "Predicted against measured").
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

// check.csv's rows, its columns found by the header's names (error and
// again_us optional); kInvalidArgument naming origin:line for a header or a
// row that is not one, or for a file without rows.
std::vector<CheckPoint> parse_check(const std::string& text, const std::string& origin);

// |error| <= 0.2.
bool within_20_percent(const CheckPoint& p);
// How many of the points are within 20%.
size_t count_within_20_percent(const std::vector<CheckPoint>& points);

// A self-contained SVG: a panel per place and rank count, the size across
// (log), the error up (±50%, beyond on the edge) over the ±20% band; a
// colour per algorithm, a miss a square, a grey line to the error against a
// second sweep; each point names itself on hover.
std::string check_svg(const std::vector<CheckPoint>& points, const std::string& title);

}  // namespace coll::sim
