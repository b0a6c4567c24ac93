// Hot spares: processes that wait to join a communicator by coll_comm_grow.
// A launcher (collrun --spares K, or a Slurm or torchrun job's extra
// processes) gives every process COLL_SPARES_DIR, a directory they share,
// and marks each spare with COLL_SPARE. There rank 0 of a growing
// communicator offers seats (its unique id, the new size and the new
// ranks), and each spare takes the first free seat.
#pragma once

#include "bootstrap/unique_id.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace coll::bootstrap {

// COLL_SPARES_DIR, when the launcher set it.
std::optional<std::string> spares_dir();
// Whether the launcher marked this process as a spare (COLL_SPARE).
bool is_spare();

// Offers the seats of ranks [first, first + count) of a communicator of
// `nranks`, which join with `id` within `timeout_ms` (the members' own:
// a spare whose growth failed is free again as soon as they are). Each
// offer has a file of its own, published whole (never overwritten), in
// order. Returns its number.
int offer_seats(const std::string& dir, const UniqueId& id, int nranks, int first, int count, int64_t timeout_ms);
// Closes offer `n`: the growth is over, so that no spare takes a seat in it
// later. The first word stands (rank 0's, or a spare's whose join failed).
// A launcher counts the seats of a failed offer as free: their spares wait
// again.
void close_offer(const std::string& dir, int n, bool joined) noexcept;

struct Seat {
  UniqueId id;
  int nranks = 0;
  int rank = -1;
  int first = 0;  // the offer's first rank
  int offer = -1;
  int64_t timeout_ms = 0;
};
// Waits, without limit (a spare waits until it is needed or ended), for an
// open offer with a seat free, and takes it. The seat's file names the
// spare (COLL_SPARE) from the moment it exists.
Seat take_seat(const std::string& dir);
// A spare whose join failed: closes the offer as failed and gives up the
// seat, so that a launcher counts it as waiting again.
void leave_seat(const std::string& dir, const Seat& seat) noexcept;

// The spares (by COLL_SPARE) that sit in seats of offers that did not
// fail. For launchers.
std::set<int> seated_spares(const std::string& dir);

}  // namespace coll::bootstrap
