// The algorithm a communicator's last operation ran, from its flight
// recorder (core/flight_recorder.h): the proof that a test took the path it
// meant to ("board_allreduce", "peer_access_staged", "ring", ...).
#pragma once

#include "core/c_api_internal.h"

#include <string>

namespace coll::testing {

inline std::string last_algorithm(coll_comm_t comm) {
  const std::string text = comm->impl->recorder().text("test");
  const size_t at = text.rfind(" algorithm=");
  if (at == std::string::npos) return "";
  const size_t from = at + std::string(" algorithm=").size();
  return text.substr(from, text.find(' ', from) - from);
}

}  // namespace coll::testing
