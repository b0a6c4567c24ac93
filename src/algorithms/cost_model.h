// The alpha-beta-gamma model (Hockney; Thakur, Rabenseifner & Gropp 2005):
// a message of S bytes costs alpha + S beta, reducing S bytes costs S gamma.
// One set of parameters per transport class. Used to choose algorithms here,
// and meant for the simulator and calibration later (DESIGN.md, idea 4).
#pragma once

#include <string>

namespace coll::algo {

struct LinkModel {
  double alpha_us = 0;           // per message
  double beta_ns_per_byte = 0;   // inverse bandwidth
  double gamma_ns_per_byte = 0;  // reduction
  double chunk_bytes = 0;        // pipelining unit when COLL_CHUNK_BYTES is unset
};

struct CostModel {
  LinkModel tcp;
  LinkModel shm;

  // Defaults measured on the development machine (README, "Selection"),
  // overridden by COLL_TUNING_FILE when set. A malformed file is
  // kInvalidArgument naming the file and line.
  static CostModel load();
  // Parses "class.parameter = value" lines (# comments) over the defaults.
  static CostModel parse(const std::string& text, const std::string& origin);

  // The parameters of a transport class by name ("shm", "tcp"); tcp for others.
  const LinkModel& link(const std::string& transport) const { return transport == "shm" ? shm : tcp; }
};

}  // namespace coll::algo
