// Builds a schedule step by step and derives every dependency from the
// bytes each step reads and writes, so that algorithms state only what moves
// where, in the order of the paper:
//   read after write, write after read, write after write -> a dependency.
// An algorithm can therefore not forget one; tests/unit/schedule_test.cc
// checks the result independently anyway.
#pragma once

#include "algorithms/schedule.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coll::algo {

class ScheduleBuilder {
 public:
  // send_offset: in place, the input's address minus the output's; the two
  // then count as one memory.
  ScheduleBuilder(std::string algorithm, size_t elem_size, std::optional<int64_t> send_offset,
                  size_t scratch_bytes = 0);

  void set_scratch_bytes(size_t bytes) { schedule_.scratch_bytes = bytes; }

  uint32_t send(int peer, Region src, size_t bytes);
  uint32_t recv(int peer, Region dst, size_t bytes);
  uint32_t recv_reduce(int peer, Region src, Region dst, size_t bytes, bool received_first = false);
  uint32_t copy(Region src, Region dst, size_t bytes);
  uint32_t reduce(Region src, Region dst, size_t bytes);  // dst = dst (op) src
  uint32_t divide(Region dst, size_t bytes);

  // Orders `later` after `earlier` beyond what the bytes imply (e.g. the
  // rounds of a barrier, whose messages carry no bytes).
  void order(uint32_t earlier, uint32_t later);

  size_t elem_size() const { return schedule_.elem_size; }
  Schedule finish() { return std::move(schedule_); }

 private:
  struct Segment {
    size_t end;
    int64_t writer = -1;
    std::vector<uint32_t> readers;
  };
  using Memory = std::map<size_t, Segment>;  // start -> segment, covering [0, inf)

  uint32_t add(Step step, std::vector<std::pair<Region, bool>> accesses);
  void access(Region region, size_t bytes, bool write, uint32_t step, std::vector<uint32_t>& deps);
  Memory& memory_of(Region& region);
  static void split(Memory& memory, size_t at);

  Schedule schedule_;
  Memory recv_, send_, scratch_;
};

}  // namespace coll::algo
