// What an operation is, carried in the tag of every message it sends, so
// that ranks that call different operations find out at their first message
// (COLL_INVALID_USAGE naming the difference) instead of hanging or reducing
// a float32 sum into an int32 max.
//
// A tag is 64 bits: the operation's signature in the top 40, and the number
// of messages before this one on its channel (pair and direction) in the
// low 24. The signature holds the collective (4 bits), datatype (4), op (3),
// root (13) and count (16) exactly where they fit, and their low bits
// otherwise, so a difference is named exactly in all but rare cases (roots
// 8192 apart, counts 65536 apart: those still differ in bytes, or match).
#pragma once

#include "algorithms/collective.h"

#include <coll/coll.h>

#include <cstdint>
#include <string>

namespace coll {

struct OpSignature {
  algo::Collective collective;  // send and recv count as one: they must meet
  coll_datatype_t dtype;
  coll_redop_t op;  // COLL_SUM where the collective reduces nothing
  int root;         // 0 where the collective has none
  size_t count;

  uint64_t bits() const;  // the 40-bit signature
};

// The signature of one call, with what does not matter for it cleared.
OpSignature signature_of(algo::Collective c, coll_datatype_t dtype, coll_redop_t op, int root, size_t count);

constexpr int kTagCounterBits = 24;
inline uint64_t make_tag(uint64_t signature_bits, uint64_t counter) {
  return signature_bits << kTagCounterBits | (counter & ((uint64_t{1} << kTagCounterBits) - 1));
}

// Why a message of tag `theirs` cannot answer a receive of tag `ours`, in
// words: "it called broadcast where this rank called allreduce; root 1, not 0".
std::string describe_mismatch(uint64_t ours, uint64_t theirs);

}  // namespace coll
