// Every algorithm's schedules checked without any network. All ranks'
// programs run symbolically: each element carries which ranks' inputs were
// folded into it (and how often), which element of the origin it came from,
// and how often it was divided. Checked, for every collective x algorithm x
// rank count x count x chunk size x in place x AVG x root:
// - sends and receives pair up, in order and in size, and nothing deadlocks
//   even when a send completes only once its receiver has taken it (TCP
//   past its buffers, shared memory's single copy);
// - every output element holds exactly the right inputs, each exactly once,
//   from the right position — so every byte is produced exactly once;
// - no two steps that touch the same bytes (one writing) can run concurrently.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "algorithms/select.h"
#include "base/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <vector>

namespace coll::algo {
namespace {

struct Value {
  std::vector<int> from;  // contributions per rank
  int64_t index = -1;     // element index at the origin; -2: mixed up
  int divided = 0;
  bool garbage = true;  // never written
  bool operator==(const Value&) const = default;
};

Value combine(Value a, const Value& b) {
  for (size_t k = 0; k < a.from.size(); ++k) a.from[k] += b.from[k];
  a.index = a.index == b.index ? a.index : -2;
  a.divided += b.divided;
  a.garbage = a.garbage || b.garbage;
  return a;
}

struct Case {
  Collective collective;
  std::string algorithm;
  int n;
  size_t count;
  size_t chunk_bytes;
  bool in_place;
  bool average;
  int root;
  std::vector<int> ring_order = {};  // empty: 0..n-1
  std::vector<int> node_of = {};     // empty: one node
};

std::string name(const Case& c) {
  std::string order;
  for (int r : c.ring_order) order += (order.empty() ? " ring=" : ",") + std::to_string(r);
  return std::string(collective_name(c.collective)) + "/" + c.algorithm + " n=" + std::to_string(c.n) +
         " count=" + std::to_string(c.count) + " chunk=" + std::to_string(c.chunk_bytes) +
         (c.in_place ? " in-place" : "") + (c.average ? " avg" : "") + " root=" + std::to_string(c.root) + order;
}

constexpr size_t kEs = 4;

size_t send_elems(const Case& c) {
  switch (c.collective) {
    case Collective::kBroadcast:
      return 0;
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
      return c.count * static_cast<size_t>(c.n);
    default:
      return c.count;
  }
}
size_t recv_elems(const Case& c) {
  switch (c.collective) {
    case Collective::kAllgather:
    case Collective::kAlltoall:
      return c.count * static_cast<size_t>(c.n);
    default:
      return c.count;
  }
}
std::optional<int64_t> send_offset(const Case& c, int r) {
  if (c.collective == Collective::kBroadcast) return 0;
  if (!c.in_place) return std::nullopt;
  int64_t block = static_cast<int64_t>(c.count * kEs) * r;
  if (c.collective == Collective::kAllgather) return block;
  if (c.collective == Collective::kReduceScatter) return -block;
  return 0;
}

// One rank's memory: send and recv, possibly one array (in place), and scratch.
struct RankState {
  Schedule schedule;
  std::vector<Value> unified, send_own, scratch;
  int64_t recv_base = 0, send_base = 0;
  bool aliased = false;
  std::vector<bool> done, posted;
  std::map<int, size_t> next_send, next_recv;

  Value& at(BufferId b, size_t elem) {
    if (b == BufferId::kScratch) return scratch.at(elem);
    if (b == BufferId::kSend && !aliased) return send_own.at(elem);
    return unified.at(static_cast<size_t>((b == BufferId::kSend ? send_base : recv_base) + static_cast<int64_t>(elem)));
  }
};

Schedule build(const Case& c, int r) {
  CollShape shape;
  shape.collective = c.collective;
  shape.rank = r;
  shape.nranks = c.n;
  shape.count = c.count;
  shape.elem_size = kEs;
  shape.root = c.root;
  shape.average = c.average;
  shape.send_offset = send_offset(c, r);
  shape.chunk_bytes = c.chunk_bytes;
  shape.ring_order = c.ring_order;
  shape.spread_order = c.ring_order;  // any permutation: the schedules must be right in every order
  shape.node_of = c.node_of;
  return build_schedule(find_algorithm(c.collective, c.algorithm), shape);
}

std::vector<uint32_t> channel(const Schedule& s, bool sends, int peer) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    bool is_send = st.kind == OpKind::kSend, is_recv = st.kind == OpKind::kRecv || st.kind == OpKind::kRecvReduce;
    if (st.peer == peer && ((sends && is_send) || (!sends && is_recv))) out.push_back(i);
  }
  return out;
}

void simulate(const Case& c) {
  SCOPED_TRACE(name(c));
  const int n = c.n;
  const Value empty{std::vector<int>(static_cast<size_t>(n), 0), -1, 0, true};
  std::vector<RankState> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankState& s = ranks[static_cast<size_t>(r)];
    s.schedule = build(c, r);
    s.done.assign(s.schedule.steps.size(), false);
    s.posted.assign(s.schedule.steps.size(), false);
    auto off = send_offset(c, r);
    s.aliased = off.has_value();
    int64_t so = off ? *off / static_cast<int64_t>(kEs) : 0;
    s.recv_base = so < 0 ? -so : 0;
    s.send_base = s.recv_base + so;
    size_t size = static_cast<size_t>(std::max<int64_t>(s.recv_base + static_cast<int64_t>(recv_elems(c)),
                                                        s.send_base + static_cast<int64_t>(send_elems(c))));
    s.unified.assign(size, empty);
    s.send_own.assign(s.aliased ? 0 : send_elems(c), empty);
    s.scratch.assign(s.schedule.scratch_bytes / kEs, empty);
    // Inputs: element j of rank r's input is {from r, index j}.
    for (size_t j = 0; j < send_elems(c); ++j) {
      Value v = empty;
      v.from[static_cast<size_t>(r)] = 1;
      v.index = static_cast<int64_t>(j);
      v.garbage = false;
      s.at(BufferId::kSend, j) = v;
    }
    if (c.collective == Collective::kBroadcast && r == c.root)
      for (size_t j = 0; j < c.count; ++j) {
        Value v = empty;
        v.from[static_cast<size_t>(r)] = 1;
        v.index = static_cast<int64_t>(j);
        v.garbage = false;
        s.at(BufferId::kRecv, j) = v;
      }
  }
  struct Message {
    std::vector<Value> values;
    size_t bytes;
    int from;
    uint32_t step;
  };
  std::map<std::pair<int, int>, std::deque<Message>> wires;
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
        const size_t elems = st.bytes / kEs, src = st.src.offset / kEs, dst = st.dst.offset / kEs;
        if (st.kind == OpKind::kSend) {
          if (s.posted[i]) continue;  // waiting for the receiver
          if (channel(s.schedule, true, st.peer)[s.next_send[st.peer]] != i) continue;
          Message m{{}, st.bytes, r, i};
          for (size_t e = 0; e < elems; ++e) m.values.push_back(s.at(st.src.buffer, src + e));
          wires[{r, st.peer}].push_back(std::move(m));
          ++s.next_send[st.peer];
          s.posted[i] = true;
          progress = true;
          continue;  // done only when received: the strictest transport (rendezvous)
        } else if (st.kind == OpKind::kRecv || st.kind == OpKind::kRecvReduce) {
          if (channel(s.schedule, false, st.peer)[s.next_recv[st.peer]] != i) continue;
          auto& wire = wires[{st.peer, r}];
          if (wire.empty()) continue;
          Message m = std::move(wire.front());
          wire.pop_front();
          ASSERT_EQ(m.bytes, st.bytes) << "rank " << r << " step " << i << ": size mismatch with rank " << st.peer;
          ranks[static_cast<size_t>(m.from)].done[m.step] = true;  // the sender's step completes now
          for (size_t e = 0; e < elems; ++e)
            s.at(st.dst.buffer, dst + e) =
                st.kind == OpKind::kRecv ? m.values[e] : combine(s.at(st.src.buffer, src + e), m.values[e]);
          ++s.next_recv[st.peer];
        } else if (st.kind == OpKind::kCopy) {
          std::vector<Value> tmp;
          for (size_t e = 0; e < elems; ++e) tmp.push_back(s.at(st.src.buffer, src + e));
          for (size_t e = 0; e < elems; ++e) s.at(st.dst.buffer, dst + e) = tmp[e];
        } else if (st.kind == OpKind::kReduce) {
          for (size_t e = 0; e < elems; ++e)
            s.at(st.dst.buffer, dst + e) = combine(s.at(st.dst.buffer, dst + e), s.at(st.src.buffer, src + e));
        } else {
          for (size_t e = 0; e < elems; ++e) ++s.at(st.dst.buffer, dst + e).divided;
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
  }
  for (auto& [ends, wire] : wires)
    EXPECT_TRUE(wire.empty()) << "messages left on " << ends.first << "->" << ends.second;

  // What each output element must be.
  auto all = [&](int64_t index) {
    Value v{std::vector<int>(static_cast<size_t>(n), 1), index, c.average && n > 1 ? 1 : 0, false};
    return v;
  };
  auto one = [&](int from, int64_t index) {
    Value v{std::vector<int>(static_cast<size_t>(n), 0), index, 0, false};
    v.from[static_cast<size_t>(from)] = 1;
    return v;
  };
  for (int r = 0; r < n; ++r) {
    RankState& s = ranks[static_cast<size_t>(r)];
    const auto cnt = static_cast<int64_t>(c.count);
    for (size_t e = 0; e < recv_elems(c); ++e) {
      const auto i = static_cast<int64_t>(e);
      Value want;
      switch (c.collective) {
        case Collective::kAllreduce:
          want = all(i);
          break;
        case Collective::kReduce:
          if (r != c.root) continue;
          want = all(i);
          break;
        case Collective::kBroadcast:
          want = one(c.root, i);
          break;
        case Collective::kAllgather:
          want = one(static_cast<int>(i / cnt), i % cnt);
          break;
        case Collective::kReduceScatter:
          want = all(r * cnt + i);
          break;
        case Collective::kAlltoall:
          want = one(static_cast<int>(i / cnt), r * cnt + i % cnt);
          break;
        default:
          continue;
      }
      ASSERT_EQ(s.at(BufferId::kRecv, e), want) << "rank " << r << " output element " << e << "\n"
                                                << to_string(s.schedule);
    }
  }
}

// Steps touching overlapping bytes, one writing, must be ordered by dependencies.
void check_no_races(const Case& c) {
  SCOPED_TRACE(name(c));
  for (int r = 0; r < c.n; ++r) {
    Schedule s = build(c, r);
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
      int64_t lo, hi;
      bool write;
    };
    auto off = send_offset(c, r);
    auto place = [&](const Region& reg, size_t bytes, bool write) {
      int buf = reg.buffer == BufferId::kScratch ? 2 : (reg.buffer == BufferId::kSend && !off) ? 0 : 1;
      int64_t lo = static_cast<int64_t>(reg.offset) + (reg.buffer == BufferId::kSend && off ? *off : 0);
      return Access{buf, lo, lo + static_cast<int64_t>(bytes), write};
    };
    auto accesses = [&](const Step& st) {
      std::vector<Access> out;
      if (st.kind == OpKind::kSend || st.kind == OpKind::kRecvReduce || st.kind == OpKind::kCopy ||
          st.kind == OpKind::kReduce)
        out.push_back(place(st.src, st.bytes, false));
      if (st.kind != OpKind::kSend) out.push_back(place(st.dst, st.bytes, true));
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

bool reduces(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}
bool rooted(Collective c) { return c == Collective::kBroadcast || c == Collective::kReduce; }
bool skipped(Collective c) { return c == Collective::kSend || c == Collective::kRecv || c == Collective::kBarrier; }

TEST(Schedules, EveryAlgorithmProducesEveryElementExactlyOnce) {
  for (const Algorithm& a : all_algorithms()) {
    if (skipped(a.collective)) continue;
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8})
      for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t(n + 1), size_t{7}, size_t{33}})
        for (size_t chunk : {kEs, 3 * kEs, size_t{1} << 20})
          for (bool in_place : {false, true})
            for (bool avg : {false, true}) {
              if (avg && !reduces(a.collective)) continue;
              for (int root : {0, n - 1, n / 2}) {
                if (!rooted(a.collective) && root != 0) continue;
                simulate({a.collective, a.name, n, count, chunk, in_place, avg, root});
                if (::testing::Test::HasFatalFailure()) return;
              }
            }
  }
}

// Rings and halving-doubling in any order of ranks (the communicator
// groups them by node, or spreads them over nodes): reversed, evens then
// odds (an interleaved launcher's placement regrouped), rotated.
TEST(Schedules, InAnyRankOrderEveryElementArrivesExactlyOnce) {
  for (const Algorithm& a : all_algorithms()) {
    if (skipped(a.collective) || (std::string(a.name) != "ring" && std::string(a.name) != "halving_doubling")) continue;
    for (int n : {2, 3, 4, 5, 8}) {
      std::vector<int> reversed, interleaved, rotated;
      for (int r = n - 1; r >= 0; --r) reversed.push_back(r);
      for (int r = 0; r < n; r += 2) interleaved.push_back(r);
      for (int r = 1; r < n; r += 2) interleaved.push_back(r);
      for (int r = 0; r < n; ++r) rotated.push_back((r + 1) % n);
      for (const auto& order : {reversed, interleaved, rotated})
        for (size_t count : {size_t{1}, size_t(n + 1), size_t{33}})
          for (bool in_place : {false, true})
            for (int root : {0, n - 1}) {
              if (!rooted(a.collective) && root != 0) continue;
              Case c{a.collective, a.name, n, count, 3 * kEs, in_place, reduces(a.collective), root, order};
              simulate(c);
              check_no_races(c);
              if (::testing::Test::HasFatalFailure()) return;
            }
    }
  }
}

// The hierarchical allreduce and the tree across nodes (chains inside) on
// nodes in blocks, interleaved, of 1 rank, of all ranks, and unequal
// (where the hierarchical one is the ring).
TEST(Schedules, HierarchicalAndTreeOnEveryNodeLayout) {
  const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1},
                                                 {0, 1, 0, 1},
                                                 {0, 1, 2, 3},
                                                 {0, 0, 0, 0},
                                                 {0, 0, 1, 1, 2, 2},
                                                 {0, 1, 2, 0, 1, 2},
                                                 {0, 0, 0, 1, 1, 1, 2, 2, 2},
                                                 {0, 0, 0, 1, 1},
                                                 {0, 1, 1, 0, 2, 3, 3, 2}};
  for (const auto& nodes : layouts) {
    const int n = static_cast<int>(nodes.size());
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t(n + 1), size_t{37}})
      for (size_t chunk : {kEs, 3 * kEs, size_t{1} << 20})
        for (bool in_place : {false, true})
          for (bool avg : {false, true})
            for (const char* algorithm : {"hierarchical", "tree"}) {
              Case c{Collective::kAllreduce, algorithm, n, count, chunk, in_place, avg, 0, {}, nodes};
              simulate(c);
              check_no_races(c);
              if (::testing::Test::HasFatalFailure()) return;
            }
  }
  CollShape shape{Collective::kAllreduce, 0, 4, 1 << 20, 4};
  shape.node_of = {0, 1, 0, 1};
  EXPECT_EQ(ranks_per_node(shape), 2);
  Schedule s = hierarchical_allreduce(shape);
  EXPECT_EQ(s.peers(), (std::vector<int>{1, 2})) << "its node's other rank and its rail's";
  shape.node_of = {0, 0, 0, 1};
  EXPECT_EQ(ranks_per_node(shape), 0);
  EXPECT_EQ(hierarchical_allreduce(shape).algorithm, "ring") << "unequal nodes have no rails";
}

TEST(Schedules, DependenciesOrderEveryConflictingAccess) {
  for (const Algorithm& a : all_algorithms()) {
    if (skipped(a.collective)) continue;
    for (int n : {2, 3, 4, 5, 8})
      for (size_t count : {size_t{1}, size_t{7}, size_t{29}})
        for (size_t chunk : {2 * kEs, size_t{1} << 20})
          for (bool in_place : {false, true})
            for (int root : {0, n - 1}) {
              if (!rooted(a.collective) && root != 0) continue;
              check_no_races({a.collective, a.name, n, count, chunk, in_place, reduces(a.collective), root});
              if (::testing::Test::HasFatalFailure()) return;
            }
  }
}

TEST(Schedules, BarrierAndPointToPointPairUp) {
  for (int n : {1, 2, 3, 5, 8}) {
    std::vector<Schedule> s;
    for (int r = 0; r < n; ++r) s.push_back(dissemination_barrier({Collective::kBarrier, r, n}));
    // Every send to p has a matching receive from us on p, same count.
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        EXPECT_EQ(channel(s[static_cast<size_t>(r)], true, p).size(),
                  channel(s[static_cast<size_t>(p)], false, r).size())
            << "n=" << n << " " << r << "->" << p;
    size_t rounds = 0;
    while ((size_t{1} << rounds) < static_cast<size_t>(n)) ++rounds;
    EXPECT_EQ(s[0].steps.size(), 2 * rounds);
  }
  CollShape shape{Collective::kSend, 0, 2, 5, 4, 1};
  Schedule send = p2p_send(shape);
  ASSERT_EQ(send.steps.size(), 1u);
  EXPECT_EQ(send.steps[0].peer, 1);
  EXPECT_EQ(send.steps[0].bytes, 20u);
}

// What a barrier is for: no rank leaves before every rank has arrived. A
// step's knowledge is the set of ranks whose arrival happens before it: its
// own rank's, its dependencies', and for a receive its matching send's. At
// the end of its schedule, every rank must know of every rank.
TEST(Schedules, TheBarrierLetsNoRankLeaveBeforeAllArrived) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<Schedule> s;
    for (int r = 0; r < n; ++r) s.push_back(dissemination_barrier({Collective::kBarrier, r, n}));
    std::vector<std::vector<uint64_t>> know(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) know[static_cast<size_t>(r)].assign(s[static_cast<size_t>(r)].steps.size(), 1ull << r);
    for (bool changed = true; changed;) {
      changed = false;
      for (int r = 0; r < n; ++r) {
        const Schedule& mine = s[static_cast<size_t>(r)];
        for (uint32_t i = 0; i < mine.steps.size(); ++i) {
          const Step& st = mine.steps[i];
          uint64_t k = know[static_cast<size_t>(r)][i];
          for (uint32_t d : st.deps) k |= know[static_cast<size_t>(r)][d];
          if (st.kind == OpKind::kRecv) {
            const std::vector<uint32_t> recvs = channel(mine, false, st.peer);
            const std::vector<uint32_t> sends = channel(s[static_cast<size_t>(st.peer)], true, r);
            const size_t nth = static_cast<size_t>(std::find(recvs.begin(), recvs.end(), i) - recvs.begin());
            ASSERT_LT(nth, sends.size()) << "n=" << n << " rank " << r;
            k |= know[static_cast<size_t>(st.peer)][sends[nth]];
          }
          if (k != know[static_cast<size_t>(r)][i]) know[static_cast<size_t>(r)][i] = k, changed = true;
        }
      }
    }
    const uint64_t all = n == 64 ? ~0ull : (1ull << n) - 1;
    for (int r = 0; r < n; ++r) {
      uint64_t at_exit = 1ull << r;
      for (uint64_t k : know[static_cast<size_t>(r)]) at_exit |= k;
      EXPECT_EQ(at_exit, all) << "n=" << n << ": rank " << r << " leaves knowing only of ranks (bits) " << at_exit;
    }
  }
}

// The direct-access allreduce's slices: together every element once, in
// order, each starting on a 64-byte line (but the empty ones at the end).
TEST(Partition, LineSpansCoverEverythingInWholeLines) {
  for (size_t es : {1, 2, 4, 8})
    for (int n : {1, 2, 3, 5, 8})
      for (size_t count : {0, 1, 15, 16, 17, 100, 1023, 4099}) {
        size_t next = 0;
        for (int b = 0; b < n; ++b) {
          const Span s = line_span(count, es, n, b);
          EXPECT_EQ(s.offset, next) << "es=" << es << " n=" << n << " count=" << count << " block " << b;
          if (s.count > 0) EXPECT_EQ(s.offset * es % 64, 0u) << "es=" << es << " n=" << n << " block " << b;
          next = s.offset + s.count;
        }
        EXPECT_EQ(next, count) << "es=" << es << " n=" << n;
      }
}

TEST(Schedules, ShapeOfTheRing) {
  // Two ranks, two elements, no chunking: one reduce-scatter and one allgather step.
  Schedule s = ring_allreduce({Collective::kAllreduce, 0, 2, 2, 4, 0, false, std::nullopt, 1 << 20});
  ASSERT_EQ(s.steps.size(), 4u) << to_string(s);
  EXPECT_EQ(s.steps[0].kind, OpKind::kSend);
  EXPECT_EQ(s.steps[1].kind, OpKind::kRecvReduce);
  EXPECT_EQ(s.steps[2].kind, OpKind::kSend);
  EXPECT_EQ(s.steps[3].kind, OpKind::kRecv);
  EXPECT_EQ(s.peers(), (std::vector<int>{1}));
  EXPECT_NE(to_string(s).find("recv-reduce from 1"), std::string::npos) << to_string(s);
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
  const std::vector<int> launcher, by_node = {0, 2, 1, 3};
  EXPECT_EQ(Ring(3, 4, launcher).next(), 0);
  EXPECT_EQ(Ring(0, 4, launcher).prev(), 3);
  EXPECT_EQ(Ring(2, 4, by_node).position(), 1);
  EXPECT_EQ(Ring(2, 4, by_node).next(), 1);
  EXPECT_EQ(Ring(0, 4, by_node).prev(), 3);
  EXPECT_EQ(Ring(3, 4, by_node).next(), 0);
  EXPECT_EQ(Ring(0, 4, by_node).position_of(1), 2);
  EXPECT_EQ(wrap(-5, 4), 3);
  EXPECT_EQ(chunk_count(10, 3), 4u);
  EXPECT_EQ(chunk_span({100, 10}, 3, 3).count, 1u);
  EXPECT_EQ(power_of_two_floor(7), 4);
}

// The double binary tree: each tree spans all ranks, parent and child links
// agree, and no rank is an inner node of both trees (Sanders et al.).
// Trees across nodes: each is a tree over all ranks (every rank reaches the
// root, parents and children agree), a node's ranks form a chain, and only
// chain heads have links to other nodes.
TEST(Partition, NodeTreesAreTreesWithChainsInsideNodes) {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}, {0, 1, 2, 3, 4}, {0, 0, 0, 1, 1}};
  for (const auto& nodes : layouts) {
    const int n = static_cast<int>(nodes.size());
    for (int which = 0; which < 2; ++which) {
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        TreeLinks t = node_tree(nodes, r, which);
        if (t.parent < 0)
          ++roots;
        else {
          TreeLinks p = node_tree(nodes, t.parent, which);
          EXPECT_TRUE(std::count(std::begin(p.children), std::end(p.children), r) == 1)
              << "rank " << r << "'s parent " << t.parent << " does not list it (tree " << which << ")";
        }
        int crossing = 0;
        for (int link : {t.parent, t.children[0], t.children[1], t.children[2]})
          crossing += link >= 0 && nodes[static_cast<size_t>(link)] != nodes[static_cast<size_t>(r)];
        if (crossing > 0) {
          int first = -1;  // the head: first of its node in chain order
          for (int q = 0; q < n; ++q)
            if (nodes[static_cast<size_t>(q)] == nodes[static_cast<size_t>(r)] && (first < 0 || which == 1)) first = q;
          EXPECT_EQ(r, first) << "only a chain's head links to other nodes (tree " << which << ")";
        }
        int depth = 0;  // reaches the root
        for (int q = r; node_tree(nodes, q, which).parent >= 0 && depth <= n; ++depth)
          q = node_tree(nodes, q, which).parent;
        EXPECT_LE(depth, n) << "rank " << r << " is in a cycle";
      }
      EXPECT_EQ(roots, 1);
    }
  }
}

TEST(Partition, DoubleBinaryTreesAreTreesWithDisjointInnerNodes) {
  for (int n = 1; n <= 40; ++n) {
    for (int which = 0; which < 2; ++which) {
      int roots = 0;
      for (int v = 0; v < n; ++v) {
        TreeLinks t = double_tree(n, v, which);
        if (t.parent < 0)
          ++roots;
        else {
          TreeLinks p = double_tree(n, t.parent, which);
          EXPECT_TRUE(p.children[0] == v || p.children[1] == v) << "n=" << n << " tree " << which << " v=" << v;
        }
        for (int child : t.children)
          if (child >= 0) {
            EXPECT_EQ(double_tree(n, child, which).parent, v) << "n=" << n << " v=" << v;
          }
        // Following parents reaches the root: no cycles.
        int steps = 0;
        for (int u = v; u >= 0 && steps <= n; u = double_tree(n, u, which).parent) ++steps;
        EXPECT_LE(steps, n) << "n=" << n << " v=" << v;
      }
      EXPECT_EQ(roots, 1) << "n=" << n << " tree " << which;
    }
    for (int v = 0; v < n; ++v) {
      auto inner = [&](int which) { return double_tree(n, v, which).children[0] >= 0; };
      EXPECT_FALSE(inner(0) && inner(1)) << "n=" << n << ": rank " << v << " is inner in both trees";
    }
  }
}

// Link classes are data: any names the transports supply.
CostModel two_links() {
  CostModel m;
  m.links["net"] = LinkModel{15.0, 0.63, 0.1, 512 << 10, false};
  m.links["node"] = LinkModel{2.7, 0.29, 0.1, 128 << 10, true};
  return m;
}

TEST(Select, AlgorithmSettingIsParsedStrictly) {
  CostModel m = two_links();
  EXPECT_NO_THROW(Selector("", m));
  EXPECT_NO_THROW(Selector("ring", m));
  EXPECT_NO_THROW(Selector("allreduce:tree;broadcast:ring", m));
  EXPECT_THROW(Selector("nosuch", m), Error);
  EXPECT_THROW(Selector("allreduce:nosuch", m), Error);
  EXPECT_THROW(Selector("alltoall:ring", m), Error);
  EXPECT_THROW(Selector("gather:ring", m), Error);
  // A global name that a collective lacks is an error when that collective runs.
  Selector tree("tree", m);
  CollShape shape{Collective::kAlltoall, 0, 4, 100, 4};
  EXPECT_THROW(tree.choose(shape), Error);
  shape.collective = Collective::kAllreduce;
  EXPECT_STREQ(tree.choose(shape).name, "tree");
  EXPECT_THROW(tree.set_link_class("ib"), Error) << "a class the model lacks";
}

TEST(Select, TheCostModelPicksLatencyOrBandwidthAlgorithms) {
  CostModel m = two_links();
  m.apply("net.alpha_us = 30\nnet.beta_ns_per_byte = 1\nnet.gamma_ns_per_byte = 0.25\n", "t");
  Selector s("", m);
  s.set_link_class("net");
  CollShape tiny{Collective::kAllreduce, 0, 8, 2, 4};
  CollShape huge{Collective::kAllreduce, 0, 8, 16 << 20, 4};
  std::string small_pick = s.choose(tiny).name, large_pick = s.choose(huge).name;
  EXPECT_NE(small_pick, "direct") << "the direct allreduce is for ranks of one node";
  s.set_link_class("node");
  EXPECT_STREQ(s.choose(tiny).name, "direct") << "on one node, one step beats log2(n)";
  EXPECT_TRUE(small_pick == "recursive_doubling" || small_pick == "tree") << small_pick;
  EXPECT_TRUE(large_pick == "ring" || large_pick == "halving_doubling") << large_pick;
}

TEST(Select, RanksThatShareTheirNodesLinkAreSeenToShareIt) {
  // 2 nodes of 2 ranks, 1 Gbit/s between them (8 ns/B), 64 MiB.
  CostModel m = two_links();
  m.apply("net.beta_ns_per_byte = 8\n", "t");
  CollShape shape{Collective::kAllreduce, 0, 4, 16 << 20, 4};
  shape.node_of = {0, 0, 1, 1};
  shape.node_link = m.link("node");
  const double S = 64 << 20;
  const auto cost = [&](const CostModel& model, const char* name) {
    return find_algorithm(Collective::kAllreduce, name).cost(shape, model.link("net"));
  };
  // A link per rank: the hierarchical allreduce sends S/2 a rank between nodes, the tree S, both ways in turn.
  Selector own("", m);
  own.set_link_class("net");
  EXPECT_STREQ(own.choose(shape).name, "hierarchical");
  EXPECT_NEAR(cost(m, "tree"), 2 * 2 * 15e-6 + S * 2 * 8e-9 + S * 0.1e-9, 1e-9);
  // One link a node (the emulated cluster's): each node sends S either way, and the tree overlaps its
  // reduction and broadcast on it where the others add their phases inside the node.
  m.apply("net.node_beta_ns_per_byte = 8\n", "t");
  Selector shared("", m);
  shared.set_link_class("net");
  EXPECT_STREQ(shared.choose(shape).name, "tree");
  EXPECT_NEAR(cost(m, "tree"), 2 * 2 * 15e-6 + S * 8e-9 + S * 0.1e-9, 1e-9);
  const double across = S / 2;  // each rank's bytes between nodes, hierarchical and halving-doubling alike
  const double inside = 2 * 2.7e-6 + S / 2 * (2 * 0.29e-9 + 0.1e-9);
  EXPECT_NEAR(cost(m, "hierarchical"), inside + 2 * 15e-6 + 2 * across * 8e-9 + across / 2 * 0.1e-9, 1e-9);
  EXPECT_NEAR(cost(m, "halving_doubling"), inside + 2 * 15e-6 + 2 * across * 8e-9 + across / 2 * 0.1e-9, 1e-9);
  // The ring crosses once each way a node, as before.
  EXPECT_NEAR(cost(m, "ring"), 6 * 15e-6 + 0.75 * S * (2 * 8e-9 + 0.1e-9), 1e-9);
}

// With a cache, the selector prices an allreduce at the beta of what the
// node's ranks hold: 2 S each (buffer_bytes), 8 ranks here (no node layout:
// all on one). A cache that holds all of it picks as a link at the cache's
// beta would; one that holds a single rank's 2 S holds 1/8 of the node's,
// and picks as a link at 0.01/8 + 7/8 ns/B would.
TEST(Select, ACacheIsPricedForWhatTheNodesRanksHold) {
  const auto pick = [](const std::string& tuning, const CollShape& shape) {
    CostModel m = two_links();
    m.apply("node.alpha_us = 3\nnode.beta_ns_per_byte = 1\n" + tuning, "t");
    Selector s("", m);
    s.set_link_class("node");
    return std::string(s.choose(shape).name);
  };
  int fast_differs = 0, share_differs = 0;
  for (size_t count = 64; count <= (size_t{1} << 24); count *= 2) {
    const CollShape shape{Collective::kAllreduce, 0, 8, count, 4};
    const std::string fast = pick("node.beta_ns_per_byte = 0.01\n", shape);
    const std::string eighth = pick("node.beta_ns_per_byte = 0.87625\n", shape);
    EXPECT_EQ(pick("node.cache_bytes = 1e12\nnode.cache_beta_ns_per_byte = 0.01\n", shape), fast) << count;
    const std::string one_rank =
        str_cat("node.cache_bytes = ", 2 * count * 4, "\nnode.cache_beta_ns_per_byte = 0.01\n");
    EXPECT_EQ(pick(one_rank, shape), eighth) << count;
    fast_differs += fast != pick("", shape);
    share_differs += fast != eighth;
  }
  // Else the checks above could not fail.
  EXPECT_GT(fast_differs, 0);
  EXPECT_GT(share_differs, 0);
}

TEST(Select, TuningTextOverridesTheLinksPresentOnly) {
  CostModel m = two_links();
  EXPECT_THROW(m.apply("net.alpha = 3", "f"), Error);
  EXPECT_THROW(m.apply("net.alpha_us 3", "f"), Error);
  try {
    m.apply("\nib.alpha_us = 3", "tuning.txt");
    ADD_FAILURE() << "a class the model lacks was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tuning.txt:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("classes net, node"), std::string::npos) << e.what();
  }
  m.apply("# comment\nnode.beta_ns_per_byte = 0.5 # half\nnet.chunk_bytes = 65536", "f");
  EXPECT_DOUBLE_EQ(m.link("node").beta_ns_per_byte, 0.5);
  EXPECT_DOUBLE_EQ(m.link("net").chunk_bytes, 65536);
  EXPECT_DOUBLE_EQ(m.link("net").alpha_us, 15.0) << "untouched";
  EXPECT_THROW(m.apply("node.chunk_bytes = 8", "f"), Error);
  EXPECT_THROW(m.apply("node.alpha_us = -1", "f"), Error);
  // A machine's file names transports a job may not use: theirs are passed over, others still refused.
  m.apply("ib.alpha_us = 3\nnode.node_beta_ns_per_byte = 0.1\nnode.cache_bytes = 4096", "f", {"ib", "tcp"});
  EXPECT_DOUBLE_EQ(m.link("node").node_beta_ns_per_byte, 0.1);
  EXPECT_DOUBLE_EQ(m.link("node").cache_bytes, 4096);
  EXPECT_THROW(m.apply("ibx.alpha_us = 3", "f", {"ib"}), Error);
}

}  // namespace
}  // namespace coll::algo
