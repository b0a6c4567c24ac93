// The transports every transport-level test runs over, and how a
// communicator is told to use only one of them.
#pragma once

#include "transport/registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace coll::testing {

// Every transport the conformance suite and the fault trials run over:
// every one in the registry (transport/registry.cc), so a new transport
// joins both by registering, and "shm_cma": shared memory with single copy
// on, so messages of 256 KiB and more are read with process_vm_readv.
//
// "nvlink_emulated": the nvlink transport with its GPU emulated
// (COLL_NVLINK_EMULATE=1), so that its protocol is held to the suite on
// machines without one (where host memory plays device memory, so it
// carries every message, as shm would).
//
// A transport that cannot run on this machine (ib without a verbs device)
// is left out, and said so on stderr; COLLTEST_REQUIRE_TRANSPORTS=ib (the
// rxe tests set it) makes that a failure instead, so that a run meant for
// it never passes without it.
inline std::vector<std::string> transports_under_test() {
  std::vector<std::string> out;
  const char* required = std::getenv("COLLTEST_REQUIRE_TRANSPORTS");
  for (const transport::Entry& e : transport::registered()) {
    // It moves device buffers only: tests/gpu/nvlink_test.cc holds it to
    // the contract on a GPU, and "nvlink_emulated" (below) here.
    if (std::string(e.name) == "nvlink") continue;
    const std::string why = e.unavailable ? e.unavailable() : std::string();
    if (why.empty()) {
      out.push_back(e.name);
      continue;
    }
    // A list: "ib" or "ib,tcp".
    if (required != nullptr &&
        (std::string(",") + required + ",").find(std::string(",") + e.name + ",") != std::string::npos) {
      std::fprintf(stderr, "transport %s is required (COLLTEST_REQUIRE_TRANSPORTS) but cannot run: %s\n", e.name,
                   why.c_str());
      std::abort();
    }
    std::fprintf(stderr, "[ note ] transport %s left out of these tests: %s\n", e.name, why.c_str());
  }
  out.push_back("shm_cma");
  out.push_back("nvlink_emulated");
  return out;
}
inline const std::vector<std::string> kTransportsUnderTest = transports_under_test();

// Those of `names` that can run on this machine (an instantiation over
// none of them has no tests).
inline std::vector<std::string> runnable(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names)
    for (const std::string& t : kTransportsUnderTest)
      if (n == t) out.push_back(n);
  return out;
}

// The settings that make a communicator use only that transport.
// "shm_direct" and "shm_staged" (communicator-level trials only, not
// transports of their own): shared memory with COLL_SHM_MAPPED=1, so that
// allreduces on coll_mem_alloc buffers take the direct-access path; and with
// COLL_SHM_STAGED_BYTES=64K, so that allreduces of 64 KiB and more on private
// buffers take its staged form. "shm_oneshot": with COLL_SHM_ONESHOT_BYTES
// at the whole board, so that allreduces of up to 4072 bytes run one-shot.
inline std::map<std::string, std::string> transport_env(const std::string& kind) {
  if (kind == "nvlink_emulated") return {{"COLL_TRANSPORTS", "nvlink"}, {"COLL_NVLINK_EMULATE", "1"}};
  if (kind == "shm_cma") return {{"COLL_TRANSPORTS", "shm"}, {"COLL_SHM_SINGLE_COPY", "1"}};
  if (kind == "shm_direct") return {{"COLL_TRANSPORTS", "shm"}, {"COLL_SHM_MAPPED", "1"}};
  if (kind == "shm_staged") return {{"COLL_TRANSPORTS", "shm"}, {"COLL_SHM_STAGED_BYTES", "64K"}};
  if (kind == "shm_oneshot") return {{"COLL_TRANSPORTS", "shm"}, {"COLL_SHM_ONESHOT_BYTES", "4072"}};
  return {{"COLL_TRANSPORTS", kind}};
}

}  // namespace coll::testing
