// A schedule: the per-rank program an algorithm compiles to (docs/ARCHITECTURE.md, idea
// 1). It is plain data, so the same ring can be executed over a transport,
// simulated, printed for a class, or checked by a test with no network.
//
// Terms:
//   buffer  kSend is the caller's input, kRecv its output, kScratch memory
//           the executor provides (scratch_bytes); when the caller passes
//           overlapping input and output (in place), send_offset says where
//           the input starts relative to the output (bytes, may be negative);
//   region  a byte offset into one buffer;
//   step    one operation; it may start once every step in `deps` is done.
//           Sends to one peer are posted in program order, and so are
//           receives from one peer: that order is how the two ends match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coll::algo {

enum class BufferId : uint8_t { kSend, kRecv, kScratch };

struct Region {
  BufferId buffer = BufferId::kRecv;
  size_t offset = 0;  // bytes
};

enum class OpKind : uint8_t {
  kSend,        // send `bytes` at src to `peer`
  kRecv,        // receive `bytes` from `peer` into dst
  kRecvReduce,  // receive `bytes` from `peer`; dst = src (op) received, or
                //   received (op) src where received_first
  kCopy,        // dst = src
  kReduce,      // dst = dst (op) src, locally
  kDivide,      // dst /= nranks (the single division of AVG)
};

struct Step {
  OpKind kind;
  int peer = -1;
  Region src;
  Region dst;
  size_t bytes = 0;
  std::vector<uint32_t> deps;  // indices of earlier steps
  // kRecvReduce: the peer's data is the first operand. Two ranks that each
  // reduce the other's data put the lower rank's first, and so compute the
  // same bits (a min or max of NaN or of +0 and -0, and which NaN a sum
  // keeps, depend on the order).
  bool received_first = false;
};

struct Schedule {
  std::string algorithm;
  size_t elem_size = 1;
  size_t scratch_bytes = 0;
  std::optional<int64_t> send_offset;  // in place: input address minus output address
  std::vector<Step> steps;

  // The ranks this schedule talks to, sorted, without duplicates.
  std::vector<int> peers() const;
};
const char* op_kind_name(OpKind kind);

// One line per step: "3 recv-reduce from 1 send[64..128) -> recv[64..128) after 0,1".
std::string to_string(const Schedule& schedule);

}  // namespace coll::algo
