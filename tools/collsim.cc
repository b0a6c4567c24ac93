// collsim — coll's own schedules, simulated on a model of a cluster.
//
//   collsim --cluster FILE [--collective allreduce] [--algo NAME|auto]
//           [--size 1G] [--ranks N] [--timeline FILE.csv|FILE.json]
//
// Prints the predicted time, algbw and busbw (nccl-tests' definitions), the
// busiest link, and the algorithm coll's selector would pick (auto). The
// cluster file is JSON (examples/clusters/, docs/SIMULATION.md).
#include "algorithms/select.h"
#include "base/error.h"
#include "sim/collective_run.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

using coll::sim::StepTime;

struct Options {
  std::string cluster;
  std::string collective = "allreduce";
  std::string algo = "auto";
  size_t bytes = size_t{1} << 30;
  int ranks = 0;
  std::string timeline;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: collsim --cluster FILE [--collective C] [--algo NAME|auto] [--size BYTES] [--ranks N]\n"
               "               [--timeline FILE.csv|FILE.json]\n"
               "  --cluster FILE    the cluster, as JSON (examples/clusters/)\n"
               "  --collective C    allreduce (default), broadcast, reduce, allgather, reduce_scatter, alltoall\n"
               "  --algo NAME       ring, tree, halving_doubling, hierarchical, ...; auto (default): coll's choice\n"
               "  --size BYTES      nccl-tests' size, with K, M or G (default 1G)\n"
               "  --ranks N         the first N GPUs of the cluster (default: all)\n"
               "  --timeline FILE   every step of every rank, with its start and end\n");
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "collsim: %s\n", message.c_str());
  std::exit(2);
}

size_t parse_size(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) die("--size '" + text + "' is not a size (1G, 64M, 4096)");
  const std::string unit(end);
  const double scale = unit.empty()                 ? 1
                       : unit == "K" || unit == "k" ? 1024.0
                       : unit == "M" || unit == "m" ? 1048576.0
                       : unit == "G" || unit == "g" ? 1073741824.0
                                                    : -1;
  if (scale < 0) die("--size '" + text + "' has an unknown unit (K, M or G)");
  return static_cast<size_t>(v * scale);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--cluster")
      o.cluster = value();
    else if (a == "--collective")
      o.collective = value();
    else if (a == "--algo")
      o.algo = value();
    else if (a == "--size")
      o.bytes = parse_size(value());
    else if (a == "--ranks")
      o.ranks = std::atoi(value().c_str());
    else if (a == "--timeline")
      o.timeline = value();
    else if (a == "-h" || a == "--help")
      usage(stdout), std::exit(0);
    else
      usage(stderr), die("unknown argument '" + a + "'");
  }
  if (o.cluster.empty()) usage(stderr), die("--cluster FILE is required");
  return o;
}

coll::algo::Collective collective_of(const std::string& name) {
  for (int c = 0; c < coll::algo::kNumCollectives; ++c) {
    auto coll = static_cast<coll::algo::Collective>(c);
    if (name == coll::algo::collective_name(coll) && !coll::algo::is_point_to_point(coll) &&
        coll != coll::algo::Collective::kBarrier)
      return coll;
  }
  die("--collective '" + name + "': one of allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall");
}

void write_timeline(const std::string& path, const std::vector<StepTime>& rows) {
  std::ofstream out(path);
  if (!out) die("cannot write " + path);
  const bool json = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  out << (json ? "[\n" : "rank,step,kind,peer,bytes,start_us,end_us\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const StepTime& s = rows[i];
    char line[256];
    if (json)
      std::snprintf(line, sizeof line,
                    "  {\"rank\": %d, \"step\": %d, \"kind\": \"%s\", \"peer\": %d, \"bytes\": %zu, "
                    "\"start_us\": %.3f, \"end_us\": %.3f}%s\n",
                    s.rank, s.step, coll::algo::op_kind_name(s.kind), s.peer, s.bytes, s.start_s * 1e6, s.end_s * 1e6,
                    i + 1 < rows.size() ? "," : "");
    else
      std::snprintf(line, sizeof line, "%d,%d,%s,%d,%zu,%.3f,%.3f\n", s.rank, s.step, coll::algo::op_kind_name(s.kind),
                    s.peer, s.bytes, s.start_s * 1e6, s.end_s * 1e6);
    out << line;
  }
  if (json) out << "]\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    const coll::sim::Cluster cluster = coll::sim::load_cluster(o.cluster, o.ranks);
    coll::sim::CollectiveRun run;
    run.collective = collective_of(o.collective);
    run.bytes = o.bytes;
    run.algorithm = o.algo;
    if (o.algo != "auto" && coll::algo::algorithm_names(run.collective).find(o.algo) == std::string::npos)
      die("--algo '" + o.algo + "': " + o.collective + " has " + coll::algo::algorithm_names(run.collective));
    std::vector<StepTime> timeline;
    const coll::sim::Prediction p = coll::sim::predict(cluster, run, o.timeline.empty() ? nullptr : &timeline);
    const coll::sim::Fabric& f = cluster.fabric;
    std::printf("collsim: %s of %zu bytes on %d ranks of \"%s\" (%d GPUs a node): %s\n", o.collective.c_str(), o.bytes,
                f.nranks(), cluster.name.c_str(), cluster.gpus_per_node, p.algorithm.c_str());
    std::printf("  time        %.3f us\n", p.result.seconds * 1e6);
    std::printf("  algbw       %.3f GB/s\n", p.algbw_bytes_per_s / 1e9);
    std::printf("  busbw       %.3f GB/s\n", p.busbw_bytes_per_s / 1e9);
    if (p.result.bottleneck >= 0)
      std::printf("  bottleneck  %s: %.3f us busy at full rate (%.0f%% of the time)\n",
                  f.link(p.result.bottleneck).name.c_str(), p.result.bottleneck_busy_s * 1e6,
                  100 * p.result.bottleneck_busy_s / p.result.seconds);
    std::printf("  messages    %zu\n", p.result.messages);
    std::printf("  auto        %s (coll's selector, from the cost model)\n", p.auto_choice.c_str());
    if (!o.timeline.empty()) {
      write_timeline(o.timeline, timeline);
      std::printf("  timeline    %s (%zu steps)\n", o.timeline.c_str(), timeline.size());
    }
  } catch (const coll::Error& e) {
    die(e.what());
  }
  return 0;
}
