// The transports compiled in, by name: adding one is a folder under
// src/transport/, one entry in registry.cc and a COLL_WITH_<NAME> CMake
// option. COLL_TRANSPORTS picks from them, in preference order.
#pragma once

#include "base/auth.h"
#include "transport/transport.h"

#include <memory>
#include <string>
#include <vector>

namespace coll::transport {

// What a transport is made from.
struct Context {
  int rank = 0;
  int nranks = 0;
  auth::Secret secret{};  // the job's: connections prove they know it
  std::string job_tag;    // names the communicator's node-local objects (segments)
  std::string host_id;    // this node's identity (host_id())
};

struct Entry {
  const char* name;
  const char* description;
  std::unique_ptr<Transport> (*make)(const Context&);
  // Host memory that this transport's peers reach best (shm: a memfd they
  // can map), for coll_mem_alloc; null where any memory does as well.
  void* (*allocate)(size_t bytes, const char* name) = nullptr;
  bool (*release)(void* ptr) = nullptr;  // false: not memory it allocated
  // Why it cannot run on this machine ("" when it can); null: it always can.
  std::string (*unavailable)() = nullptr;
  // Whether COLL_TRANSPORTS unset includes it (false: only when named).
  bool by_default = true;
};

// Every transport compiled in, in the default preference order.
const std::vector<Entry>& registered();
// The one of that name; kInvalidArgument naming the ones there are when none.
const Entry& find(const std::string& name, const std::string& setting = "");
// The transports COLL_TRANSPORTS names, in its order (every registered one,
// in registry order, when it is unset).
std::vector<std::unique_ptr<Transport>> make_transports(const Context& context);

// coll_mem_alloc's memory: from the first transport that allocates, else
// plain pages. free_shareable: false when `ptr` did not come from here.
void* allocate_shareable(size_t bytes, const char* name);
bool free_shareable(void* ptr);

// This node's identity: COLL_HOSTID, else hostname and boot id.
std::string host_id();
// Names a communicator's node-local objects: a hash of the job secret
// (never the secret) and the communicator's store prefix.
std::string job_tag(const auth::Secret& secret, const std::string& prefix);
// What the communicators made from `secret` (split ones too, whose tags
// start alike; not a shrunk one, which has a secret of its own) left in
// /dev/shm: nothing, unless a rank ended by a signal before its local peers
// had mapped its segment (each unlinks its own then). Names, not paths.
std::vector<std::string> segments_left(const auth::Secret& secret);
// What these processes left in /dev/shm, whatever communicator (split,
// shrunk, grown) made it: a segment's name ends with its maker's pid and
// pid namespace (this process's: the processes are its children). Ask
// while they are ended but not reaped (zombies): a reaped pid may already be
// another process's.
std::vector<std::string> segments_left_by(const std::vector<int>& pids);

}  // namespace coll::transport
