// What coll_perf and its peers (bench/peers/) share, so that their tables
// line up column for column: the nccl-tests flags, the sweep of sizes, and
// the table itself.
#pragma once

#include "perf_ops.h"
#include "reduce/dtype.h"

#include <coll/coll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace perf {

inline const char*& program_name() {
  static const char* name = "coll_perf";
  return name;
}

struct Options {
  size_t min_bytes = 32u << 20;
  size_t max_bytes = 32u << 20;
  double factor = 2;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  coll_datatype_t dtype = COLL_FLOAT32;
  coll_redop_t op = COLL_SUM;
  std::string algorithm;
  std::string collective = "allreduce";
  int root = 0;
  int registered = 0;  // -R 1: buffers from the library's shareable memory (coll_mem_alloc)
  int device = 0;      // -G 1: device buffers (cudaMalloc), where the program was built with CUDA
};

inline void usage(FILE* out) {
  std::fprintf(out,
               "usage: %s [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup]\n"
               "                 [-c 0|1] [-d dtype] [-o op] [-a algorithm] [-C collective] [-r root] [-R 0|1]\n"
               "                 [-G 0|1] [-h]\n"
               "  -b, -e   sizes in bytes, with K, M or G suffix (32M)\n"
               "  -f       multiply the size by this much per step (2)\n"
               "  -n, -w   timed and warm-up iterations per size (20, 5)\n"
               "  -c       check results: 1 (default) or 0\n"
               "  -d       int8 uint8 int32 uint32 int64 uint64 float16|half bfloat16 float32|float float64|double\n"
               "  -o       sum prod min max avg\n"
               "  -a       algorithm for the collective (sets COLL_ALGO=collective:algorithm)\n"
               "  -C       allreduce broadcast reduce allgather reduce_scatter alltoall sendrecv (allreduce)\n"
               "  -r       root of broadcast and reduce (0)\n"
               "  -R       1: buffers from coll_mem_alloc, which peers on the node read in place (0)\n"
               "  -G       1: device buffers (cudaMalloc on the rank's GPU) and the default stream (0)\n",
               program_name());
}

[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_name(), message.c_str());
  std::exit(2);
}

inline size_t parse_size(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) die(std::string("bad size '") + text + "'");
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    case '\0':
      break;
    default:
      die(std::string("bad size suffix in '") + text + "'");
  }
  return static_cast<size_t>(v);
}

inline coll_datatype_t parse_dtype(const std::string& s) {
  const std::pair<const char*, coll_datatype_t> names[] = {
      {"int8", COLL_INT8},       {"uint8", COLL_UINT8},       {"int32", COLL_INT32},     {"int", COLL_INT32},
      {"uint32", COLL_UINT32},   {"int64", COLL_INT64},       {"uint64", COLL_UINT64},   {"float16", COLL_FLOAT16},
      {"half", COLL_FLOAT16},    {"bfloat16", COLL_BFLOAT16}, {"float32", COLL_FLOAT32}, {"float", COLL_FLOAT32},
      {"float64", COLL_FLOAT64}, {"double", COLL_FLOAT64}};
  for (const auto& [name, t] : names)
    if (s == name) return t;
  die("unknown datatype '" + s + "'");
}

inline coll_redop_t parse_op(const std::string& s) {
  const std::pair<const char*, coll_redop_t> names[] = {
      {"sum", COLL_SUM}, {"prod", COLL_PROD}, {"min", COLL_MIN}, {"max", COLL_MAX}, {"avg", COLL_AVG}};
  for (const auto& [name, o] : names)
    if (s == name) return o;
  die("unknown op '" + s + "'");
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) die("option " + a + " needs a value");
    const char* v = argv[++i];
    if (a == "-b")
      o.min_bytes = parse_size(v);
    else if (a == "-e")
      o.max_bytes = parse_size(v);
    else if (a == "-f")
      o.factor = std::atof(v);
    else if (a == "-n")
      o.iters = std::atoi(v);
    else if (a == "-w")
      o.warmup = std::atoi(v);
    else if (a == "-c")
      o.check = std::atoi(v);
    else if (a == "-d")
      o.dtype = parse_dtype(v);
    else if (a == "-o")
      o.op = parse_op(v);
    else if (a == "-a")
      o.algorithm = v;
    else if (a == "-C")
      o.collective = v;
    else if (a == "-r")
      o.root = std::atoi(v);
    else if (a == "-R")
      o.registered = std::atoi(v);
    else if (a == "-G")
      o.device = std::atoi(v);
    else
      die("unknown option " + a);
  }
  if (o.max_bytes < o.min_bytes) die("-e must be at least -b");
  if (o.factor <= 1) die("-f must be greater than 1");
  if (o.iters < 1 || o.warmup < 0) die("-n must be positive and -w not negative");
  if (perf::find(o.collective) == nullptr) die("unknown collective '" + o.collective + "'");
  if (o.registered != 0 && o.registered != 1) die("-R must be 0 or 1");
  if (o.device != 0 && o.device != 1) die("-G must be 0 or 1");
  if (o.device == 1 && o.registered == 1) die("-G 1 and -R 1 exclude each other");
  if (o.device == 1 && o.collective == "sendrecv")
    die("-G 1 -C sendrecv: device buffers in sends and receives are not supported yet");
  return o;
}

struct Result {
  double time_us = 0;
  size_t wrong = 0;
};

inline void print_header(const Options& o, const char* collective, int nranks, const char* algorithm) {
  std::printf("# %s: %s, %d ranks, %s %s, algorithm %s, %d iterations, %d warm-up, check %d%s\n", program_name(),
              collective, nranks, coll::reduce::datatype_name(o.dtype), coll::reduce::redop_name(o.op), algorithm,
              o.iters, o.warmup, o.check, o.registered ? ", buffers from coll_mem_alloc" : "");
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %33s  %33s\n", "", "", "", "", "", "out-of-place", "in-place");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %7s %7s %6s  %9s %7s %7s %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %7s %7s %6s  %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

// Prints one row; returns the sum of its two busbw values.
inline double print_row(const Options& o, size_t bytes, size_t count, int root, double bus_factor, const Result& out,
                        const Result& in) {
  auto algbw = [&](double us) { return us > 0 ? bytes / us / 1e3 : 0.0; };
  std::printf("  %10zu  %12zu  %8s  %6s  %6d  %9.2f %7.3f %7.3f %6zu  %9.2f %7.3f %7.3f %6zu\n", bytes, count,
              coll::reduce::datatype_name(o.dtype), coll::reduce::redop_name(o.op), root, out.time_us,
              algbw(out.time_us), algbw(out.time_us) * bus_factor, out.wrong, in.time_us, algbw(in.time_us),
              algbw(in.time_us) * bus_factor, in.wrong);
  std::fflush(stdout);
  return (algbw(out.time_us) + algbw(in.time_us)) * bus_factor;
}

inline void print_footer(size_t wrong, double avg_busbw) {
  std::printf("# Out of bounds values : %zu %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g\n", avg_busbw);
  std::printf("#\n");
}

// The sizes of the sweep: -b, multiplied by -f, up to -e.
inline size_t next_size(const Options& o, size_t bytes) {
  size_t next = static_cast<size_t>(static_cast<double>(bytes) * o.factor);
  return next <= bytes ? bytes + 1 : next;
}

// Elements of one row: whole elements, and for the n-block collectives a
// whole number per rank.
inline size_t row_count(const Ops& ops, size_t bytes, coll_datatype_t t, int nranks) {
  size_t count = bytes / coll::reduce::datatype_size(t);
  if (ops.bus_factor == part_factor) count -= count % static_cast<size_t>(nranks);
  return count;
}

// One checked call: fill the inputs, run, count this rank's wrong outputs.
// A library whose buffers are not the sweep's host buffers (nccl_perf: one
// process, every GPU a rank, device memory) does all of it in check(ops, c).
template <typename Library>
uint64_t checked_run(const Ops& ops, Library& lib, const Case& c) {
  if constexpr (requires { lib.check(ops, c); }) {
    return lib.check(ops, c);
  } else {
    ops.fill(c);
    lib.run(c);
    return ops.wrong(c);
  }
}

// The sweep's two buffers: the library's shareable memory with -R 1 (a
// library offering allocate(bytes) and release(ptr)), else plain vectors.
template <typename Library>
class Buffers {
 public:
  Buffers(const Options& o, Library& lib, size_t bytes) : lib_(lib) {
    if (o.registered == 0 && o.device == 0) {
      send_vec_.resize(bytes), recv_vec_.resize(bytes);
      send = send_vec_.data(), recv = recv_vec_.data();
      return;
    }
    if constexpr (requires { lib.allocate(bytes); }) {
      send = static_cast<char*>(lib.allocate(bytes)), recv = static_cast<char*>(lib.allocate(bytes));
      owned_ = true;
    } else {
      die(std::string(o.device ? "-G 1: " : "-R 1: ") + program_name() + " has no " +
          (o.device ? "device" : "shareable") + " memory");
    }
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
    if constexpr (requires { lib_.release(send); })
      if (owned_) lib_.release(send), lib_.release(recv);
  }
  char* send = nullptr;
  char* recv = nullptr;

 private:
  Library& lib_;
  bool owned_ = false;
  std::vector<char> send_vec_, recv_vec_;
};

// The whole sweep, for any library. `lib` provides run(const Case&) (one
// call of the collective, false on failure), barrier(), and the reductions
// sum(uint64_t&) and max(double&) across ranks, and optionally check (see
// checked_run). `comm` fills Case::comm.
// Returns the number of wrong elements over all sizes and ranks.
template <typename Library>
size_t sweep(const Options& o, const Ops& ops, int rank, int nranks, coll_comm_t comm, Library& lib,
             const char* algorithm) {
  const size_t es = coll::reduce::datatype_size(o.dtype);
  Buffers<Library> buffers(o, lib, std::max(o.max_bytes, es));
  if (rank == 0) print_header(o, ops.name, nranks, algorithm);
  auto measure = [&](const Case& c) {
    Result res;
    if (o.check) {
      uint64_t wrong = checked_run(ops, lib, c);
      lib.sum(wrong);
      res.wrong = wrong;
    }
    for (int i = 0; i < o.warmup; ++i) lib.run(c);
    if constexpr (requires { lib.finish(); }) lib.finish();
    lib.barrier();  // start together
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) lib.run(c);
    // A library whose calls return once enqueued (device buffers) waits
    // for them once, after the loop, as nccl-tests does.
    if constexpr (requires { lib.finish(); }) lib.finish();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / o.iters;
    lib.max(us);  // the slowest rank's time
    res.time_us = us;
    return res;
  };
  size_t total_wrong = 0;
  double bw_sum = 0;
  int bw_n = 0;
  const int root = ops.rooted ? o.root : -1;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = next_size(o, bytes)) {
    size_t count = row_count(ops, bytes, o.dtype, nranks);
    Case c{comm, rank, nranks, o.dtype, o.op, o.root, count, false, buffers.send, buffers.recv};
    Result out = measure(c);
    c.in_place = true;
    Result in = measure(c);
    total_wrong += out.wrong + in.wrong;
    if (rank == 0) {
      bw_sum += print_row(o, count * es, count, root, ops.bus_factor(nranks), out, in);
      bw_n += 2;
    }
  }
  if (rank == 0) print_footer(total_wrong, bw_n > 0 ? bw_sum / bw_n : 0.0);
  return total_wrong;
}

}  // namespace perf
