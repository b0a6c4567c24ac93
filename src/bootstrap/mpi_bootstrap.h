// The unique id travels by MPI_Bcast from world rank 0 (only in builds with
// COLL_WITH_MPI). MPI is initialised here if the program has not done it,
// and then finalised at exit.
#pragma once

#include "bootstrap/unique_id.h"

namespace coll::bootstrap {

UniqueId mpi_share_unique_id(int rank, int nranks);

}  // namespace coll::bootstrap
