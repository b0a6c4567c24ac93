// The steps of the ranks a simulation runs (every rank, or each class's
// representative under a symmetry), numbered rank by rank, with what each
// waits for and which step each message pairs with (engine.cc).
#pragma once

#include "algorithms/schedule.h"
#include "sim/symmetry.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace coll::sim {

inline bool is_send(algo::OpKind k) { return k == algo::OpKind::kSend; }
inline bool is_recv(algo::OpKind k) { return k == algo::OpKind::kRecv || k == algo::OpKind::kRecvReduce; }

struct Program {
  std::vector<int> rank;      // rank[u]: the rank unit u runs (its class's representative)
  std::vector<size_t> first;  // first[u]: the id of unit u's step 0
  std::vector<const algo::Step*> step;
  std::vector<int> unit_of;
  std::vector<std::vector<size_t>> dependents;
  std::vector<uint32_t> waiting;  // dependencies not yet done
  std::vector<size_t> partner;    // a receive's send; a send's (first) receive
  // A send's further receives: where one class's send delivers to two alike ranks' (pair_messages).
  std::multimap<size_t, size_t> also_delivers;

  // kInvalidArgument names the first message whose ends do not pair up (in
  // number or size).
  Program(const std::vector<algo::Schedule>& schedules, const Symmetry& sym);

  int rank_of(size_t id) const { return rank[static_cast<size_t>(unit_of[id])]; }
  int step_index(size_t id) const { return static_cast<int>(id - first[static_cast<size_t>(unit_of[id])]); }

 private:
  void pair_messages(const std::vector<algo::Schedule>& schedules, const Symmetry& sym);
};

}  // namespace coll::sim
