// collsim — coll's own schedules, simulated on a model of a cluster.
//
//   collsim --cluster FILE [--collective allreduce] [--algo NAME|auto]
//           [--size 1G] [--ranks N] [--symmetry auto|on|off] [--timeline FILE.csv|FILE.json]
//           [--sweep FILE.svg [--min-size 1K]] [--failures MTTF_HOURS] [--tuning FILE]
//   collsim --cluster FILE --fit MEASURED     (scripts/calibrate.sh)
//   collsim --plot-check CHECK.csv --svg FILE (scripts/sim-check.sh)
//
// Prints the predicted time, algbw and busbw (nccl-tests' definitions), the
// busiest link, and the algorithm coll's selector would pick (auto). The
// cluster file is JSON (examples/clusters/, docs/SIMULATION.md). --sweep
// plots busbw against size for every algorithm, the crossovers marked (a
// PNG next to the SVG where gnuplot is installed); --failures gives the
// expected time to the first cable failure and each algorithm's slowdown
// with one cable of its busiest switch link gone. --tuning gives the link
// parameters scripts/calibrate.sh measured; --fit is how it fits them.
// --plot-check draws sim-check's predictions against its measurements.
#include "algorithms/select.h"
#include "base/error.h"
#include "sim/check_plot.h"
#include "sim/collective_run.h"
#include "sim/explain.h"
#include "sim/failures.h"
#include "sim/fit.h"
#include "sim/sweep.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
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
  std::string sweep;
  size_t min_bytes = 1024;
  double mttf_hours = 0;
  std::string explain;  // an algorithm
  int explain_ranks = 4;
  int per_node = 0;
  bool size_given = false;
  std::string svg;
  std::string symmetry = "auto";
  std::string tuning;
  std::string fit;         // measured runs
  std::string plot_check;  // scripts/sim-check.sh's check.csv
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: collsim --cluster FILE [--collective C] [--algo NAME|auto] [--size BYTES] [--ranks N]\n"
               "               [--timeline FILE.csv|FILE.json] [--sweep FILE.svg [--min-size BYTES]] [--failures H]\n"
               "       collsim --explain ALGO [-n P] [--per-node L] [--size BYTES] [--collective C] [--svg FILE]\n"
               "       collsim --plot-check CHECK.csv --svg FILE\n"
               "  --cluster FILE    the cluster, as JSON (examples/clusters/)\n"
               "  --collective C    allreduce (default), broadcast, reduce, allgather, reduce_scatter, alltoall\n"
               "  --algo NAME       ring, tree, halving_doubling, hierarchical, ...; auto (default): coll's choice\n"
               "  --size BYTES      nccl-tests' size, with K, M or G (default 1G)\n"
               "  --ranks N         the first N GPUs of the cluster (default: all)\n"
               "  --fit MEASURED    the node class's parameters that reproduce the measured runs (as\n"
               "                    scripts/calibrate.sh writes them), printed as a tuning file\n"
               "  --tuning FILE     link parameters of the cluster's classes, as scripts/calibrate.sh writes them\n"
               "  --symmetry S      auto (default: from 1024 ranks), on or off: simulate one node's ranks for\n"
               "                    all when the schedules are alike on every node (docs/SIMULATION.md)\n"
               "  --timeline FILE   every step of every rank, with its start and end\n"
               "  --sweep FILE.svg  busbw against size, --min-size (1K) to --size, every algorithm (and FILE.png\n"
               "                    where gnuplot is installed)\n"
               "  --explain ALGO    the algorithm step by step on -n P ranks (4; --per-node L: nodes of L),\n"
               "                    and its cost formula with the numbers in; --cluster optional\n"
               "  --svg FILE        with --explain: the same as an animation, for a browser; with\n"
               "                    --plot-check: the plot\n"
               "  --plot-check CSV  scripts/sim-check.sh's predictions against its measurements, drawn\n"
               "                    into --svg FILE\n"
               "  --failures H      each network cable failing after H hours on average: when the first fails,\n"
               "                    and each algorithm's time with one cable of its busiest switch link gone\n");
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
      o.bytes = parse_size(value()), o.size_given = true;
    else if (a == "--explain")
      o.explain = value();
    else if (a == "-n")
      o.explain_ranks = std::atoi(value().c_str());
    else if (a == "--per-node")
      o.per_node = std::atoi(value().c_str());
    else if (a == "--svg")
      o.svg = value();
    else if (a == "--fit")
      o.fit = value();
    else if (a == "--plot-check")
      o.plot_check = value();
    else if (a == "--tuning")
      o.tuning = value();
    else if (a == "--ranks")
      o.ranks = std::atoi(value().c_str());
    else if (a == "--symmetry") {
      o.symmetry = value();
      if (o.symmetry != "auto" && o.symmetry != "on" && o.symmetry != "off")
        die("--symmetry '" + o.symmetry + "': auto, on or off");
    } else if (a == "--timeline")
      o.timeline = value();
    else if (a == "--sweep")
      o.sweep = value();
    else if (a == "--min-size")
      o.min_bytes = parse_size(value());
    else if (a == "--failures") {
      o.mttf_hours = std::atof(value().c_str());
      if (o.mttf_hours <= 0) die("--failures needs a mean time to failure in hours (5 years: 43800)");
    } else if (a == "-h" || a == "--help")
      usage(stdout), std::exit(0);
    else
      usage(stderr), die("unknown argument '" + a + "'");
  }
  if (!o.plot_check.empty() && o.svg.empty()) die("--plot-check needs --svg FILE to draw into");
  if (!o.plot_check.empty() && (!o.cluster.empty() || !o.explain.empty() || !o.fit.empty()))
    die("--plot-check draws a file alone: leave out --cluster, --explain and --fit");
  if (o.cluster.empty() && o.explain.empty() && o.plot_check.empty())
    usage(stderr), die("--cluster FILE is required (or --explain ALGO, or --plot-check CSV)");
  return o;
}

coll::algo::Collective collective_of(const std::string& name) {
  const std::optional<coll::algo::Collective> c = coll::algo::collective_named(name);
  if (c && !coll::algo::is_point_to_point(*c) && *c != coll::algo::Collective::kBarrier) return *c;
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

// "\r" progress on a terminal, twice a second at most.
coll::sim::Progress progress_line() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [last](size_t done, size_t total, double simulated_s) {
    if (!isatty(STDERR_FILENO)) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(500) && done < total) return;
    *last = now;
    std::fprintf(stderr, "\rcollsim: %zu of %zu steps (%.0f%%), at %.1f us simulated   ", done, total,
                 100.0 * static_cast<double>(done) / static_cast<double>(total), simulated_s * 1e6);
  };
}

void end_progress() {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%80s\r", "");
}

void print_prediction(const Options& o, const coll::sim::Cluster& cluster, const coll::sim::Prediction& p) {
  const coll::sim::Fabric& f = cluster.fabric;
  std::printf("collsim: %s of %zu bytes on %d ranks of \"%s\" (%d GPUs a node): %s\n", o.collective.c_str(), o.bytes,
              f.nranks(), cluster.name.c_str(), cluster.gpus_per_node, p.algorithm.c_str());
  std::printf("  time        %.3f us\n", p.result.seconds * 1e6);
  std::printf("  algbw       %.3f GB/s\n", p.algbw_bytes_per_s / 1e9);
  std::printf("  busbw       %.3f GB/s\n", p.busbw_bytes_per_s / 1e9);
  if (p.result.bottleneck >= 0) {
    const std::string as = " (as " + f.link(p.result.bottleneck).name + ")";
    const std::string link = p.result.bottleneck_kind < 0 ? f.link(p.result.bottleneck).name
                             : p.classes_listed
                                 ? "the " + f.kind_name(p.result.bottleneck_kind) + " links of nodes alike" + as
                                 : "every " + f.kind_name(p.result.bottleneck_kind) + " link" + as;
    std::printf("  bottleneck  %s: %.3f us busy at full rate (%.0f%% of the time)\n", link.c_str(),
                p.result.bottleneck_busy_s * 1e6, 100 * p.result.bottleneck_busy_s / p.result.seconds);
  }
  std::printf("  messages    %zu\n", p.result.messages);
  if (p.symmetric_classes == 0 && o.symmetry == "on")
    std::printf("  symmetry    none: the schedules differ from node to node; every rank simulated\n");
  if (p.symmetric_classes > 0)
    std::printf("  symmetry    %s%s\n", p.symmetry.c_str(),
                p.same_dependencies
                    ? ""
                    : "\n              (approximate: which earlier chunk a step waits for differs by node)");
  std::printf("  auto        %s (coll's selector, from the cost model)\n", p.auto_choice.c_str());
}

void run_sweep(const Options& o, const coll::sim::Cluster& cluster, const coll::sim::CollectiveRun& run) {
  const std::vector<std::string> algos = coll::sim::algorithms_for(cluster, run.collective);
  const coll::sim::Sweep s = coll::sim::sweep(cluster, run, o.min_bytes, o.bytes, algos);
  std::printf("\nbusbw (GB/s) by size:\n%12s", "bytes");
  for (const std::string& a : algos) std::printf(" %17s", a.c_str());
  std::printf("  auto\n");
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    std::printf("%12zu", s.sizes[i]);
    for (double b : s.busbw[i])
      if (b > 0)
        std::printf(" %17.3f", b / 1e9);
      else
        std::printf(" %17s", "-");  // not simulated: too big
    std::printf("  %s\n", s.auto_choice[i].c_str());
  }
  for (const coll::sim::Sweep::Crossover& c : s.crossovers)
    std::printf("crossover: from %zu bytes %s is faster than %s\n", c.bytes, c.to.c_str(), c.from.c_str());
  const std::string file = o.cluster.substr(o.cluster.rfind('/') + 1);
  const std::string title = o.collective + " on " + std::to_string(cluster.fabric.nranks()) + " ranks of " + file;
  std::ofstream svg(o.sweep);
  if (!(svg << coll::sim::sweep_svg(s, title))) die("cannot write " + o.sweep);
  std::printf("plot: %s\n", o.sweep.c_str());
  // A PNG too, where gnuplot is installed: it draws the same data.
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) return;
  const std::string data = o.sweep + ".dat",
                    png = o.sweep.substr(
                              0, o.sweep.rfind('.') == std::string::npos ? o.sweep.size() : o.sweep.rfind('.')) +
                          ".png";
  std::ofstream d(data);
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    d << s.sizes[i];
    for (double b : s.busbw[i]) d << ' ' << b / 1e9;
    d << '\n';
  }
  d.close();
  // The script goes to a file: no shell quoting of the title. pngcairo where gnuplot has it.
  const bool cairo = std::system("gnuplot -e 'set terminal pngcairo' > /dev/null 2>&1") == 0;
  std::string quoted_title = title;
  for (char& ch : quoted_title)
    if (ch == '\'') ch = ' ';
  std::ostringstream plot;
  plot << "set terminal " << (cairo ? "pngcairo" : "png") << " noenhanced size 900,540\nset output '" << png
       << "'\nset logscale x 2\nset format x '%.0b %BB'\nset xlabel 'size'\nset ylabel 'busbw (GB/s)'\n"
       << "set key left top\nset title '" << quoted_title << "'\n";
  for (const coll::sim::Sweep::Crossover& c : s.crossovers)
    plot << "set arrow from " << c.bytes << ", graph 0 to " << c.bytes << ", graph 1 nohead dashtype 2\nset label '"
         << c.from << " -> " << c.to << "' at " << c.bytes << ", graph 0.97 offset 0.5,0\n";
  plot << "plot";
  for (size_t a = 0; a < algos.size(); ++a)
    plot << (a ? "," : "") << " '" << data << "' using 1:" << a + 2 << " with linespoints title '" << algos[a] << "'";
  const std::string script = o.sweep + ".gp";
  std::ofstream(script) << plot.str() << "\n";
  std::string quoted = "'";  // the path in single quotes for the shell, its own quotes escaped
  for (char ch : script) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  quoted += "'";
  if (std::system(("gnuplot " + quoted + " 2>/dev/null").c_str()) == 0) std::printf("plot: %s\n", png.c_str());
  std::remove(script.c_str());
  std::remove(data.c_str());
}

void run_failures(const Options& o, const coll::sim::Cluster& cluster, const coll::sim::CollectiveRun& run) {
  const coll::sim::Cables cables = coll::sim::count_cables(cluster);
  std::printf("\nfailures: %ld network cables in the whole cluster (%ld NIC to leaf", cables.total(), cables.nic);
  const char* levels[] = {"leaf", "pod", "plane", "level3", "level4"};
  for (size_t l = 0; l < cables.uplinks.size(); ++l)
    std::printf(", %ld %s uplinks", cables.uplinks[l], l < 5 ? levels[l] : "level");
  std::printf("; NVLink not counted), each failing after %g h on average\n", o.mttf_hours);
  const double first = coll::sim::first_failure_hours(cables.total(), o.mttf_hours);
  std::printf("  the first fails after %.3g hours (%.3g minutes) on average: %g h / %ld\n", first, first * 60,
              o.mttf_hours, cables.total());
  for (const coll::sim::Degraded& d :
       coll::sim::one_cable_lost(cluster, run, coll::sim::algorithms_for(cluster, run.collective))) {
    if (!d.not_simulated.empty())
      std::printf("  %-18s not simulated: %s\n", d.algorithm.c_str(), d.not_simulated.c_str());
    else if (d.failed_link.empty())
      std::printf("  %-18s %.3f us; no switch link carries it\n", d.algorithm.c_str(), d.healthy_s * 1e6);
    else
      std::printf("  %-18s %.3f us; one cable of %s lost: %.3f us, %.3fx\n", d.algorithm.c_str(), d.healthy_s * 1e6,
                  d.failed_link.c_str(), d.failed_s * 1e6, d.failed_s / d.healthy_s);
  }
}

}  // namespace

int run_explain(const Options& o) {
  const coll::sim::Cluster cluster = o.cluster.empty() ? coll::sim::teaching_cluster(o.explain_ranks, o.per_node)
                                                       : coll::sim::load_cluster(o.cluster, o.explain_ranks, o.tuning);
  coll::sim::CollectiveRun run;
  run.collective = collective_of(o.collective);
  run.algorithm = o.explain;
  // Unless asked, 4 elements of 4 bytes a rank: few enough to read.
  run.bytes = o.size_given ? o.bytes : 16 * static_cast<size_t>(o.explain_ranks);
  if (!coll::algo::has_algorithm(run.collective, o.explain))
    die("--explain '" + o.explain + "': " + o.collective + " has " + coll::algo::algorithm_names(run.collective));
  const coll::sim::Explanation e = coll::sim::explain(cluster, run);
  std::fputs(coll::sim::explain_text(e, run).c_str(), stdout);
  if (!o.svg.empty()) {
    std::ofstream svg(o.svg);
    if (!(svg << coll::sim::explain_svg(e, run))) die("cannot write " + o.svg);
    std::printf("animation: %s\n", o.svg.c_str());
  }
  return 0;
}

// The whole of the file an option names.
std::string read_all(const std::string& option, const std::string& path) {
  std::ifstream in(path);
  if (!in) die(option + " " + path + " cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int run_fit(const Options& o) {
  const std::vector<coll::sim::Measured> runs = coll::sim::parse_measured(read_all("--fit", o.fit), o.fit);
  const std::string node_class = coll::sim::load_cluster(o.cluster, 0, o.tuning).node_class;
  const coll::sim::FitResult r =
      coll::sim::fit_node_class([&](int ranks) { return coll::sim::load_cluster(o.cluster, ranks, o.tuning); }, runs);
  // All of it a tuning file: the table as comments.
  std::printf("# %s fitted by collsim --fit to the %zu runs of %s (each simulated %d times)\n", node_class.c_str(),
              runs.size(), o.fit.c_str(), r.evaluations);
  std::printf("# root mean square of log(predicted / measured) %.3f\n", r.rms_log_error);
  for (size_t i = 0; i < runs.size(); ++i)
    std::printf("#   %-14s %-18s %3d ranks %10zu bytes: predicted %10.1f us, measured %10.1f us (%+.0f%%)\n",
                coll::algo::collective_name(runs[i].collective), runs[i].algorithm.c_str(), runs[i].ranks,
                runs[i].bytes, r.predicted_s[i] * 1e6, runs[i].seconds * 1e6,
                100 * (r.predicted_s[i] / runs[i].seconds - 1));
  std::fputs(coll::sim::tuning_lines(node_class, r.link).c_str(), stdout);
  return 0;
}

int run_plot_check(const Options& o) {
  const std::vector<coll::sim::CheckPoint> points =
      coll::sim::parse_check(read_all("--plot-check", o.plot_check), o.plot_check);
  std::ofstream svg(o.svg);
  if (!(svg << coll::sim::check_svg(points, "collsim against coll_perf"))) die("cannot write " + o.svg);
  std::printf("plot: %s (%zu of %zu within 20%%)\n", o.svg.c_str(), coll::sim::count_within_20_percent(points),
              points.size());
  return 0;
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (!o.explain.empty()) return run_explain(o);
    if (!o.fit.empty()) return run_fit(o);
    if (!o.plot_check.empty()) return run_plot_check(o);
    const coll::sim::Cluster cluster = coll::sim::load_cluster(o.cluster, o.ranks, o.tuning);
    coll::sim::CollectiveRun run;
    run.collective = collective_of(o.collective);
    run.bytes = o.bytes;
    run.algorithm = o.algo;
    using Sym = coll::sim::CollectiveRun::Symmetry;
    run.symmetry = o.symmetry == "on" ? Sym::kUse : o.symmetry == "off" ? Sym::kNever : Sym::kAuto;
    if (o.algo != "auto" && !coll::algo::has_algorithm(run.collective, o.algo))
      die("--algo '" + o.algo + "': " + o.collective + " has " + coll::algo::algorithm_names(run.collective));
    std::vector<StepTime> timeline;
    const coll::sim::Progress progress = progress_line();
    const coll::sim::Prediction p =
        coll::sim::predict(cluster, run, o.timeline.empty() ? nullptr : &timeline, &progress);
    end_progress();
    print_prediction(o, cluster, p);
    if (!o.timeline.empty()) {
      write_timeline(o.timeline, timeline);
      std::printf("  timeline    %s (%zu steps)\n", o.timeline.c_str(), timeline.size());
    }
    if (!o.sweep.empty()) run_sweep(o, cluster, run);
    if (o.mttf_hours > 0) run_failures(o, cluster, run);
  } catch (const coll::Error& e) {
    die(e.what());
  }
  return 0;
}
