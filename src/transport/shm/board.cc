// The board (segment.h): a small block per rank and round that every local
// peer reads in place, for the one-shot allreduce (core/fastpath/board_allreduce.cc). A
// reader waits on the writer's cell the way poll waits on a ring: a spin (or
// yields, with more ranks than cores), then a futex sleep on the cell's
// round, bounded so that a peer that died is noticed.
//
// A rank that waits for a block while the peer waits for something else
// (it called another operation) must not wait for its timeout: it fails as
// soon as it sees the peer's message in its ring (wait), and the
// peer, waiting in its own receive, sees the posted round it will never
// match (poll, through board_mismatch).
#include "base/error.h"
#include "transport/shm/shm_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace coll::transport::shm {

size_t ShmTransport::bytes() const { return set_up_ && !peers_.empty() ? kBoardBytes : 0; }

uint32_t ShmTransport::post(const Block& block, size_t bytes) {
  if (bytes > kBoardBytes)
    fail(Code::kInternal, "shm: rank ", rank_, " posts ", bytes, " bytes on a board of ", kBoardBytes);
  const uint32_t round = board_round_ + 1;  // wraps: 2^32 is even, so the cells keep taking turns
  BoardArea& board = own_.board();
  BoardCell& cell = board.cells[round & 1];
  cell.tag = block.tag;
  cell.count = block.count;
  if (bytes > 0) std::memcpy(cell.data, block.data, bytes);  // a 0-byte buffer may be null
  // Sequentially consistent, with the load of sleepers after it: a reader
  // that announced its sleep is woken, or saw the round before it slept.
  // (A release store is no faster: the store waits for the line either way.)
  cell.round.store(round, std::memory_order_seq_cst);
  board_round_ = round;
  if (board.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake(cell.round);
  return round;
}

bool ShmTransport::unread_message(const Peer& p) {
  const uint64_t tail = p.in_ring->tail.load(std::memory_order_relaxed);
  return p.in_slots[tail].seq.load(std::memory_order_acquire) == tail + 1;
}

bool ShmTransport::wait(int rank, uint32_t round, uint64_t want_tag, int timeout_ms) {
  Peer& p = peer(rank, "waits on the board of");
  BoardArea& board = p.segment.board();
  std::atomic<uint32_t>& posted = board.cells[round & 1].round;
  auto ready = [&] { return posted.load(std::memory_order_acquire) == round; };
  // A peer may post, finish the operation and close (abort, exit) between a
  // look that missed the round and a look at the peer: its round counts.
  // So the peer first, then the round, as poll does with the rings: a
  // round posted before the peer closed is seen by the look after.
  auto gone_without_posting = [&] { return !alive(p) && !ready(); };
  if (ready()) return true;
  if (timeout_ms == 0) {
    if (yield_) sched_yield();
    return false;
  }
  if (spin_until(timeout_ms, ready)) return true;
  // Every message the peer sent for earlier operations was taken by them:
  // one waiting now belongs to an operation this rank is not in, unless the
  // peer posted this round before it (and went on to its next operation).
  // So the ring first, then the round: a message seen means a round posted
  // before it is seen too.
  if (unread_message(p) && !ready())
    throw Mismatch(
        str_cat("rank ", rank_, ": ", name(p), " sent a message while this rank waits for its block on the board"),
        rank, p.in_slots[p.in_ring->tail.load(std::memory_order_relaxed)].tag, want_tag, true);
  if (gone_without_posting()) check_alive(p);  // one that closed or died before our sleep would wake nobody
  const uint32_t seen = posted.load(std::memory_order_acquire);
  board.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (seen != round && posted.load(std::memory_order_seq_cst) == seen)
    futex_wait(posted, seen, std::min(timeout_ms, kMaxSleepMs));
  board.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  if (ready()) return true;
  if (gone_without_posting()) check_alive(p);
  return ready();
}

Board::Block ShmTransport::block(int rank, uint32_t round) const {
  const int i = local_index(rank);
  const BoardArea& board = rank == rank_ ? own_.board() : peers_[static_cast<size_t>(i)].segment.board();
  const BoardCell& cell = board.cells[round & 1];
  return Block{cell.tag, cell.count, cell.data};
}

// A receive from `p` that can never complete: the peer posted the round
// after ours, so it finished every operation before it (their messages to
// us are all in our ring), and our ring from it is empty.
void ShmTransport::board_mismatch(Peer& p) const {
  const uint32_t next = board_round_ + 1;
  const BoardCell& cell = p.segment.board().cells[next & 1];
  if (cell.round.load(std::memory_order_acquire) != next || unread_message(p)) return;
  throw Mismatch(str_cat("rank ", rank_, ": ", name(p), " waits for this rank's block on the board"), p.rank, cell.tag,
                 p.recvs.front().tag, true);
}

}  // namespace coll::transport::shm
