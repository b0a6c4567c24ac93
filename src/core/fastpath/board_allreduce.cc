// The one-shot allreduce, for a few bytes on one node: every rank posts its
// input on its board (transport.h, shm/segment.h), waits until every peer
// has posted its own, and reduces all the blocks, in rank order, into its
// output. On 2 ranks that is one cache line each way and no message: the
// plan's allreduce moves the same bytes through a ring slot, a doorbell and
// the executor's bookkeeping, which at 8 bytes cost more than the line.
// With more ranks than cores, every rank needs the scheduler once to post
// and once to read, where recursive doubling needs it once per round.
//
// Reading n - 1 blocks per rank is (n - 1) S bytes, so it pays only for
// small S: up to COLL_SHM_ONESHOT_BYTES, by default the whole board (4072
// bytes), where it still beat the plan at 2, 4 and 8 ranks (README).
// Every rank decides from the call alone (its size, the setting, one node,
// and not in a group: an allreduce in coll_group_start/end runs its plan,
// whatever else the group holds, which may differ from rank to rank), so
// all take it or none; a rank whose setting differs meets a peer that
// waits on the board while it waits for a message, and both fail with
// COLL_INVALID_USAGE (shm/board.cc) rather than at the timeout.
//
// A block stays on its board until its owner posts the round after next,
// which it can do only after every rank has posted the next round, that is,
// after every rank finished reading this one. A rank's own block is read
// from its input (see below), and in place from rank 2 on from a copy of
// it: the output, written from rank 0's block on, overwrites the input
// before the rank's own turn comes.
#include "base/config.h"
#include "core/comm.h"
#include "core/fastpath/fastpath.h"
#include "core/op_signature.h"
#include "reduce/reduce.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace coll {
namespace {

// Looks at the board before a wait that reads the clock, as the executor
// does at its transport (executor.cc).
constexpr int kLooksBeforeWait = 64;

class BoardAllreduce final : public FastPath {
 public:
  BoardAllreduce(FastPathHost& host, transport::Board& board, size_t max_bytes)
      : host_(host), board_(board), max_bytes_(max_bytes) {}

  const std::string& name() const override {
    static const std::string name = "board_allreduce";
    return name;
  }
  bool needs_plan() const override { return false; }
  bool takes(const OpRequest& op) const override {
    const size_t bytes = op.count * reduce::datatype_size(op.dtype);
    return bytes > 0 && bytes <= max_bytes_;
  }
  bool run(const Job& job, const Deadline& deadline, OpRecord& record) override;

 private:
  void wait_for_block(int r, uint32_t round, uint64_t tag, const Deadline& deadline, OpRecord& record);

  FastPathHost& host_;
  transport::Board& board_;
  size_t max_bytes_;
  std::vector<char> own_copy_;  // an in-place input, where the output overwrites it too early
};

// Waits until rank r has posted `round`, like the executor waits on its
// transport: looks first, then waits that read the clock, each bounded by
// the deadline and its cancellation (coll_comm_abort).
void BoardAllreduce::wait_for_block(int r, uint32_t round, uint64_t tag, const Deadline& deadline, OpRecord& record) {
  for (int looks = 0; !board_.wait(r, round, tag, looks < kLooksBeforeWait ? 0 : deadline.remaining_ms(100)); ++looks) {
    if (looks < kLooksBeforeWait) continue;
    const int rank = host_.host_rank();
    if (deadline.cancelled())
      fail(Code::kInvalidUsage, "rank ", rank, ": allreduce #", host_.host_seq(),
           " (board_allreduce) was aborted (coll_comm_abort)");
    if ((looks - kLooksBeforeWait) % 64 == 0) host_.flight_recorder().waiting_on(record, std::to_string(r));
    if (deadline.expired())
      fail(Code::kTimeout, "rank ", rank, ": allreduce #", host_.host_seq(), " (board_allreduce) timed out after ",
           deadline.budget_ms(), " ms (", deadline.setting(), ") waiting for rank ", r, "'s block on the board");
  }
}

bool BoardAllreduce::run(const Job& job, const Deadline& deadline, OpRecord& record) {
  const int rank = host_.host_rank(), nranks = host_.host_nranks();
  const uint64_t tag = make_tag(job.signature, 0);
  const size_t bytes = job.count * reduce::datatype_size(job.dtype);
  const uint32_t round = board_.post({tag, job.count, job.send}, bytes);
  for (int r : host_.others()) {
    wait_for_block(r, round, tag, deadline, record);
    const transport::Board::Block theirs = board_.block(r, round);
    if (theirs.tag != tag)
      fail(Code::kInvalidUsage, "rank ", rank, ": rank ", r,
           " called a different operation: ", describe_mismatch(tag, theirs.tag));
    if (theirs.count != job.count)
      fail(Code::kInvalidUsage, "rank ", rank, ": rank ", r, " called allreduce with count ", theirs.count, ", not ",
           job.count);
  }
  // Rank order, so every rank's result is the same bits. Our own block is
  // read from the input, which is in our cache, not from our board, whose
  // line has moved to the last peer that read it (a miss); in place from
  // rank 2 on, the output holds partial results by then, so from a copy of
  // the input.
  const void* own = job.send;
  if (job.recv == job.send && rank >= 2) {
    own_copy_.resize(bytes);
    std::memcpy(own_copy_.data(), job.send, bytes);
    own = own_copy_.data();
  }
  auto block = [&](int r) { return r == rank ? own : board_.block(r, round).data; };
  reduce::reduce(job.dtype, job.op, job.recv, block(0), block(1), job.count);
  for (int r = 2; r < nranks; ++r) reduce::reduce(job.dtype, job.op, job.recv, job.recv, block(r), job.count);
  if (job.op == COLL_AVG) reduce::divide(job.dtype, job.recv, job.count, nranks);
  return true;
}

}  // namespace

std::unique_ptr<FastPath> make_board_allreduce(FastPathHost& host) {
  const int64_t v = config::get_int("COLL_SHM_ONESHOT_BYTES");
  if (v < 0) fail(Code::kInvalidArgument, "COLL_SHM_ONESHOT_BYTES=", v, " must not be negative");
  transport::Board* board = host.links().board();
  if (board == nullptr || v == 0) return nullptr;
  return std::make_unique<BoardAllreduce>(host, *board, std::min(static_cast<size_t>(v), board->bytes()));
}

}  // namespace coll
