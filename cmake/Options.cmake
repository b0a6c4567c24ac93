# Optional parts: each COLL_WITH_* is AUTO (use it when found), ON (required)
# or OFF. The outcome of each is printed at configure time.
set(COLL_WITH_MPI AUTO CACHE STRING "MPI bootstrap under mpirun/srun (AUTO, ON, OFF)")
set(COLL_WITH_IB AUTO CACHE STRING "The verbs transport for InfiniBand and RoCE, src/transport/ib (AUTO, ON, OFF)")
set(COLL_WITH_CUDA AUTO CACHE STRING "CUDA device buffers (AUTO, ON, OFF)")
set(COLL_WITH_NCCL AUTO CACHE STRING "NCCL, for the nccl_perf peer benchmark; needs CUDA (AUTO, ON, OFF)")
set(COLL_WITH_GLOO AUTO CACHE STRING "Gloo, for the gloo_perf peer benchmark (AUTO, ON, OFF)")

# coll_resolve(NAME FOUND WHAT): turns AUTO into ON/OFF from FOUND; ON without FOUND is an error.
function(coll_resolve name found what)
  if(${name} STREQUAL "OFF")
    set(result OFF)
  elseif(${found})
    set(result ON)
  elseif(${name} STREQUAL "ON")
    message(FATAL_ERROR "${name}=ON but ${what} was not found")
  else()
    set(result OFF)
  endif()
  set(${name}_ENABLED ${result} PARENT_SCOPE)
  message(STATUS "coll: ${name} = ${result} (${what})")
endfunction()

# Required: the node's topology comes from hwloc (the live machine, hwloc XML)
# and libxml2 (NCCL topology files). scripts/install-deps.sh installs both.
find_package(PkgConfig)
if(PkgConfig_FOUND)
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
endif()
if(NOT HWLOC_FOUND)
  message(FATAL_ERROR "hwloc not found: install libhwloc-dev (scripts/install-deps.sh does)")
endif()
find_package(LibXml2)
if(NOT LibXml2_FOUND)
  message(FATAL_ERROR "libxml2 not found: install libxml2-dev (scripts/install-deps.sh does)")
endif()
message(STATUS "coll: hwloc ${HWLOC_VERSION}, libxml2 ${LIBXML2_VERSION_STRING} (topology)")

if(NOT COLL_WITH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
endif()
coll_resolve(COLL_WITH_MPI MPI_C_FOUND "MPI, libopenmpi-dev")

# The verbs transport needs rdma-core's headers only: libibverbs is loaded
# at run time (dlopen), never linked, so a machine without rdma-core runs the
# other transports as before.
find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
if(IBVERBS_INCLUDE_DIR)
  set(IBVERBS_FOUND TRUE)
else()
  set(IBVERBS_FOUND FALSE)
endif()
coll_resolve(COLL_WITH_IB IBVERBS_FOUND "verbs headers, libibverbs-dev")

if(NOT COLL_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
endif()
coll_resolve(COLL_WITH_CUDA CUDAToolkit_FOUND "CUDA toolkit, /usr/local/cuda")
# The kernels for sm_80 (A100) and sm_90 (H100, H200) as machine code, and as
# PTX for sm_90, which the driver compiles for newer devices.
if(COLL_WITH_CUDA_ENABLED)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
endif()

# NCCL ships inside the CUDA toolkit here (/usr/local/cuda/{include,lib64}) and
# has no CMake package: look for the header and library next to the toolkit's.
set(NCCL_FOUND FALSE)
if(COLL_WITH_CUDA_ENABLED AND NOT COLL_WITH_NCCL STREQUAL "OFF")
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    set(NCCL_FOUND TRUE)
  endif()
endif()
coll_resolve(COLL_WITH_NCCL NCCL_FOUND "NCCL with CUDA, nccl.h and libnccl.so")

# Debian's libgloo-dev installs a config exporting the target `gloo`; an
# install without it (built by hand, or an older package) still has the
# header and the library, so look for those too.
if(NOT COLL_WITH_GLOO STREQUAL "OFF")
  find_package(Gloo CONFIG QUIET)
  if(NOT TARGET gloo)
    find_library(GLOO_LIBRARY gloo)
    find_path(GLOO_INCLUDE_DIR gloo/config.h)
    if(GLOO_LIBRARY AND GLOO_INCLUDE_DIR)
      add_library(gloo UNKNOWN IMPORTED)
      set_target_properties(gloo PROPERTIES
        IMPORTED_LOCATION "${GLOO_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${GLOO_INCLUDE_DIR}")
    endif()
  endif()
endif()
if(TARGET gloo)
  set(GLOO_USABLE TRUE)
else()
  set(GLOO_USABLE FALSE)
endif()
coll_resolve(COLL_WITH_GLOO GLOO_USABLE "Gloo, libgloo-dev")
