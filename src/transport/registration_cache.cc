#include "transport/registration_cache.h"

#include "base/error.h"

#include <algorithm>

namespace coll::transport {

RegistrationCache::RegistrationCache(size_t bound, Unregister unregister)
    : bound_(bound), unregister_(std::move(unregister)) {}

RegistrationCache::~RegistrationCache() {
  if (unregister_)
    for (const auto& e : entries_) unregister_(e->registration);
}

const Registration* RegistrationCache::acquire(const void* data, size_t bytes, MemoryKind kind, const Register& make) {
  for (const auto& e : entries_)
    if (e->registration.base == data && e->registration.bytes == bytes && e->registration.kind == kind) {
      ++e->count;
      e->last_use = ++clock_;
      return &e->registration;
    }
  auto e = std::make_unique<Entry>();
  e->registration.base = data;
  e->registration.bytes = bytes;
  e->registration.kind = kind;
  e->id = next_id_++;
  make(e->registration, e->id);
  e->count = 1;
  e->last_use = ++clock_;
  entries_.push_back(std::move(e));
  evict();
  return &entries_.back()->registration;
}

RegistrationCache::Entry* RegistrationCache::entry_of(const Registration* registration) const {
  for (const auto& e : entries_)
    if (&e->registration == registration) return e.get();
  return nullptr;
}

void RegistrationCache::release(const Registration* registration) {
  Entry* e = entry_of(registration);
  if (e == nullptr) fail(Code::kInvalidArgument, "deregister: not a registration of this communicator");
  if (e->count == 0) fail(Code::kInvalidArgument, "deregister: the registration was released already");
  --e->count;
  evict();
}

const Registration* RegistrationCache::find(uint64_t id) const {
  for (const auto& e : entries_)
    if (e->id == id) return &e->registration;
  return nullptr;
}

uint64_t RegistrationCache::id_of(const Registration* registration) const {
  Entry* e = entry_of(registration);
  if (e == nullptr) fail(Code::kInternal, "a registration not of this cache");
  return e->id;
}

// Only entries nobody counts may go, the least recently used first: the
// cache may stay over its bound while every entry is in use.
void RegistrationCache::evict() {
  while (entries_.size() > bound_) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if ((*it)->count == 0 && (victim == entries_.end() || (*it)->last_use < (*victim)->last_use)) victim = it;
    if (victim == entries_.end()) return;
    if (unregister_) unregister_((*victim)->registration);
    entries_.erase(victim);
  }
}

}  // namespace coll::transport
