// What an algorithm is asked to do: the collective and its shape on one
// rank. Every algorithm is a pure function from this to a Schedule.
#pragma once

#include "algorithms/cost_model.h"
#include "algorithms/schedule.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coll::algo {

enum class Collective : uint8_t {
  kAllreduce,
  kBroadcast,
  kReduce,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kBarrier,
  kSend,
  kRecv,
};
constexpr int kNumCollectives = 9;

const char* collective_name(Collective c);  // "allreduce", "reduce_scatter", ...
// The collective of that name; none for a name that is not one.
std::optional<Collective> collective_named(const std::string& name);
inline bool is_point_to_point(Collective c) { return c == Collective::kSend || c == Collective::kRecv; }

struct CollShape {
  Collective collective = Collective::kAllreduce;
  int rank = 0;
  int nranks = 1;
  // Elements: of the whole vector (allreduce, broadcast, reduce), of each
  // rank's part (allgather input, reduce_scatter output), of each pair's
  // block (alltoall), of the message (send, recv).
  size_t count = 0;
  size_t elem_size = 1;
  int root = 0;                        // broadcast and reduce; the peer of send and recv
  bool average = false;                // COLL_AVG: divide once at the end
  std::optional<int64_t> send_offset;  // in place: input address minus output address
  size_t chunk_bytes = 1 << 19;
  // The ring's order of ranks (empty: 0, 1, ..., nranks-1). The
  // communicator orders it by node, so that a ring crosses between nodes
  // as few times as it can whatever order the launcher chose.
  std::vector<int> ring_order;
  // The ranks taking turns between nodes (one of each node, then the next
  // of each, ...; empty: launcher order), for algorithms whose largest
  // exchanges are between the farthest ranks: those then stay inside a node.
  std::vector<int> spread_order;
  // Each rank's node, numbered from 0 (empty: all on one node), for the
  // two-level algorithms.
  std::vector<int> node_of;
  // What a message costs inside a node (hierarchical algorithms; zero: as
  // much as the slowest link, which the selector passes separately).
  LinkModel node_link{};

  bool in_place() const { return send_offset.has_value(); }
  // Elements per pipelining chunk, at least one.
  size_t chunk_elems() const { return chunk_bytes / elem_size > 0 ? chunk_bytes / elem_size : 1; }
};

// What a node's cache holds of each of its ranks (LinkModel::at_size): the
// bytes of a rank's input and output buffers as an out-of-place call has
// them (reduce's output, the root's alone, not counted). Never whether this
// rank's call is in place: every rank must price, and so choose, alike.
double buffer_bytes(const CollShape& s);

}  // namespace coll::algo
