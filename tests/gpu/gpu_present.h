// Whether this machine has a GPU, for the gpu tests to skip without one.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace coll::testing {

// Asked in a child process: CUDA initialised in the parent would not work
// in the ranks it forks.
inline bool gpu_present() {
  static const int present = [] {
    pid_t pid = fork();
    if (pid == 0) {
      int n = 0;
      _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
  }();
  return present == 1;
}

}  // namespace coll::testing

#define SKIP_WITHOUT_GPU()           \
  if (!coll::testing::gpu_present()) \
  GTEST_SKIP() << "no CUDA device here: the gpu tests run on a GPU machine, through bench/gpu/device_check.sh"
