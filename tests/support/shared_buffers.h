// Test helpers for coll_mem_alloc buffers: buffers inside a region, the
// mappings /proc/self/maps shows, and one allreduce checked exactly.
#pragma once

#include "reduce/reduce.h"
#include "reduce/reference.h"

#include <coll/coll.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
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

// Mappings of staged-allreduce stagings (core/fastpath/peer_access_allreduce.cc): its own
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

// `bytes` at `offset` into coll_mem_alloc memory (`shared`) or private
// memory, filled with 0xA5.
class Buffer {
 public:
  Buffer(size_t bytes, size_t offset, bool shared) {
    if (shared) {
      shared_.emplace(bytes, offset);
      data = shared_->data;
    } else {
      private_.resize(bytes + offset);
      data = private_.data() + offset;
    }
    std::memset(data - offset, 0xA5, bytes + offset);
  }
  unsigned char* data = nullptr;

 private:
  std::optional<Shared> shared_;
  std::vector<unsigned char> private_;
};

// Where a case's buffers live: both in coll_mem_alloc memory, only the
// output (the input is private), or neither.
enum class Memory { kShared, kPrivateInput, kPrivate };

// One allreduce, checked exactly: the result, nothing written around the
// output, and the input left alone (out of place). The buffers start 72
// and 136 bytes into their allocations: aligned for every datatype, not to
// a cache line, so that line-sized copies meet ragged heads (and references
// point into the middle of a region).
inline bool allreduce_case(coll_comm_t comm, int rank, int n, coll_datatype_t t, coll_redop_t op, size_t count,
                           bool in_place, Memory memory) {
  const size_t bytes = count * reduce::datatype_size(t), room = bytes + 200;
  Buffer send(room, 0, memory == Memory::kShared), recv(room, 0, memory != Memory::kPrivate);
  unsigned char* in = send.data + 72;
  unsigned char* out = in_place ? in : recv.data + 136;
  const unsigned char* around = in_place ? send.data : recv.data;
  const size_t at = static_cast<size_t>(out - around);
  reference::fill_input(t, op, rank, count, in);
  const std::vector<unsigned char> input(in, in + bytes);
  const char* where[] = {"", " (private input)", " (private buffers)"};
  const std::string what = std::string(reduce::datatype_name(t)) + " " + reduce::redop_name(op) +
                           " count=" + std::to_string(count) + (in_place ? " in-place" : " out-of-place") +
                           where[static_cast<int>(memory)] + " nranks=" + std::to_string(n);
  const coll_result_t r = coll_allreduce(in, out, count, t, op, comm, nullptr);
  EXPECT_EQ(r, COLL_SUCCESS) << "rank " << rank << " " << what << ": " << coll_get_last_error(comm);
  if (r != COLL_SUCCESS) return false;
  const size_t wrong = reference::count_wrong(t, op, n, count, out);
  EXPECT_EQ(wrong, 0u) << "rank " << rank << " " << what;
  EXPECT_EQ(around[at - 1], 0xA5) << "rank " << rank << " " << what << ": written before the start";
  EXPECT_EQ(around[at + bytes], 0xA5) << "rank " << rank << " " << what << ": written past the end";
  if (!in_place) EXPECT_TRUE(std::equal(input.begin(), input.end(), in)) << "rank " << rank << " " << what << ": input";
  return wrong == 0 && !::testing::Test::HasFailure();
}

// The same on private buffers, as most callers have them.
inline bool private_case(coll_comm_t comm, int rank, int n, coll_datatype_t t, coll_redop_t op, size_t count,
                         bool in_place) {
  return allreduce_case(comm, rank, n, t, op, count, in_place, Memory::kPrivate);
}

// Every count x dtype x op, in place and not; then float32 sum, bfloat16
// avg and int8 max at `large` elements, in place and not. False from the
// first case that failed.
inline bool allreduce_matrix(coll_comm_t comm, int rank, int n, std::span<const coll_datatype_t> types,
                             std::span<const coll_redop_t> ops, std::span<const size_t> counts, size_t large,
                             Memory memory = Memory::kShared) {
  bool ok = true;
  for (size_t count : counts)
    for (coll_datatype_t t : types)
      for (coll_redop_t op : ops)
        for (bool in_place : {false, true}) ok = ok && allreduce_case(comm, rank, n, t, op, count, in_place, memory);
  for (bool in_place : {false, true}) {
    ok = ok && allreduce_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, large, in_place, memory);
    ok = ok && allreduce_case(comm, rank, n, COLL_BFLOAT16, COLL_AVG, large, in_place, memory);
    ok = ok && allreduce_case(comm, rank, n, COLL_INT8, COLL_MAX, large, in_place, memory);
  }
  return ok;
}

// The direct-access tests' matrix (registered and staged): every datatype
// kind and op; counts 0 and 1, a prime under one 64-byte line per rank,
// primes across the 8 KiB block of the reduction; then 1 MiB-and-more of
// float32, past the non-temporal stores' threshold and the staged form's
// 2 MiB window.
inline constexpr coll_datatype_t kDirectTypes[] = {COLL_INT8,     COLL_UINT32,  COLL_INT64,  COLL_FLOAT16,
                                                   COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64};
inline constexpr coll_redop_t kDirectOps[] = {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG};
inline constexpr size_t kDirectCounts[] = {0, 1, 13, 7919, 65537};
inline constexpr size_t kDirectLarge = 1048583;

// The two forms of the direct-access allreduce, for the tests that hold for
// both: the registered one (coll_mem_alloc buffers, COLL_SHM_MAPPED=1) and
// the staged one (private buffers, COLL_SHM_STAGED_BYTES=64K).
struct DirectForm {
  std::string name;
  bool shared;  // the buffers: coll_mem_alloc memory, or private
  std::map<std::string, std::string> env;
};
inline void PrintTo(const DirectForm& form, std::ostream* os) { *os << form.name; }
inline const DirectForm kRegisteredForm{"registered", true, {{"COLL_SHM_MAPPED", "1"}}};
inline const DirectForm kStagedForm{"staged", false, {{"COLL_SHM_STAGED_BYTES", "64K"}}};
// What shows that a rank took the form: mappings that grow by the peers'
// memory it maps (the registered form: writable coll_mem_alloc mappings,
// its own live buffers included; the staged form: the peers' stagings,
// which are every staging mapping but its own, made before any of theirs).
inline int mapped_by_form(const DirectForm& form) {
  return form.shared ? coll_mem_mappings("rw") : std::max(0, staging_mappings() - 1);
}

// Their parameters: ranks, and the form's streaming threshold
// (COLL_SHM_STREAM_BYTES or COLL_SHM_STAGED_STREAM_BYTES; "0": every output
// that is not its rank's input is written with non-temporal stores, and in
// the staged form in place too where COLL_SHM_STAGED_STREAM_IN_PLACE=1;
// "1G": none is).
using RanksStream = std::tuple<int, std::string>;
inline auto ranks_and_streaming() {
  return ::testing::Combine(::testing::Values(2, 3, 4, 5, 8), ::testing::Values(std::string("0"), std::string("1G")));
}
inline std::string ranks_stream_name(const ::testing::TestParamInfo<RanksStream>& info) {
  return std::to_string(std::get<0>(info.param)) + "ranks_" + (std::get<1>(info.param) == "0" ? "streaming" : "cached");
}

}  // namespace coll::testing
