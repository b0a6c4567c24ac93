// Pure arithmetic shared by the algorithms: ring neighbours and the split of
// `count` elements into blocks and chunks. No transport, no state; unit-tested
// on their own and printable for teaching.
#pragma once

#include <cstddef>

namespace coll::algo {

inline int ring_peer_after(int rank, int nranks) { return (rank + 1) % nranks; }
inline int ring_peer_before(int rank, int nranks) { return (rank + nranks - 1) % nranks; }
// (a mod n) for a possibly negative a.
inline int wrap(long a, int n) { return static_cast<int>(((a % n) + n) % n); }

struct Span {
  size_t offset = 0;  // elements
  size_t count = 0;   // elements
};

// Block `b` of `count` elements cut into `nblocks` nearly equal blocks: the
// first count % nblocks blocks hold one element more.
inline Span block_span(size_t count, int nblocks, int b) {
  size_t n = static_cast<size_t>(nblocks), i = static_cast<size_t>(b);
  size_t base = count / n, extra = count % n;
  return Span{i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

// How many chunks of at most `chunk` elements a span of `count` needs.
inline size_t chunk_count(size_t count, size_t chunk) { return (count + chunk - 1) / chunk; }

// Chunk `c` of a span, chunks of at most `chunk` elements.
inline Span chunk_span(const Span& span, size_t chunk, size_t c) {
  size_t begin = c * chunk;
  size_t end = begin + chunk < span.count ? begin + chunk : span.count;
  return Span{span.offset + begin, end - begin};
}

}  // namespace coll::algo
