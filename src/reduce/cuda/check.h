// For every file that calls the CUDA runtime: its errors as coll errors
// (kSystem), and the current device switched for a while.
#pragma once

namespace coll::reduce::cuda {

// Throws coll::Error naming `what` and the CUDA error unless `err` is 0
// (cudaSuccess).
void check(int err, const char* what);

// Makes `device` current on this thread while it lives, then the caller's
// device again; device < 0 changes nothing. (Kernels and streams belong to
// the current device, which on the progress thread is not the caller's.)
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;  // to restore; -1: nothing was changed
};

}  // namespace coll::reduce::cuda
