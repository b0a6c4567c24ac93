// Memory of one kind (host, or a device's) that grows on demand and is kept
// between calls, so that large collectives do not allocate, or page-fault
// fresh memory, each time: the executor's staging and scratch.
#pragma once

#include "base/memory_kind.h"
#include "reduce/backend.h"

#include <cstddef>
#include <utility>

namespace coll {

class KindBuffer {
 public:
  KindBuffer() = default;
  KindBuffer(KindBuffer&& other) noexcept { *this = std::move(other); }
  KindBuffer& operator=(KindBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    std::swap(backend_, other.backend_);
    std::swap(stream_, other.stream_);
    return *this;
  }
  ~KindBuffer() { reset(nullptr); }

  // At least `need` bytes of `kind`'s memory (on the device of `near`,
  // ordered on `stream`); grown to `grow_to` when it must grow. The
  // contents are not kept.
  std::byte* get(MemoryKind kind, size_t need, size_t grow_to, const void* near, void* stream) {
    const reduce::Backend& b = reduce::backend_for(kind);
    if (data_ != nullptr && &b == backend_ && need <= bytes_) return data_;
    // Released in the order of the stream it was allocated on, also when a
    // job of another kind (a host one: no stream) takes its place.
    reset(&b == backend_ ? stream : stream_);
    data_ = static_cast<std::byte*>(b.allocate(grow_to < need ? need : grow_to, near, stream));
    bytes_ = grow_to < need ? need : grow_to;
    backend_ = &b;
    stream_ = stream;
    return data_;
  }
  std::byte* data() const { return data_; }

 private:
  void reset(void* stream) {
    if (data_ != nullptr) backend_->release(data_, stream);
    data_ = nullptr;
    bytes_ = 0;
  }

  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
  const reduce::Backend* backend_ = nullptr;
  void* stream_ = nullptr;  // the one it was allocated on
};

}  // namespace coll
