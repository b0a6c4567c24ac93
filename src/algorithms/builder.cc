#include "algorithms/builder.h"

#include <algorithm>
#include <limits>

namespace coll::algo {

// Offsets in the shared in-place memory are shifted by this much, so that an
// input that starts before the output still has non-negative coordinates.
constexpr size_t kAliasBase = size_t{1} << 62;

ScheduleBuilder::ScheduleBuilder(std::string algorithm, size_t elem_size, std::optional<int64_t> send_offset,
                                 size_t scratch_bytes) {
  schedule_.algorithm = std::move(algorithm);
  schedule_.elem_size = elem_size;
  schedule_.send_offset = send_offset;
  schedule_.scratch_bytes = scratch_bytes;
  for (Memory* m : {&recv_, &send_, &scratch_}) (*m)[0] = Segment{std::numeric_limits<size_t>::max(), -1, {}};
}

ScheduleBuilder::Memory& ScheduleBuilder::memory_of(Region& region) {
  switch (region.buffer) {
    case BufferId::kScratch:
      return scratch_;
    case BufferId::kRecv:
      region.offset += kAliasBase;
      return recv_;
    case BufferId::kSend:
      if (!schedule_.send_offset) return send_;
      region = Region{BufferId::kRecv, region.offset + kAliasBase + static_cast<size_t>(*schedule_.send_offset)};
      return recv_;  // the same memory
  }
  return recv_;
}

// Makes `at` a segment boundary.
void ScheduleBuilder::split(Memory& memory, size_t at) {
  auto it = memory.upper_bound(at);
  --it;  // the segment containing `at`
  if (it->first == at) return;
  Segment right = it->second;
  it->second.end = at;
  memory[at] = right;
}

void ScheduleBuilder::access(Region region, size_t bytes, bool write, uint32_t step, std::vector<uint32_t>& deps) {
  if (bytes == 0) return;
  Memory& memory = memory_of(region);
  const size_t lo = region.offset, hi = region.offset + bytes;
  split(memory, lo);
  split(memory, hi);
  for (auto it = memory.find(lo); it != memory.end() && it->first < hi; ++it) {
    Segment& seg = it->second;
    if (seg.writer >= 0) deps.push_back(static_cast<uint32_t>(seg.writer));
    if (write) {
      deps.insert(deps.end(), seg.readers.begin(), seg.readers.end());
      seg.writer = step;
      seg.readers.clear();
    } else {
      seg.readers.push_back(step);
    }
  }
}

uint32_t ScheduleBuilder::add(Step step, std::vector<std::pair<Region, bool>> accesses) {
  const auto index = static_cast<uint32_t>(schedule_.steps.size());
  std::vector<uint32_t> deps;
  for (auto& [region, write] : accesses) access(region, step.bytes, write, index, deps);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  deps.erase(std::remove(deps.begin(), deps.end(), index), deps.end());  // reading and writing the same bytes
  step.deps = std::move(deps);
  schedule_.steps.push_back(std::move(step));
  return index;
}

uint32_t ScheduleBuilder::send(int peer, Region src, size_t bytes) {
  return add(Step{OpKind::kSend, peer, src, {}, bytes, {}}, {{src, false}});
}

uint32_t ScheduleBuilder::recv(int peer, Region dst, size_t bytes) {
  return add(Step{OpKind::kRecv, peer, {}, dst, bytes, {}}, {{dst, true}});
}

uint32_t ScheduleBuilder::recv_reduce(int peer, Region src, Region dst, size_t bytes, bool received_first) {
  return add(Step{OpKind::kRecvReduce, peer, src, dst, bytes, {}, received_first}, {{src, false}, {dst, true}});
}

uint32_t ScheduleBuilder::copy(Region src, Region dst, size_t bytes) {
  return add(Step{OpKind::kCopy, -1, src, dst, bytes, {}}, {{src, false}, {dst, true}});
}

uint32_t ScheduleBuilder::reduce(Region src, Region dst, size_t bytes) {
  return add(Step{OpKind::kReduce, -1, src, dst, bytes, {}}, {{src, false}, {dst, true}});
}

uint32_t ScheduleBuilder::divide(Region dst, size_t bytes) {
  return add(Step{OpKind::kDivide, -1, {}, dst, bytes, {}}, {{dst, true}});
}

void ScheduleBuilder::order(uint32_t earlier, uint32_t later) {
  auto& deps = schedule_.steps[later].deps;
  if (std::find(deps.begin(), deps.end(), earlier) == deps.end()) deps.push_back(earlier);
}

}  // namespace coll::algo
