// The spinning gate kernel's launcher (gate.cu), callable from plain C++.
#pragma once

#include <cstdint>

namespace coll::staging {

// Holds `stream` until *flag - value >= 0 (wrapping, as cuStreamWaitValue32's
// GEQ). `flag` is a device pointer to host-mapped memory. Returns the
// cudaError_t of the launch.
int launch_gate(void* stream, const volatile uint32_t* flag, uint32_t value);

// Loads the gate kernel now, as reduce/cuda/kernels.h's load_kernels does
// the reductions: CUDA would load it at its first launch, and a load may
// wait for the whole context. Returns the cudaError_t.
int load_gate();

}  // namespace coll::staging
