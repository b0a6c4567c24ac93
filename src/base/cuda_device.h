// The current CUDA device switched for a while (CUDA builds): kernels,
// streams and copies belong to the thread's current device, which on the
// progress thread, or on the caller's, need not be the buffers'. Used by the
// CUDA backend, the stager and the nvlink transport alike.
#pragma once

namespace coll {

// Makes `device` current on this thread while it lives, then the caller's
// device again; device < 0 changes nothing. Throws coll::Error (kSystem)
// when CUDA cannot tell or switch the device.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;  // to restore; -1: nothing was changed
};

}  // namespace coll
