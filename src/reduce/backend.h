// Copies and reductions by memory kind, as UCC's mc/ec components: the
// executor's local steps run on the backend of the buffers' kind, so that
// a GPU build adds reduce/cuda/ without touching the executor.
#pragma once

#include "base/memory_kind.h"

#include <coll/coll.h>

#include <cstddef>

namespace coll::reduce {

// The operations one memory kind offers. `stream` is the caller's
// coll_stream_t (null for host memory); a backend that runs asynchronously
// orders its work on it, the host backend runs before it returns.
// Semantics of reduce and divide as in reduce.h; copy allows overlap.
struct Backend {
  const char* name;
  void (*copy)(void* dst, const void* src, size_t bytes, void* stream);
  void (*reduce)(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count,
                 void* stream);
  void (*divide)(coll_datatype_t dtype, void* dst, size_t count, int divisor, void* stream);
  // Memory of this kind for the executor's scratch and staging, on the
  // device of `near` (one of the operation's buffers), ordered on `stream`
  // where the kind has streams; release frees it after that stream's work
  // (a null stream: at once). A device's are from cudaMalloc, so that CUDA
  // IPC can share them, and kept until a release with a null stream, as
  // cudaFree would wait for every stream, the callers' gated ones included.
  void* (*allocate)(size_t bytes, const void* near, void* stream);
  void (*release)(void* p, void* stream);
  // Returns once the work queued on `stream` is done: before a transport
  // reads what a copy or reduction wrote (host: done already, null).
  void (*wait)(void* stream) = nullptr;
};

// The backend for buffers of `kind`. Throws coll::Error kInvalidArgument for
// a kind this build has no backend for.
const Backend& backend_for(MemoryKind kind);

// Where `p` lives: kCuda for device memory, kHost otherwise (pinned host
// memory included) and in builds without CUDA. Asks the CUDA driver only if
// the process has loaded it.
MemoryKind memory_kind_of(const void* p);

}  // namespace coll::reduce
