// What coll_perf does for each collective (-C): how to call it, fill its
// inputs, count wrong outputs, and its bus-bandwidth factor (nccl-tests'
// PERFORMANCE.md): allreduce 2(n-1)/n; allgather, reduce_scatter,
// alltoall (n-1)/n; broadcast, reduce, sendrecv 1.
//
// Sizes are nccl-tests': `count` is the elements of the whole operation —
// the vector (allreduce, broadcast, reduce) or all n blocks (allgather's
// output, reduce_scatter's input, alltoall's buffers) — so per-rank counts
// are count / n.
#pragma once

#include "reduce/dtype.h"
#include "reduce/reference.h"

#include <coll/coll.h>

#include <cstring>
#include <string>

namespace perf {

struct Case {
  coll_comm_t comm;
  int rank, n;
  coll_datatype_t t;
  coll_redop_t op;
  int root;
  size_t count;  // elements of the whole operation
  bool in_place;
  char* send;  // buffers of at least count elements
  char* recv;

  size_t es() const { return coll::reduce::datatype_size(t); }
  size_t part() const { return count / static_cast<size_t>(n); }  // per-rank block
};

// Elements of `out` whose bytes differ from value(i), over `count` elements.
template <typename Value>
size_t count_mismatches(const Case& c, const void* out, size_t count, Value&& value) {
  unsigned char want[8];
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    coll::reference::store(c.t, want, 0, value(i));
    if (std::memcmp(want, static_cast<const char*>(out) + i * c.es(), c.es()) != 0) ++wrong;
  }
  return wrong;
}
inline int64_t pattern(const Case& c, int rank, size_t i) {
  return coll::reference::input_value(c.t, COLL_SUM, rank, i);
}

struct Ops {
  const char* name;
  double (*bus_factor)(int n);
  bool rooted;
  coll_result_t (*run)(const Case&);
  void (*fill)(const Case&);
  size_t (*wrong)(const Case&);  // on this rank
};

inline double all_factor(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0; }
inline double part_factor(int n) { return n > 1 ? 1.0 * (n - 1) / n : 0; }
inline double one_factor(int) { return 1.0; }

// --- allreduce ---
inline char* allreduce_out(const Case& c) { return c.in_place ? c.send : c.recv; }
inline coll_result_t allreduce_run(const Case& c) {
  return coll_allreduce(c.send, allreduce_out(c), c.count, c.t, c.op, c.comm, nullptr);
}
inline void allreduce_fill(const Case& c) { coll::reference::fill_input(c.t, c.op, c.rank, c.count, c.send); }
inline size_t allreduce_wrong(const Case& c) {
  return coll::reference::count_wrong(c.t, c.op, c.n, c.count, allreduce_out(c));
}

// --- broadcast: one buffer (recv) ---
inline coll_result_t broadcast_run(const Case& c) {
  return coll_broadcast(c.recv, c.count, c.t, c.root, c.comm, nullptr);
}
inline void broadcast_fill(const Case& c) {
  if (c.rank == c.root)
    coll::reference::fill_input(c.t, COLL_SUM, c.root, c.count, c.recv);
  else
    std::memset(c.recv, 0, c.count * c.es());
}
inline size_t broadcast_wrong(const Case& c) {
  return count_mismatches(c, c.recv, c.count, [&](size_t i) { return pattern(c, c.root, i); });
}

// --- reduce ---
inline coll_result_t reduce_run(const Case& c) {
  return coll_reduce(c.send, allreduce_out(c), c.count, c.t, c.op, c.root, c.comm, nullptr);
}
inline size_t reduce_wrong(const Case& c) {
  return c.rank == c.root ? coll::reference::count_wrong(c.t, c.op, c.n, c.count, allreduce_out(c)) : 0;
}

// --- allgather: in place, the input is our block of the output ---
inline const char* allgather_in(const Case& c) { return c.in_place ? c.recv + c.rank * c.part() * c.es() : c.send; }
inline coll_result_t allgather_run(const Case& c) {
  return coll_allgather(allgather_in(c), c.recv, c.part(), c.t, c.comm, nullptr);
}
inline void allgather_fill(const Case& c) {
  coll::reference::fill_input(c.t, COLL_SUM, c.rank, c.part(), const_cast<char*>(allgather_in(c)));
}
inline size_t allgather_wrong(const Case& c) {
  size_t p = c.part();
  return count_mismatches(c, c.recv, p * c.n, [&](size_t i) { return pattern(c, static_cast<int>(i / p), i % p); });
}

// --- reduce_scatter: in place, the output is our block of the input ---
inline char* reduce_scatter_out(const Case& c) { return c.in_place ? c.send + c.rank * c.part() * c.es() : c.recv; }
inline coll_result_t reduce_scatter_run(const Case& c) {
  return coll_reduce_scatter(c.send, reduce_scatter_out(c), c.part(), c.t, c.op, c.comm, nullptr);
}
inline void reduce_scatter_fill(const Case& c) {
  coll::reference::fill_input(c.t, c.op, c.rank, c.part() * c.n, c.send);
}
inline size_t reduce_scatter_wrong(const Case& c) {
  unsigned char want[8];
  size_t wrong = 0;
  const char* out = reduce_scatter_out(c);
  for (size_t j = 0; j < c.part(); ++j) {
    coll::reference::expected_element(c.t, c.op, c.n, c.rank * c.part() + j, want);
    if (std::memcmp(want, out + j * c.es(), c.es()) != 0) ++wrong;
  }
  return wrong;
}

// --- alltoall ---
inline coll_result_t alltoall_run(const Case& c) {
  return coll_alltoall(c.send, allreduce_out(c), c.part(), c.t, c.comm, nullptr);
}
inline void alltoall_fill(const Case& c) { coll::reference::fill_input(c.t, COLL_SUM, c.rank, c.part() * c.n, c.send); }
inline size_t alltoall_wrong(const Case& c) {
  size_t p = c.part();
  return count_mismatches(c, allreduce_out(c), p * c.n,
                          [&](size_t i) { return pattern(c, static_cast<int>(i / p), c.rank * p + i % p); });
}

// --- sendrecv: a ring shift in one group, as nccl-tests' sendrecv: each
// rank sends its count elements to rank + 1 and receives rank - 1's. Its
// output is always recv (sending from and receiving into one buffer at once
// has no in-place meaning), so both columns measure the same call. ---
inline coll_result_t sendrecv_run(const Case& c) {
  const int next = (c.rank + 1) % c.n, prev = (c.rank + c.n - 1) % c.n;
  coll_group_start();
  const coll_result_t sent = coll_send(c.send, c.count, c.t, next, c.comm, nullptr);
  const coll_result_t received = coll_recv(c.recv, c.count, c.t, prev, c.comm, nullptr);
  const coll_result_t ended = coll_group_end();
  return sent != COLL_SUCCESS ? sent : received != COLL_SUCCESS ? received : ended;
}
inline void sendrecv_fill(const Case& c) {
  coll::reference::fill_input(c.t, COLL_SUM, c.rank, c.count, c.send);
  std::memset(c.recv, 0, c.count * c.es());
}
inline size_t sendrecv_wrong(const Case& c) {
  const int prev = (c.rank + c.n - 1) % c.n;
  return count_mismatches(c, c.recv, c.count, [&](size_t i) { return pattern(c, prev, i); });
}

inline const Ops* find(const std::string& name) {
  static const Ops table[] = {
      {"allreduce", all_factor, false, allreduce_run, allreduce_fill, allreduce_wrong},
      {"broadcast", one_factor, true, broadcast_run, broadcast_fill, broadcast_wrong},
      {"reduce", one_factor, true, reduce_run, allreduce_fill, reduce_wrong},
      {"allgather", part_factor, false, allgather_run, allgather_fill, allgather_wrong},
      {"reduce_scatter", part_factor, false, reduce_scatter_run, reduce_scatter_fill, reduce_scatter_wrong},
      {"alltoall", part_factor, false, alltoall_run, alltoall_fill, alltoall_wrong},
      {"sendrecv", one_factor, false, sendrecv_run, sendrecv_fill, sendrecv_wrong},
  };
  for (const Ops& o : table)
    if (name == o.name) return &o;
  return nullptr;
}

}  // namespace perf
