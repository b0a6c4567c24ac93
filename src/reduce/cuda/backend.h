// The backend of CUDA device memory, in builds with COLL_WITH_CUDA.
#pragma once

#include "reduce/backend.h"

namespace coll::reduce::cuda {

const Backend& backend();

}  // namespace coll::reduce::cuda
