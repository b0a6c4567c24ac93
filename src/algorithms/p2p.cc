// Point-to-point messages and the barrier.
//
//   send / recv: one message of the whole buffer to / from one peer.
//   barrier (dissemination; Hensgen, Finkel & Manber 1988): in round k =
//     0, 1, ... while 2^k < n, send an empty message to rank r + 2^k and wait
//     for one from rank r - 2^k. After ceil(log2 n) rounds every rank has
//     heard, transitively, from every other — provided a round's message
//     leaves only after every earlier round's has arrived: it carries all
//     that the rank has heard so far, not only the last round's news.
//
// Cost: send/recv alpha + S beta; barrier ceil(log2 n) alpha.
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/partition.h"

#include <vector>

namespace coll::algo {

Schedule p2p_send(const CollShape& shape) {
  ScheduleBuilder b("direct", shape.elem_size, std::nullopt);
  b.send(shape.root, {BufferId::kSend, 0}, shape.count * shape.elem_size);
  return b.finish();
}

Schedule p2p_recv(const CollShape& shape) {
  ScheduleBuilder b("direct", shape.elem_size, std::nullopt);
  b.recv(shape.root, {BufferId::kRecv, 0}, shape.count * shape.elem_size);
  return b.finish();
}

Schedule dissemination_barrier(const CollShape& shape) {
  const int n = shape.nranks, r = shape.rank;
  ScheduleBuilder b("dissemination", 1, std::nullopt);
  std::vector<uint32_t> heard;  // the receives of the rounds so far
  for (int d = 1; d < n; d *= 2) {
    uint32_t sent = b.send(wrap(r + d, n), {}, 0);
    for (uint32_t earlier : heard) b.order(earlier, sent);
    heard.push_back(b.recv(wrap(r - d, n), {}, 0));
  }
  return b.finish();
}

}  // namespace coll::algo
