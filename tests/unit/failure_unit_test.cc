// The parts of failure handling that need no processes: operation
// signatures in tags, and the flight recorder's dump.
#include "core/flight_recorder.h"
#include "core/op_signature.h"

#include <gtest/gtest.h>

#include <string>

namespace coll {
namespace {

using algo::Collective;

uint64_t tag(Collective c, coll_datatype_t t, coll_redop_t op, int root, size_t count, uint64_t counter = 7) {
  return make_tag(signature_of(c, t, op, root, count).bits(), counter);
}

TEST(OpSignature, WhatDoesNotMatterIsCleared) {
  // send and recv meet; their "root" is the peer, which differs by design.
  EXPECT_EQ(tag(Collective::kSend, COLL_INT8, COLL_SUM, 3, 10), tag(Collective::kRecv, COLL_INT8, COLL_MAX, 1, 10));
  // A broadcast reduces nothing: the op passed does not matter; its root does.
  EXPECT_EQ(tag(Collective::kBroadcast, COLL_FLOAT32, COLL_SUM, 1, 5),
            tag(Collective::kBroadcast, COLL_FLOAT32, COLL_MAX, 1, 5));
  EXPECT_NE(tag(Collective::kBroadcast, COLL_FLOAT32, COLL_SUM, 1, 5),
            tag(Collective::kBroadcast, COLL_FLOAT32, COLL_SUM, 2, 5));
  // An allreduce has no root.
  EXPECT_EQ(tag(Collective::kAllreduce, COLL_FLOAT32, COLL_SUM, 0, 5),
            tag(Collective::kAllreduce, COLL_FLOAT32, COLL_SUM, 4, 5));
  // The counter keeps its low 24 bits.
  EXPECT_EQ(make_tag(0, (uint64_t{1} << 24) + 5), make_tag(0, 5));
}

TEST(OpSignature, EachDifferenceIsNamed) {
  const uint64_t ours = tag(Collective::kAllreduce, COLL_FLOAT32, COLL_SUM, 0, 1000);
  EXPECT_EQ(describe_mismatch(ours, tag(Collective::kBroadcast, COLL_FLOAT32, COLL_SUM, 0, 1000)),
            "it called broadcast where this rank called allreduce");
  EXPECT_EQ(
      describe_mismatch(ours, tag(Collective::kAllreduce, COLL_INT32, COLL_MAX, 0, 999)),
      "it called allreduce with datatype int32, not float32; op max, not sum; count 999, not 1000 (modulo 65536)");
  EXPECT_EQ(describe_mismatch(tag(Collective::kReduce, COLL_FLOAT64, COLL_MIN, 2, 1),
                              tag(Collective::kReduce, COLL_FLOAT64, COLL_MIN, 5, 1)),
            "it called reduce with root 5, not 2 (modulo 8192)");
  EXPECT_EQ(describe_mismatch(tag(Collective::kSend, COLL_UINT8, COLL_SUM, 0, 3),
                              tag(Collective::kAllgather, COLL_UINT8, COLL_SUM, 0, 3)),
            "it called allgather where this rank called send/recv");
  EXPECT_NE(describe_mismatch(ours, make_tag(ours >> kTagCounterBits, 9)).find("different algorithms"),
            std::string::npos);
  // One rank took the direct-access path (its offers' alltoall), the other the plan.
  for (const auto& [a, b] : {std::pair{Collective::kAllreduce, Collective::kAlltoall},
                             std::pair{Collective::kAlltoall, Collective::kAllreduce}})
    EXPECT_NE(describe_mismatch(tag(a, COLL_FLOAT32, COLL_SUM, 0, 8), tag(b, COLL_UINT8, COLL_SUM, 0, 120))
                  .find("COLL_SHM_STAGED_BYTES the same everywhere?"),
              std::string::npos);
}

TEST(FlightRecorder, KeepsTheLastOperationsInItsDump) {
  FlightRecorder recorder(2, 4, "job1", "nodeA");
  for (uint64_t seq = 1; seq <= FlightRecorder::kEntries + 3; ++seq) {
    OpRecord& r = recorder.begin(seq, "allreduce", 1024, COLL_FLOAT32, COLL_SUM, 0, 1, 12, "ring");
    r.steps_done = 12;
    recorder.end(r, nullptr);
  }
  OpRecord& last = recorder.begin(FlightRecorder::kEntries + 4, "broadcast", 8, COLL_INT64, COLL_SUM, 3, 1, 6, "tree");
  last.steps_done = 2;
  recorder.waiting_on(last, "1,3");
  const std::string text = recorder.text("test");
  EXPECT_EQ(text.rfind("coll-flight-recorder 1\ncomm=job1 rank=2 nranks=4 host=nodeA", 0), 0u) << text;
  EXPECT_EQ(text.find("op seq=4 "), std::string::npos) << "the oldest were overwritten";
  EXPECT_NE(text.find("op seq=5 collective=allreduce count=1024 dtype=float32 op=sum root=0 jobs=1 algorithm=ring "
                      "steps=12 done=12 state=done"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("op seq=68 collective=broadcast count=8 dtype=int64 op=sum root=3 jobs=1 algorithm=tree steps=6 "
                      "done=2 state=running"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("waiting_on=1,3 error=\"\"\n"), std::string::npos) << text;
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 2 + FlightRecorder::kEntries);
}

}  // namespace
}  // namespace coll
