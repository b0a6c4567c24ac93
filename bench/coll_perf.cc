// coll_perf — collective bandwidth and latency, in the manner of nccl-tests.
//
//   collrun -n 4 coll_perf -b 8 -e 64M -f 4
//   collrun -n 4 coll_perf -C allgather -b 1K -e 16M
//   mpirun -np 2 coll_perf -b 1M -e 1M
//   coll_perf                     (one rank, when no launcher is found)
//
// For each size: one checked run (inputs whose exact result is known
// whatever the reduction order; #wrong counts mismatched elements over all
// ranks), warm-up, then timed iterations. time is the slowest rank's mean per
// iteration; algbw = bytes / time; busbw = algbw * the collective's factor
// (perf_ops.h), the per-link traffic, comparable across rank counts.
#include "perf_ops.h"
#include "reduce/dtype.h"
#include "reduce/reference.h"

#include <coll/coll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

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
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: coll_perf [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup]\n"
               "                 [-c 0|1] [-d dtype] [-o op] [-a algorithm] [-C collective] [-r root] [-h]\n"
               "  -b, -e   sizes in bytes, with K, M or G suffix (32M)\n"
               "  -f       multiply the size by this much per step (2)\n"
               "  -n, -w   timed and warm-up iterations per size (20, 5)\n"
               "  -c       check results: 1 (default) or 0\n"
               "  -d       int8 uint8 int32 uint32 int64 uint64 float16|half bfloat16 float32|float float64|double\n"
               "  -o       sum prod min max avg\n"
               "  -a       algorithm for the collective (sets COLL_ALGO=collective:algorithm)\n"
               "  -C       allreduce broadcast reduce allgather reduce_scatter alltoall (allreduce)\n"
               "  -r       root of broadcast and reduce (0)\n");
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "coll_perf: %s\n", message.c_str());
  std::exit(2);
}

size_t parse_size(const char* text) {
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

coll_datatype_t parse_dtype(const std::string& s) {
  const std::pair<const char*, coll_datatype_t> names[] = {
      {"int8", COLL_INT8},       {"uint8", COLL_UINT8},       {"int32", COLL_INT32},     {"int", COLL_INT32},
      {"uint32", COLL_UINT32},   {"int64", COLL_INT64},       {"uint64", COLL_UINT64},   {"float16", COLL_FLOAT16},
      {"half", COLL_FLOAT16},    {"bfloat16", COLL_BFLOAT16}, {"float32", COLL_FLOAT32}, {"float", COLL_FLOAT32},
      {"float64", COLL_FLOAT64}, {"double", COLL_FLOAT64}};
  for (const auto& [name, t] : names)
    if (s == name) return t;
  die("unknown datatype '" + s + "'");
}

coll_redop_t parse_op(const std::string& s) {
  const std::pair<const char*, coll_redop_t> names[] = {
      {"sum", COLL_SUM}, {"prod", COLL_PROD}, {"min", COLL_MIN}, {"max", COLL_MAX}, {"avg", COLL_AVG}};
  for (const auto& [name, o] : names)
    if (s == name) return o;
  die("unknown op '" + s + "'");
}

Options parse(int argc, char** argv) {
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
    else
      die("unknown option " + a);
  }
  if (o.max_bytes < o.min_bytes) die("-e must be at least -b");
  if (o.factor <= 1) die("-f must be greater than 1");
  if (o.iters < 1 || o.warmup < 0) die("-n must be positive and -w not negative");
  if (perf::find(o.collective) == nullptr) die("unknown collective '" + o.collective + "'");
  return o;
}

void check(coll_result_t r, coll_comm_t comm, const char* what) {
  if (r == COLL_SUCCESS) return;
  std::fprintf(stderr, "coll_perf: %s failed: %s: %s\n", what, coll_get_error_string(r), coll_get_last_error(comm));
  std::exit(1);
}

bool launched() {
  for (const char* v : {"COLL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

struct Result {
  double time_us = 0;
  size_t wrong = 0;
};

// One column group: a checked run, warm-up, timed iterations.
Result measure(const perf::Ops& ops, const perf::Case& c, const Options& o) {
  Result res;
  if (o.check) {
    ops.fill(c);
    check(ops.run(c), c.comm, ops.name);
    uint64_t wrong = ops.wrong(c);
    check(coll_allreduce(&wrong, &wrong, 1, COLL_UINT64, COLL_SUM, c.comm, nullptr), c.comm, "allreduce (#wrong)");
    res.wrong = wrong;
  }
  for (int i = 0; i < o.warmup; ++i) check(ops.run(c), c.comm, ops.name);
  check(coll_barrier(c.comm), c.comm, "barrier");  // start together
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) check(ops.run(c), c.comm, ops.name);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / o.iters;
  check(coll_allreduce(&us, &us, 1, COLL_FLOAT64, COLL_MAX, c.comm, nullptr), c.comm, "allreduce (time)");
  res.time_us = us;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  const perf::Ops& ops = *perf::find(o.collective);
  if (!o.algorithm.empty()) setenv("COLL_ALGO", (o.collective + ":" + o.algorithm).c_str(), 1);

  coll_comm_t comm = nullptr;
  if (launched()) {
    check(coll_comm_init_from_env(&comm), nullptr, "coll_comm_init_from_env");
  } else {
    coll_unique_id_t id;
    check(coll_get_unique_id(&id), nullptr, "coll_get_unique_id");
    check(coll_comm_init_rank(&comm, 1, id, 0), nullptr, "coll_comm_init_rank");
  }
  int rank = 0, nranks = 1;
  coll_comm_rank(comm, &rank);
  coll_comm_size(comm, &nranks);
  if (ops.rooted && (o.root < 0 || o.root >= nranks)) die("-r " + std::to_string(o.root) + " is not a rank");

  const size_t es = coll::reduce::datatype_size(o.dtype);
  std::vector<char> send(std::max(o.max_bytes, es)), recv(std::max(o.max_bytes, es));
  if (rank == 0) {
    std::printf("# coll_perf: %s, %d ranks, %s %s, algorithm %s, %d iterations, %d warm-up, check %d\n", ops.name,
                nranks, coll::reduce::datatype_name(o.dtype), coll::reduce::redop_name(o.op),
                o.algorithm.empty() ? "auto" : o.algorithm.c_str(), o.iters, o.warmup, o.check);
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %33s  %33s\n", "", "", "", "", "", "out-of-place", "in-place");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %7s %7s %6s  %9s %7s %7s %6s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %9s %7s %7s %6s  %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
                "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  size_t total_wrong = 0;
  double bw_sum = 0;
  int bw_n = 0;
  const double bus_factor = ops.bus_factor(nranks);
  const int root = ops.rooted ? o.root : -1;
  // The n-block collectives need a whole number of elements per rank.
  const bool blocks = ops.bus_factor == perf::part_factor;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
    size_t count = bytes / es;
    if (blocks) count -= count % static_cast<size_t>(nranks);
    size_t real_bytes = count * es;
    perf::Case c{comm, rank, nranks, o.dtype, o.op, o.root, count, false, send.data(), recv.data()};
    Result out = measure(ops, c, o);
    c.in_place = true;
    Result in = measure(ops, c, o);
    total_wrong += out.wrong + in.wrong;
    if (rank == 0) {
      auto algbw = [&](double us) { return us > 0 ? real_bytes / us / 1e3 : 0.0; };
      std::printf("  %10zu  %12zu  %8s  %6s  %6d  %9.2f %7.3f %7.3f %6zu  %9.2f %7.3f %7.3f %6zu\n", real_bytes, count,
                  coll::reduce::datatype_name(o.dtype), coll::reduce::redop_name(o.op), root, out.time_us,
                  algbw(out.time_us), algbw(out.time_us) * bus_factor, out.wrong, in.time_us, algbw(in.time_us),
                  algbw(in.time_us) * bus_factor, in.wrong);
      std::fflush(stdout);
      bw_sum += (algbw(out.time_us) + algbw(in.time_us)) * bus_factor;
      bw_n += 2;
    }
    size_t next = static_cast<size_t>(static_cast<double>(bytes) * o.factor);
    if (next <= bytes) next = bytes + 1;
    bytes = next;
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %zu %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g\n", bw_n > 0 ? bw_sum / bw_n : 0.0);
    std::printf("#\n");
  }
  coll_comm_destroy(comm);
  return total_wrong == 0 ? 0 : 1;
}
