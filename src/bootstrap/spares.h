// Hot spares: processes that wait to join a communicator by coll_comm_grow.
// A launcher (collrun --spares K, or a Slurm or torchrun job's extra
// processes) gives every process COLL_SPARES_DIR, a directory they share,
// and marks each spare with COLL_SPARE. There rank 0 of a growing
// communicator offers seats (its unique id, the new size and the new
// ranks), and each spare takes the first free seat.
#pragma once

#include "bootstrap/unique_id.h"

#include <optional>
#include <string>

namespace coll::bootstrap {

// COLL_SPARES_DIR, when the launcher set it.
std::optional<std::string> spares_dir();
// Whether the launcher marked this process as a spare (COLL_SPARE).
bool is_spare();

// Offers the seats of ranks [first, first + count) of a communicator of
// `nranks`, which join with `id`. Each offer has a file of its own,
// published whole (never overwritten), in order.
void offer_seats(const std::string& dir, const UniqueId& id, int nranks, int first, int count);

struct Seat {
  UniqueId id;
  int nranks = 0;
  int rank = -1;
};
// Waits, without limit (a spare waits until it is needed or ended), for an
// offer with a seat free, and takes it.
Seat take_seat(const std::string& dir);

}  // namespace coll::bootstrap
