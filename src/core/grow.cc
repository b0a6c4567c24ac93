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

#include <climits>

namespace coll {

std::unique_ptr<Communicator> Communicator::grow(int nnew, const coll_unique_id_t* id) {
  if (nnew < 0) fail(Code::kInvalidArgument, "comm_grow on rank ", rank_, ": nnew ", nnew, " is negative");
  if (nnew > INT_MAX - nranks_)
    fail(Code::kInvalidArgument, "comm_grow on rank ", rank_, ": ", nranks_, " + ", nnew, " ranks overflow an int");
  const std::optional<std::string> spares = bootstrap::spares_dir();
  if (rank_ == 0 && id == nullptr && !spares)
    fail(Code::kInvalidArgument,
         "comm_grow on rank 0: id is a null pointer (rank 0 passes the id from coll_get_unique_id that it gave the "
         "new ranks, or NULL where the launcher keeps spares: COLL_SPARES_DIR; the others may pass NULL)");
  coll_unique_id_t shared{};
  if (rank_ == 0 && id != nullptr) shared = *id;
  if (rank_ == 0 && id == nullptr) {  // the launcher's spares take the seats
    const bootstrap::UniqueId fresh = bootstrap::create_unique_id();
    if (nnew > 0) bootstrap::offer_seats(*spares, fresh, nranks_ + nnew, nranks_, nnew);
    shared = fresh.encode();
  }
  const OpRequest bcast{algo::Collective::kBroadcast, &shared, &shared, sizeof(shared), COLL_UINT8, COLL_SUM, 0};
  run({&bcast, 1});
  const bootstrap::UniqueId job = bootstrap::UniqueId::decode(shared);
  log::info(log::kInit, "comm_grow: rank ", rank_, " of ", nranks_, " joins ", nnew, " new rank(s): ", nranks_ + nnew,
            " in all");
  // A member that died before joining fails the growth on every other
  // member within the timeout; this communicator is left as it was.
  // Rank 0's process serves the store already: a refusal means it is gone.
  return std::make_unique<Communicator>(nranks_ + nnew, job, rank_, "", timeout_ms_, timeout_ms_, Store::kRunning);
}

}  // namespace coll
