// Where a buffer lives. Copies and reductions (reduce/backend.h), and what a
// transport can move, depend on it; it sits in base/ so that both reduce/
// and transport/ can name it without depending on each other.
#pragma once

#include <cstdint>

namespace coll {

enum class MemoryKind : uint8_t { kHost, kCuda };

// "host" or "cuda", for messages.
inline const char* memory_kind_name(MemoryKind kind) { return kind == MemoryKind::kCuda ? "cuda" : "host"; }

}  // namespace coll
