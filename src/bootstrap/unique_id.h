// What coll_unique_id_t carries: the bootstrap store's address and the job
// secret. Serialized into the fixed 128 bytes of the C struct.
#pragma once

#include "base/auth.h"

#include <coll/coll.h>

#include <string>

namespace coll::bootstrap {

struct UniqueId {
  std::string store_address;  // "host:port" or "[v6]:port"
  auth::Secret secret{};

  coll_unique_id_t encode() const;
  // kInvalidArgument when the bytes are not a coll unique id (uninitialised, corrupted).
  static UniqueId decode(const coll_unique_id_t& raw);
};

}  // namespace coll::bootstrap
