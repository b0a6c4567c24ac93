// Registrations a transport keeps, as NCCL's net plugins keep memory
// registrations: the same range registered again is the same registration,
// counted; one whose count fell to zero stays cached for the next call
// (a training loop registers the same gradient buffers at every step) until
// the cache is over its bound, then the least recently used goes. Each
// registration has an id, unique in this cache's life, that peers name it by.
#pragma once

#include "transport/transport.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace coll::transport {

class RegistrationCache {
 public:
  // What a transport does to register a range: fills the registration's
  // handle (the cache has set base, bytes, kind) given the id it got.
  using Register = std::function<void(Registration&, uint64_t id)>;
  // What it does to undo that, as an entry leaves the cache.
  using Unregister = std::function<void(const Registration&)>;

  explicit RegistrationCache(size_t bound = 64, Unregister unregister = {});
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // The registration of exactly [data, data + bytes) of that kind, made
  // with `make` unless cached; its count goes up.
  const Registration* acquire(const void* data, size_t bytes, MemoryKind kind, const Register& make);
  // Its count goes down; kInvalidArgument when it is not one of ours or
  // its count is zero already.
  void release(const Registration* registration);
  // The registration with that id, counted or cached; null if none.
  const Registration* find(uint64_t id) const;
  // The id a registration of ours has.
  uint64_t id_of(const Registration* registration) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Registration registration;
    uint64_t id = 0;
    int count = 0;
    uint64_t last_use = 0;
  };
  Entry* entry_of(const Registration* registration) const;
  void evict();

  size_t bound_;
  Unregister unregister_;
  std::vector<std::unique_ptr<Entry>> entries_;
  uint64_t next_id_ = 1;
  uint64_t clock_ = 0;
};

}  // namespace coll::transport
