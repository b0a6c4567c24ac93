// Which mover this machine gets (mover.h).
#include "transport/nvlink/mover.h"

#include "base/config.h"
#include "base/error.h"

namespace coll::transport::nvlink {

std::unique_ptr<Mover> make_emulated_mover(int rank);
#ifdef COLL_WITH_CUDA
std::unique_ptr<Mover> make_cuda_mover(int rank);
std::string cuda_unavailable();
#endif

std::unique_ptr<Mover> make_mover(int rank) {
  if (config::get_bool("COLL_NVLINK_EMULATE")) return make_emulated_mover(rank);
#ifdef COLL_WITH_CUDA
  return make_cuda_mover(rank);
#else
  fail(Code::kSystem, "nvlink on rank ", rank, ": ", unavailable());
#endif
}

std::string unavailable() {
  if (config::get_bool("COLL_NVLINK_EMULATE")) return "";
#ifdef COLL_WITH_CUDA
  return cuda_unavailable();
#else
  return "this build has no CUDA (COLL_WITH_CUDA=OFF)";
#endif
}

}  // namespace coll::transport::nvlink
