// coll_comm_grow: new ranks join the members of a communicator, as NCCL's
// ncclCommGrow and MPI's dynamic processes. Rank 0 of the members holds an
// id from coll_get_unique_id (its process serves that job's store) and has
// given it to the new ranks by any means (a file, the launcher); it passes
// it to the members by a broadcast on the communicator. Then members and
// new ranks join one new communicator: the members keep their order, the
// new ranks follow. A spare that starts early waits in its
// coll_comm_init_rank until the members grow (its init timeout). Under a
// launcher that keeps spares (COLL_SPARES_DIR), rank 0 may pass no id:
// coll makes one and offers the seats to the spares (bootstrap/spares.h).
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/spares.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"
#include "core/test_hooks.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>

namespace coll {

void (*test_hooks::grow_broadcasting)() = nullptr;
void (*test_hooks::grow_joining)() = nullptr;

namespace {

// Rank 0's word to the members: the id, or that it has none (its own error
// says why), so that they fail at once rather than at their timeout; and
// whether spares took the seats (they close the growth with a barrier).
struct GrowWord {
  int32_t ok = 0;
  int32_t offered = 0;
  coll_unique_id_t id{};
};

// An id rank 0 made itself: the store it serves, and its offer to the
// launcher's spares. Unless the growth is committed, it failed, however it
// ended: the offer closes as failed first (a spare stops trying), then the
// store stops (nobody will say goodbye to it).
class Made {
 public:
  Made() = default;
  Made(const Made&) = delete;
  Made& operator=(const Made&) = delete;
  ~Made() { finish(false); }

  coll_unique_id_t make(int nranks, int nnew, int64_t timeout_ms) {
    spares_ = bootstrap::spares_dir();
    if (!spares_ && nnew > 0)
      fail(Code::kInvalidArgument,
           "comm_grow on rank 0: id is a null pointer (rank 0 passes the id from coll_get_unique_id that it gave the "
           "new ranks, or NULL where the launcher keeps spares: COLL_SPARES_DIR; the others may pass NULL)");
    hosted_ = bootstrap::host_unique_id();
    if (nnew > 0) offer_ = bootstrap::offer_seats(*spares_, hosted_.id, nranks + nnew, nranks, nnew, timeout_ms);
    return hosted_.id.encode();
  }
  bool offered() const { return offer_ >= 0; }
  void finish(bool joined) noexcept {
    if (finished_) return;
    finished_ = true;
    if (offer_ >= 0) bootstrap::close_offer(*spares_, offer_, joined);
    if (!joined) hosted_.stop();
  }

 private:
  bootstrap::HostedId hosted_;
  std::optional<std::string> spares_;
  int offer_ = -1;
  bool finished_ = false;
};

// The members' checks of nnew, then rank 0's word by a broadcast: the id
// (made here if rank 0 passed none) or that it has none.
GrowWord share_word(Communicator& comm, int nnew, const coll_unique_id_t* id, Made& made, int64_t timeout_ms) {
  const int rank = comm.rank(), nranks = comm.nranks();
  // Every member must grow by as many: one that differs fails them all.
  int64_t range[2] = {nnew, -int64_t{nnew}};
  const OpRequest agree_nnew{algo::Collective::kAllreduce, range, range, 2, COLL_INT64, COLL_MAX, 0};
  comm.run({&agree_nnew, 1});
  if (range[0] != -range[1])
    fail(Code::kInvalidArgument, "comm_grow on rank ", rank, ": nnew is ", nnew, " here but ranges from ", -range[1],
         " to ", range[0], " over the members; every member passes the same nnew");
  if (nnew < 0) fail(Code::kInvalidArgument, "comm_grow on rank ", rank, ": nnew ", nnew, " is negative");
  if (nnew > INT_MAX - nranks)
    fail(Code::kInvalidArgument, "comm_grow on rank ", rank, ": ", nranks, " + ", nnew, " ranks overflow an int");

  GrowWord word;
  std::optional<Error> why_not;
  if (rank == 0) {
    try {
      word.id = id != nullptr ? *id : made.make(nranks, nnew, timeout_ms);
      word.offered = made.offered();
      word.ok = 1;
    } catch (const Error& e) {
      why_not = e;
    }
  }
  if (test_hooks::grow_broadcasting != nullptr) test_hooks::grow_broadcasting();
  const OpRequest bcast{algo::Collective::kBroadcast, &word, &word, sizeof(word), COLL_UINT8, COLL_SUM, 0};
  comm.run({&bcast, 1});
  if (why_not) throw *why_not;
  if (word.ok == 0)
    fail(Code::kRemote, "comm_grow on rank ", rank, ": rank 0 has no id to grow with (its error says why)");
  return word;
}

}  // namespace

// Two agreements on comm keep the members together whatever fails: one
// that every member has the id (a live member that failed the checks or the
// broadcast, where a peer died, would leave the others waiting for it to
// join until the timeout), one that every member joined.
std::unique_ptr<Communicator> Communicator::grow(int nnew, const coll_unique_id_t* id) {
  Made made;
  GrowWord word;
  std::optional<Error> failed;
  try {
    word = share_word(*this, nnew, id, made, timeout_ms_);
  } catch (const Error& e) {
    failed = e;
  }
  if (agree(failed ? 0 : 1, nullptr) == 0) {
    if (failed) throw *failed;
    fail(Code::kRemote, "comm_grow on rank ", rank_,
         ": another member failed before joining (a rank died in the check of nnew or the broadcast of the id)");
  }
  log::info(log::kInit, "comm_grow: rank ", rank_, " of ", nranks_, " joins ", nnew, " new rank(s): ", nranks_ + nnew,
            " in all");
  if (test_hooks::grow_joining != nullptr) test_hooks::grow_joining();
  // Rank 0's process serves the store already: a refusal means it is gone.
  // A member found gone (its standby here refuses) fails the join at once;
  // a new rank that does not come, at the timeout.
  std::unique_ptr<Communicator> grown;
  try {
    grown = std::make_unique<Communicator>(nranks_ + nnew, bootstrap::UniqueId::decode(word.id), rank_, "", timeout_ms_,
                                           timeout_ms_, Store::kRunning,
                                           [this](int r) { return r < nranks_ && standby_gone(r); });
  } catch (const Error& e) {
    failed = e;
  }
  // A member that dies while the others join can leave some joined and
  // some not: they agree, here, that all did, or the growth fails on every
  // member (their new communicators closed, so the new ranks' calls fail),
  // and this communicator is left as it was, to be shrunk.
  if (agree(grown != nullptr, nullptr) == 0) {
    grown.reset();
    if (failed) throw *failed;
    fail(Code::kRemote, "comm_grow on rank ", rank_, ": another member could not join the new communicator");
  }
  // Spares wait for this barrier before they count themselves in.
  if (word.offered != 0) {
    const OpRequest barrier{algo::Collective::kBarrier};
    try {
      grown->run({&barrier, 1});
    } catch (const Error& e) {  // a rank died since: the next call finds it, as after any growth
      log::warn(log::kInit, "comm_grow on rank ", rank_, ": a rank failed as the growth closed: ", e.what());
    }
  }
  made.finish(true);
  return grown;
}

}  // namespace coll
