// The ring allreduce schedule checked without any network: all ranks'
// programs are run symbolically, with every element carrying how many times
// each rank's input was folded into it. Checks that
// - sends and receives match, in order and in size (no deadlock, no leftovers);
// - every output element holds every rank's input exactly once (and, for
//   AVG, was divided exactly once) — so every byte is produced exactly once;
// - no two steps that touch the same bytes (one of them writing) can run
//   concurrently: dependencies order them.
#include "algorithms/partition.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/select.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <vector>

namespace coll::algo {
namespace {

// One element's symbolic value: contributions per rank, and divisions.
struct Value {
  std::vector<int> from;
  int divided = 0;
  bool garbage = false;  // never written
  bool operator==(const Value&) const = default;
};

struct Message {
  std::vector<Value> values;
  size_t bytes;
};

struct RankState {
  Schedule schedule;
  std::vector<Value> send, recv;  // per element; the same vector when in place
  std::vector<bool> done;
  std::map<int, size_t> next_send, next_recv;  // channel positions
};

struct Case {
  int nranks;
  size_t count;
  size_t elem_size;
  size_t chunk_bytes;
  bool in_place;
  bool average;
};

std::string name(const Case& c) {
  return "n=" + std::to_string(c.nranks) + " count=" + std::to_string(c.count) + " es=" + std::to_string(c.elem_size) +
         " chunk=" + std::to_string(c.chunk_bytes) + (c.in_place ? " in-place" : "") + (c.average ? " avg" : "");
}

std::vector<Value>& buffer(RankState& s, BufferId id, bool in_place) {
  return (id == BufferId::kSend && !in_place) ? s.send : s.recv;
}

// Channel order: the k-th send to p pairs with the k-th receive from us on p.
std::vector<uint32_t> channel(const Schedule& s, bool sends, int peer) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    bool is_send = st.kind == OpKind::kSend;
    bool is_recv = st.kind == OpKind::kRecv || st.kind == OpKind::kRecvReduce;
    if (st.peer == peer && ((sends && is_send) || (!sends && is_recv))) out.push_back(i);
  }
  return out;
}

void simulate(const Case& c) {
  SCOPED_TRACE(name(c));
  const int n = c.nranks;
  std::vector<RankState> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankState& s = ranks[static_cast<size_t>(r)];
    s.schedule = ring_allreduce({r, n, c.count, c.elem_size, c.in_place, c.average, c.chunk_bytes});
    s.done.assign(s.schedule.steps.size(), false);
    Value mine{std::vector<int>(static_cast<size_t>(n), 0), 0, false};
    mine.from[static_cast<size_t>(r)] = 1;
    s.send.assign(c.count, mine);
    s.recv.assign(c.count, Value{std::vector<int>(static_cast<size_t>(n), 0), 0, true});
    if (c.in_place) s.recv = s.send;
  }
  std::map<std::pair<int, int>, std::deque<Message>> wires;  // (from, to)

  auto elems = [&](const Step& st) { return st.bytes / c.elem_size; };
  auto first = [&](const Region& reg) { return reg.offset / c.elem_size; };

  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      RankState& s = ranks[static_cast<size_t>(r)];
      for (uint32_t i = 0; i < s.schedule.steps.size(); ++i) {
        if (s.done[i]) continue;
        const Step& st = s.schedule.steps[i];
        bool ready = true;
        for (uint32_t d : st.deps) ready = ready && s.done[d];
        if (!ready) continue;
        if (st.kind == OpKind::kSend) {
          auto ch = channel(s.schedule, true, st.peer);
          if (ch[s.next_send[st.peer]] != i) continue;
          auto& src = buffer(s, st.src.buffer, c.in_place);
          Message m{std::vector<Value>(src.begin() + first(st.src), src.begin() + first(st.src) + elems(st)), st.bytes};
          wires[{r, st.peer}].push_back(std::move(m));
          ++s.next_send[st.peer];
        } else if (st.kind == OpKind::kRecv || st.kind == OpKind::kRecvReduce) {
          auto ch = channel(s.schedule, false, st.peer);
          if (ch[s.next_recv[st.peer]] != i) continue;
          auto& wire = wires[{st.peer, r}];
          if (wire.empty()) continue;
          Message m = std::move(wire.front());
          wire.pop_front();
          ASSERT_EQ(m.bytes, st.bytes) << "rank " << r << " step " << i << ": size mismatch with rank " << st.peer;
          auto& dst = buffer(s, st.dst.buffer, c.in_place);
          for (size_t e = 0; e < elems(st); ++e) {
            Value v = m.values[e];
            if (st.kind == OpKind::kRecvReduce) {
              const Value& local = buffer(s, st.src.buffer, c.in_place)[first(st.src) + e];
              for (int k = 0; k < n; ++k) v.from[static_cast<size_t>(k)] += local.from[static_cast<size_t>(k)];
              v.garbage = v.garbage || local.garbage;
              v.divided += local.divided;
            }
            dst[first(st.dst) + e] = v;
          }
          ++s.next_recv[st.peer];
        } else if (st.kind == OpKind::kCopy) {
          auto& src = buffer(s, st.src.buffer, c.in_place);
          auto& dst = buffer(s, st.dst.buffer, c.in_place);
          for (size_t e = 0; e < elems(st); ++e) dst[first(st.dst) + e] = src[first(st.src) + e];
        } else {
          auto& dst = buffer(s, st.dst.buffer, c.in_place);
          for (size_t e = 0; e < elems(st); ++e) ++dst[first(st.dst) + e].divided;
        }
        s.done[i] = true;
        progress = true;
      }
    }
  }

  for (int r = 0; r < n; ++r) {
    RankState& s = ranks[static_cast<size_t>(r)];
    for (size_t i = 0; i < s.done.size(); ++i)
      ASSERT_TRUE(s.done[i]) << "rank " << r << " step " << i << " never ran (deadlock)\n" << to_string(s.schedule);
    Value want{std::vector<int>(static_cast<size_t>(n), 1), c.average && n > 1 ? 1 : 0, false};
    for (size_t e = 0; e < c.count; ++e) ASSERT_EQ(s.recv[e], want) << "rank " << r << " element " << e;
  }
  for (auto& [ends, wire] : wires)
    EXPECT_TRUE(wire.empty()) << "messages left on " << ends.first << "->" << ends.second;
}

// Steps touching overlapping bytes, one writing, must be ordered by deps.
void check_no_races(const Case& c) {
  SCOPED_TRACE(name(c));
  for (int r = 0; r < c.nranks; ++r) {
    Schedule s = ring_allreduce({r, c.nranks, c.count, c.elem_size, c.in_place, c.average, c.chunk_bytes});
    const size_t m = s.steps.size();
    std::vector<std::vector<bool>> before(m, std::vector<bool>(m, false));  // before[j][i]: i precedes j
    for (size_t j = 0; j < m; ++j)
      for (uint32_t d : s.steps[j].deps) {
        before[j][d] = true;
        for (size_t k = 0; k < m; ++k)
          if (before[d][k]) before[j][k] = true;
      }
    struct Access {
      int buffer;
      size_t lo, hi;
      bool write;
    };
    auto accesses = [&](const Step& st) {
      auto buf = [&](BufferId b) { return (b == BufferId::kSend && !c.in_place) ? 0 : 1; };
      std::vector<Access> out;
      switch (st.kind) {
        case OpKind::kSend:
          out.push_back({buf(st.src.buffer), st.src.offset, st.src.offset + st.bytes, false});
          break;
        case OpKind::kRecv:
          out.push_back({buf(st.dst.buffer), st.dst.offset, st.dst.offset + st.bytes, true});
          break;
        case OpKind::kRecvReduce:
        case OpKind::kCopy:
          out.push_back({buf(st.src.buffer), st.src.offset, st.src.offset + st.bytes, false});
          out.push_back({buf(st.dst.buffer), st.dst.offset, st.dst.offset + st.bytes, true});
          break;
        case OpKind::kDivide:
          out.push_back({buf(st.dst.buffer), st.dst.offset, st.dst.offset + st.bytes, true});
          break;
      }
      return out;
    };
    for (size_t i = 0; i < m; ++i)
      for (size_t j = i + 1; j < m; ++j)
        for (const Access& a : accesses(s.steps[i]))
          for (const Access& b : accesses(s.steps[j]))
            if (a.buffer == b.buffer && a.lo < b.hi && b.lo < a.hi && (a.write || b.write)) {
              ASSERT_TRUE(before[j][i]) << "rank " << r << ": steps " << i << " and " << j
                                        << " touch the same bytes unordered\n"
                                        << to_string(s);
            }
  }
}

TEST(RingSchedule, EveryElementReducedExactlyOnceAndPeersMatch) {
  for (int n : {1, 2, 3, 4, 5, 7, 8})
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t(n - 1 > 0 ? n - 1 : 1), size_t(n), size_t(n + 1),
                         size_t{7}, size_t{100}, size_t{1023}})
      for (size_t chunk : {size_t{4}, size_t{12}, size_t{1} << 20})
        for (bool in_place : {false, true})
          for (bool avg : {false, true}) {
            Case c{n, count, 4, chunk, in_place, avg};
            simulate(c);
            if (::testing::Test::HasFatalFailure()) return;
          }
}

TEST(RingSchedule, DependenciesOrderEveryConflictingAccess) {
  for (int n : {2, 3, 4, 5})
    for (size_t count : {size_t{1}, size_t{7}, size_t{61}})
      for (size_t chunk : {size_t{8}, size_t{1} << 20})
        for (bool in_place : {false, true})
          for (bool avg : {false, true}) {
            check_no_races({n, count, 8, chunk, in_place, avg});
            if (::testing::Test::HasFatalFailure()) return;
          }
}

TEST(RingSchedule, ShapeOfTheRing) {
  // Two ranks, two elements, no chunking: one reduce-scatter and one allgather step.
  Schedule s = ring_allreduce({0, 2, 2, 4, false, false, 1 << 20});
  ASSERT_EQ(s.steps.size(), 4u) << to_string(s);
  EXPECT_EQ(s.steps[0].kind, OpKind::kSend);
  EXPECT_EQ(s.steps[1].kind, OpKind::kRecvReduce);
  EXPECT_EQ(s.steps[2].kind, OpKind::kSend);
  EXPECT_EQ(s.steps[3].kind, OpKind::kRecv);
  EXPECT_EQ(s.peers(), (std::vector<int>{1}));
  EXPECT_NE(to_string(s).find("recv-reduce from 1"), std::string::npos) << to_string(s);
  // One rank out of place is a single copy; in place it is nothing.
  EXPECT_EQ(ring_allreduce({0, 1, 5, 4, false, false, 64}).steps.size(), 1u);
  EXPECT_EQ(ring_allreduce({0, 1, 5, 4, true, true, 64}).steps.size(), 0u);
}

TEST(Partition, BlocksCoverTheBufferAndDifferByAtMostOne) {
  for (int n : {1, 2, 3, 7})
    for (size_t count : {0, 1, 6, 7, 8, 1000}) {
      size_t next = 0;
      for (int b = 0; b < n; ++b) {
        Span s = block_span(count, n, b);
        EXPECT_EQ(s.offset, next);
        EXPECT_LE(s.count, count / static_cast<size_t>(n) + 1);
        EXPECT_GE(s.count, count / static_cast<size_t>(n));
        next += s.count;
      }
      EXPECT_EQ(next, count);
    }
  EXPECT_EQ(ring_peer_after(3, 4), 0);
  EXPECT_EQ(ring_peer_before(0, 4), 3);
  EXPECT_EQ(wrap(-5, 4), 3);
  EXPECT_EQ(chunk_count(10, 3), 4u);
  EXPECT_EQ(chunk_span({100, 10}, 3, 3).count, 1u);
}

TEST(Select, AlgorithmSettingIsParsedStrictly) {
  EXPECT_NO_THROW(check_algorithm_setting(""));
  EXPECT_NO_THROW(check_algorithm_setting("ring"));
  EXPECT_NO_THROW(check_algorithm_setting("allreduce:ring"));
  EXPECT_THROW(check_algorithm_setting("tree"), Error);
  EXPECT_THROW(check_algorithm_setting("allreduce:tree"), Error);
  EXPECT_THROW(check_algorithm_setting("alltoall:ring"), Error);
  EXPECT_EQ(allreduce_algorithm("allreduce:ring"), "ring");
}

}  // namespace
}  // namespace coll::algo
