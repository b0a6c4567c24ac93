#include "core/op_signature.h"

#include "base/error.h"
#include "reduce/dtype.h"

namespace coll {

namespace {

using algo::Collective;

bool reduces(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}
bool has_root(Collective c) { return c == Collective::kBroadcast || c == Collective::kReduce; }

// The fields as the 40 bits keep them.
struct Fields {
  unsigned collective, dtype, op, root, count;
};

Fields decode(uint64_t tag) {
  const uint64_t s = tag >> kTagCounterBits;
  return {static_cast<unsigned>(s >> 36 & 0xf), static_cast<unsigned>(s >> 32 & 0xf),
          static_cast<unsigned>(s >> 29 & 0x7), static_cast<unsigned>(s >> 16 & 0x1fff),
          static_cast<unsigned>(s & 0xffff)};
}

const char* collective_word(unsigned c) {
  if (c >= static_cast<unsigned>(algo::kNumCollectives)) return "an unknown operation";
  if (c == static_cast<unsigned>(Collective::kSend)) return "send/recv";
  return algo::collective_name(static_cast<Collective>(c));
}

}  // namespace

OpSignature signature_of(Collective c, coll_datatype_t dtype, coll_redop_t op, int root, size_t count) {
  if (c == Collective::kRecv) c = Collective::kSend;
  return OpSignature{c, dtype, reduces(c) ? op : COLL_SUM, has_root(c) ? root : 0, count};
}

uint64_t OpSignature::bits() const {
  return uint64_t{static_cast<uint8_t>(collective) & 0xfu} << 36 | uint64_t{static_cast<unsigned>(dtype) & 0xfu} << 32 |
         uint64_t{static_cast<unsigned>(op) & 0x7u} << 29 | uint64_t{static_cast<unsigned>(root) & 0x1fffu} << 16 |
         uint64_t{count & 0xffffu};
}

std::string describe_mismatch(uint64_t ours, uint64_t theirs) {
  const Fields a = decode(ours), b = decode(theirs);
  if (a.collective != b.collective) {
    // The direct-access allreduce (core/fastpath/peer_access_allreduce.cc) opens with an
    // alltoall of offers, where a rank that does not take it runs the plan.
    const unsigned allreduce = static_cast<unsigned>(Collective::kAllreduce);
    const unsigned alltoall = static_cast<unsigned>(Collective::kAlltoall);
    const bool direct_on_one_side = (a.collective == allreduce && b.collective == alltoall) ||
                                    (a.collective == alltoall && b.collective == allreduce);
    return str_cat("it called ", collective_word(b.collective), " where this rank called ",
                   collective_word(a.collective),
                   direct_on_one_side ? " (a large allreduce on one node opens with an alltoall where it takes the "
                                        "direct-access path: are COLL_SHM_MAPPED, COLL_SHM_DIRECT_BYTES, "
                                        "COLL_SHM_STAGED and COLL_SHM_STAGED_BYTES the same everywhere?)"
                                      : "");
  }
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (a.dtype != b.dtype)
    add(str_cat("datatype ", reduce::datatype_name(static_cast<coll_datatype_t>(b.dtype)), ", not ",
                reduce::datatype_name(static_cast<coll_datatype_t>(a.dtype))));
  if (a.op != b.op)
    add(str_cat("op ", reduce::redop_name(static_cast<coll_redop_t>(b.op)), ", not ",
                reduce::redop_name(static_cast<coll_redop_t>(a.op))));
  if (a.root != b.root) add(str_cat("root ", b.root, ", not ", a.root, " (modulo 8192)"));
  if (a.count != b.count) add(str_cat("count ", b.count, ", not ", a.count, " (modulo 65536)"));
  if (!out.empty()) return str_cat("it called ", collective_word(b.collective), " with ", out);
  const uint64_t mask = (uint64_t{1} << kTagCounterBits) - 1;
  if ((ours & mask) != (theirs & mask))
    return str_cat("the same operation, but its message #", theirs & mask, " met this rank's receive #", ours & mask,
                   ": the ranks chose different algorithms (is COLL_ALGO or COLL_CHUNK_BYTES the same everywhere?)");
  return "the same operation and message: the sizes differ (counts 65536 apart?)";
}

}  // namespace coll
