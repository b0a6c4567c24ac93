#include "bootstrap/mpi_bootstrap.h"

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"

#ifdef COLL_WITH_MPI
#include <mpi.h>

#include <cstdlib>
#endif

namespace coll::bootstrap {

#ifdef COLL_WITH_MPI
namespace {
void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

UniqueId mpi_share_unique_id(int rank, int nranks) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      fail(Code::kSystem, "MPI_Init_thread failed");
    std::atexit(finalize_mpi);  // we initialised MPI, so we finalise it
  }
  int world_rank = -1, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_rank != rank || world_size != nranks)
    fail(Code::kInvalidUsage, "MPI_COMM_WORLD says rank ", world_rank, " of ", world_size,
         " but the launcher's variables say rank ", rank, " of ", nranks);
  coll_unique_id_t raw{};
  if (rank == 0) raw = create_unique_id().encode();
  if (MPI_Bcast(&raw, sizeof(raw), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    fail(Code::kSystem, "MPI_Bcast of the unique id failed");
  log::info(log::kLaunch, "unique id received by MPI_Bcast");
  return UniqueId::decode(raw);
}
#else
UniqueId mpi_share_unique_id(int, int) { fail(Code::kInvalidUsage, "coll was built without MPI (COLL_WITH_MPI=OFF)"); }
#endif

}  // namespace coll::bootstrap
