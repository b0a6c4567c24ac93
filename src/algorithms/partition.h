// Pure arithmetic shared by the algorithms: ring neighbours and the split of
// `count` elements into blocks and chunks. No transport, no state; unit-tested
// on their own and printable for teaching.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coll::algo {

// (a mod n) for a possibly negative a.
inline int wrap(long a, int n) { return static_cast<int>(((a % n) + n) % n); }

// A ring of n ranks in `order` (empty: 0, 1, ..., n-1): positions go round
// the ring, each rank sends to the rank at the next position.
class Ring {
 public:
  Ring(int rank, int nranks, const std::vector<int>& order) : n_(nranks), order_(order) {
    position_ = rank;
    for (int p = 0; p < static_cast<int>(order_.size()); ++p)
      if (order_[static_cast<size_t>(p)] == rank) position_ = p;
  }
  int position() const { return position_; }
  int at(long position) const {  // the rank at a position, wrapped
    int p = wrap(position, n_);
    return order_.empty() ? p : order_[static_cast<size_t>(p)];
  }
  int position_of(int rank) const { return Ring(rank, n_, order_).position(); }
  int next() const { return at(position_ + 1); }
  int prev() const { return at(position_ - 1); }

 private:
  int n_;
  const std::vector<int>& order_;
  int position_;
};

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

// Block `b` of `count` elements of `elem_size` bytes cut into `nblocks`
// blocks of whole 64-byte lines (counted from the buffer's start; the last
// line may be partial), nearly equal in lines: ranks that write their blocks
// into one buffer share no line when it starts on one.
inline Span line_span(size_t count, size_t elem_size, int nblocks, int b) {
  const size_t per_line = 64 / elem_size;
  const Span lines = block_span((count + per_line - 1) / per_line, nblocks, b);
  const size_t first = lines.offset * per_line < count ? lines.offset * per_line : count;
  const size_t end = (lines.offset + lines.count) * per_line < count ? (lines.offset + lines.count) * per_line : count;
  return Span{first, end - first};
}

// How many chunks of at most `chunk` elements a span of `count` needs.
inline size_t chunk_count(size_t count, size_t chunk) { return (count + chunk - 1) / chunk; }

// Chunk `c` of a span, chunks of at most `chunk` elements.
inline Span chunk_span(const Span& span, size_t chunk, size_t c) {
  size_t begin = c * chunk;
  size_t end = begin + chunk < span.count ? begin + chunk : span.count;
  return Span{span.offset + begin, end - begin};
}

// fn(piece) for every chunk of a span, in order.
template <typename Fn>
void for_each_chunk(const Span& span, size_t chunk, Fn&& fn) {
  for (size_t c = 0; c < chunk_count(span.count, chunk); ++c) fn(chunk_span(span, chunk, c));
}

// For every chunk index of the larger of two spans: fn(c) (a ring step
// sends one block and receives another, which may differ by an element).
template <typename Fn>
void for_chunks(const Span& a, const Span& b, size_t chunk, Fn&& fn) {
  size_t chunks = std::max(chunk_count(a.count, chunk), chunk_count(b.count, chunk));
  for (size_t c = 0; c < chunks; ++c) fn(c);
}

}  // namespace coll::algo

namespace coll::algo {

// Largest power of two <= n (n >= 1).
inline int power_of_two_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// A node's links in a tree; -1 where there is none. Binary trees use two
// children; a node's head in a tree over nodes (node_tree) has a third, the
// next rank of its chain.
struct TreeLinks {
  int parent = -1;
  int children[3] = {-1, -1, -1};
};

// The in-order binary tree on positions 1..n: a position's height is its
// number of trailing zero bits, leaves are the odd positions, and the root
// is the largest power of two <= n. Parent of x at height h: x - 2^h or
// x + 2^h, whichever has height h+1 (climbing further while it is past n).
// Children: x -/+ 2^(h-1) (the right one shrinking while it is past n).
// Returns the links of node v in 0..n-1 (position v+1), as node numbers.
inline TreeLinks inorder_tree(int n, int v) {
  TreeLinks t;
  const int x = v + 1;
  int h = 0;
  while (((x >> h) & 1) == 0) ++h;
  // Parent.
  int64_t p = x;  // climbs past n for the root: 64 bits keep it from overflowing
  int ph = h;
  do {
    int64_t a = p >> (ph + 1);  // p = a * 2^(ph+1) + 2^ph
    p = (a & 1) ? p - (int64_t{1} << ph) : p + (int64_t{1} << ph);
    ++ph;
  } while (p > n && ph < 31);
  if (x != power_of_two_floor(n)) t.parent = static_cast<int>(p - 1);
  // Children.
  if (h > 0) {
    t.children[0] = x - (1 << (h - 1)) - 1;
    for (int d = h - 1; d >= 0; --d)
      if (x + (1 << d) <= n) {
        t.children[1] = x + (1 << d) - 1;
        break;
      }
  }
  return t;
}

// The two trees of the double binary tree (Sanders, Speck & Traeff 2009):
// tree 0 is the in-order tree; tree 1 is it mirrored (n even) or shifted by
// one (n odd), so that no node is inner in both trees.
inline TreeLinks double_tree(int n, int v, int which) {
  if (which == 0) return inorder_tree(n, v);
  auto to_tree = [&](int u) { return n % 2 == 0 ? n - 1 - u : wrap(u - 1, n); };
  auto from_tree = [&](int u) { return u < 0 ? -1 : (n % 2 == 0 ? n - 1 - u : wrap(u + 1, n)); };
  TreeLinks t = inorder_tree(n, to_tree(v));
  return TreeLinks{from_tree(t.parent), {from_tree(t.children[0]), from_tree(t.children[1]), -1}};
}

// The double binary tree across nodes with a chain inside each node (the
// shape NCCL's trees take on several nodes): tree `which` of the double
// tree joins the nodes; inside a node the ranks form a chain whose head
// links to the heads of the parent and child nodes. Tree 0's chains run in
// rank order and tree 1's in reverse, so that no rank heads both.
// node_of[r] numbers each rank's node from 0. Returns rank r's links, as ranks.
inline TreeLinks node_tree(const std::vector<int>& node_of, int r, int which) {
  const int n = static_cast<int>(node_of.size()), mine = node_of[static_cast<size_t>(r)];
  // One pass, no copies: the trees of a large job's every rank are built at scale (sim/tree_classes.cc).
  int nodes = 0, below = -1, above = -1;  // r's nearest ranks of its own node
  for (int q = 0; q < n; ++q) {
    nodes = std::max(nodes, node_of[static_cast<size_t>(q)] + 1);
    if (node_of[static_cast<size_t>(q)] != mine) continue;
    if (q < r) below = q;
    if (q > r && above < 0) above = q;
  }
  TreeLinks t;
  t.children[2] = which == 0 ? above : below;  // the next rank of the chain
  const int prev = which == 0 ? below : above;
  if (prev >= 0) {
    t.parent = prev;
    return t;
  }
  const TreeLinks across = double_tree(nodes, mine, which);
  // A node's head: its first rank in tree 0's chain order, its last in tree 1's.
  auto head = [&](int node) {
    int h = -1;
    for (int q = 0; node >= 0 && q < n; ++q)
      if (node_of[static_cast<size_t>(q)] == node) {
        h = q;
        if (which == 0) break;
      }
    return h;
  };
  t.parent = head(across.parent);
  t.children[0] = head(across.children[0]);
  t.children[1] = head(across.children[1]);
  return t;
}

}  // namespace coll::algo
