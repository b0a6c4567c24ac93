// Logging by level and subsystem, configured from COLL_DEBUG (WARN, INFO,
// TRACE; default WARN) and COLL_DEBUG_SUBSYS (e.g. "INIT,NET" or "^COLL").
// Every line is prefixed "host:pid:rank [LEVEL/SUBSYS]". The level is checked
// before any argument is formatted, so disabled logging costs one compare.
#pragma once

#include "base/error.h"

#include <string>

namespace coll::log {

enum class Level { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum Subsys : unsigned {
  kInit = 1u << 0,    // communicator life cycle, settings
  kBoot = 1u << 1,    // bootstrap store, rendezvous
  kNet = 1u << 2,     // transports
  kColl = 1u << 3,    // collectives and their schedules
  kLaunch = 1u << 4,  // collrun and environment discovery
  kAll = ~0u,
};

bool enabled(Level level, Subsys subsys);
void write(Level level, Subsys subsys, const std::string& message);

// Called once the process knows its rank, so that later lines carry it.
void set_rank(int rank);

template <typename... Args>
void warn(Subsys subsys, const Args&... args) {
  if (enabled(Level::kWarn, subsys)) write(Level::kWarn, subsys, str_cat(args...));
}
template <typename... Args>
void info(Subsys subsys, const Args&... args) {
  if (enabled(Level::kInfo, subsys)) write(Level::kInfo, subsys, str_cat(args...));
}
template <typename... Args>
void trace(Subsys subsys, const Args&... args) {
  if (enabled(Level::kTrace, subsys)) write(Level::kTrace, subsys, str_cat(args...));
}

}  // namespace coll::log
