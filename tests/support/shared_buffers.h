// Test helpers for coll_mem_alloc buffers: buffers inside a region, the
// mappings /proc/self/maps shows, and one allreduce checked exactly.
#pragma once

#include "reduce/reduce.h"
#include "reduce/reference.h"

#include <coll/coll.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace coll::testing {

// Mappings of the library's memfds named `name` in this process whose
// permissions start with `perms`.
inline int memfd_mappings(const std::string& name, const std::string& perms = "") {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("/memfd:" + name + " ") != std::string::npos &&
        line.compare(line.find(' ') + 1, perms.size(), perms) == 0)
      ++n;
  return n;
}

// Mappings of coll_mem_alloc memfds in this process: its own regions plus
// the peers' regions it mapped. `perms` keeps those whose permissions start
// so: "rw" for its own and the peers' it writes into (direct access), "r-"
// for the peers' it only reads.
inline int coll_mem_mappings(const std::string& perms = "") { return memfd_mappings("coll-mem", perms); }

// Mappings of staged-allreduce stagings (core/direct_access.cc): its own
// and its peers', which it only reads.
inline int staging_mappings(const std::string& perms = "") { return memfd_mappings("coll-staging", perms); }

// A buffer inside a coll_mem_alloc region, `offset` bytes in, so that
// references into the middle of a region are exercised too.
struct Shared {
  Shared(size_t bytes, size_t offset) {
    EXPECT_EQ(coll_mem_alloc(&base, bytes + offset), COLL_SUCCESS) << coll_get_last_error(nullptr);
    data = static_cast<unsigned char*>(base) + offset;
  }
  ~Shared() { EXPECT_EQ(coll_mem_free(base), COLL_SUCCESS) << coll_get_last_error(nullptr); }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  void* base = nullptr;
  unsigned char* data = nullptr;
};

// One allreduce from shared buffers, checked; `send_shared` false: only the
// output is shared (the input is private memory).
inline bool allreduce_case(coll_comm_t comm, int rank, int n, coll_datatype_t t, coll_redop_t op, size_t count,
                           bool in_place, bool send_shared) {
  const size_t es = reduce::datatype_size(t), bytes = count * es;
  // 72 and 136 bytes into their regions: aligned for every datatype, not to
  // a cache line, so that line-sized copies meet ragged heads.
  Shared send(bytes + 64, 72), recv(bytes + 64, 136);
  std::vector<unsigned char> private_send(send_shared ? 0 : bytes + 64);
  unsigned char* in = send_shared ? send.data : private_send.data();
  reference::fill_input(t, op, rank, count, in);
  std::memset(recv.data, 0xA5, bytes + 64);
  void* out = in_place ? static_cast<void*>(in) : recv.data;
  const std::string what = std::string(reduce::datatype_name(t)) + " " + reduce::redop_name(op) +
                           " count=" + std::to_string(count) + (in_place ? " in-place" : " out-of-place") +
                           (send_shared ? "" : " (private input)") + " nranks=" + std::to_string(n);
  coll_result_t r = coll_allreduce(in, out, count, t, op, comm, nullptr);
  EXPECT_EQ(r, COLL_SUCCESS) << "rank " << rank << " " << what << ": " << coll_get_last_error(comm);
  if (r != COLL_SUCCESS) return false;
  const size_t wrong = reference::count_wrong(t, op, n, count, out);
  EXPECT_EQ(wrong, 0u) << "rank " << rank << " " << what;
  if (!in_place) EXPECT_EQ(recv.data[bytes], 0xA5) << "rank " << rank << " " << what << ": written past the end";
  return wrong == 0 && !::testing::Test::HasFailure();
}

// Every count x dtype x op, in place and not, from shared buffers; then
// float32 sum, bfloat16 avg and int8 max at `large` elements, in place and
// not. False from the first case that failed.
inline bool allreduce_matrix(coll_comm_t comm, int rank, int n, std::span<const coll_datatype_t> types,
                             std::span<const coll_redop_t> ops, std::span<const size_t> counts, size_t large) {
  bool ok = true;
  for (size_t count : counts)
    for (coll_datatype_t t : types)
      for (coll_redop_t op : ops)
        for (bool in_place : {false, true}) ok = ok && allreduce_case(comm, rank, n, t, op, count, in_place, true);
  for (bool in_place : {false, true}) {
    ok = ok && allreduce_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, large, in_place, true);
    ok = ok && allreduce_case(comm, rank, n, COLL_BFLOAT16, COLL_AVG, large, in_place, true);
    ok = ok && allreduce_case(comm, rank, n, COLL_INT8, COLL_MAX, large, in_place, true);
  }
  return ok;
}

}  // namespace coll::testing
