#include "options.h"

#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace collrun {
namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: collrun -n N [--spares K] [--nodes K [--placement block|cyclic]] [--bind-to core|none]\n"
               "               [--tag-output] [--grace SECONDS] [--] prog [args...]\n"
               "  -n, --np N        number of ranks to start on this machine\n"
               "  --spares K        start K hot spares too, which join when a communicator grows\n"
               "  --nodes K         spread them over K emulated nodes (under scripts/emulate-cluster.sh)\n"
               "  --placement P     block (default: ranks 0..N/K-1 on node 0, ...) or cyclic (rank r on node r mod K)\n"
               "  --bind-to B       core: rank r on the (r mod C)-th of the C logical CPUs allowed; none (default)\n"
               "  --tag-output      prefix every output line with [rank]\n"
               "  --grace SECONDS   after a rank fails, wait this long before ending the others (5)\n");
}

// An option's value, which must be one of two words; else exits with code 2.
std::string one_of(const char* option, const std::string& value, const char* a, const char* b) {
  if (value != a && value != b) {
    std::fprintf(stderr, "collrun: %s %s: %s or %s\n", option, value.c_str(), a, b);
    std::exit(2);
  }
  return value;
}

// An option's number, the whole of its value, from `least` to 1e9: decimal
// digits, and for a floating-point T a fraction too; else exits with code 2.
template <typename T>
T number(const char* option, const char* value, T least) {
  constexpr bool whole = !std::is_floating_point_v<T>;
  const char* allowed = whole ? "0123456789" : "0123456789.";
  char* end = nullptr;
  errno = 0;
  const double v = whole ? static_cast<double>(std::strtoll(value, &end, 10)) : std::strtod(value, &end);
  const bool digits = value[0] != '\0' && std::strspn(value, allowed) == std::strlen(value);
  if (!digits || end == value || *end != '\0' || errno != 0 || v < static_cast<double>(least) || v > 1e9) {
    std::fprintf(stderr, "collrun: %s %s: must be a%s number from %g to 1e9\n", option, value, whole ? " whole" : "",
                 static_cast<double>(least));
    std::exit(2);
  }
  return static_cast<T>(v);
}

}  // namespace

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-n" || a == "-np" || a == "--np") && i + 1 < argc) {
      o.nranks = number(a.c_str(), argv[++i], 1);
    } else if (a == "--spares" && i + 1 < argc) {
      o.spares = number("--spares", argv[++i], 0);
    } else if (a == "--nodes" && i + 1 < argc) {
      o.nodes = number("--nodes", argv[++i], 1);
    } else if (a == "--placement" && i + 1 < argc) {
      o.cyclic = one_of("--placement", argv[++i], "block", "cyclic") == "cyclic";
    } else if (a == "--bind-to" && i + 1 < argc) {
      o.bind_core = one_of("--bind-to", argv[++i], "core", "none") == "core";
    } else if (a == "--tag-output") {
      o.tag_output = true;
    } else if (a == "--grace" && i + 1 < argc) {
      o.grace_s = number("--grace", argv[++i], 0.0);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "collrun: unknown option %s\n", a.c_str());
      usage(stderr);
      std::exit(2);
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.argv.push_back(argv[i]);
  o.argv.push_back(nullptr);
  if (o.nranks < 1 || o.argv.size() < 2) {
    std::fprintf(stderr, "collrun: need -n N (N >= 1) and a program to run\n");
    usage(stderr);
    std::exit(2);
  }
  return o;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    std::fprintf(stderr, "collrun: --bind-to core: cannot read the CPUs allowed (sched_getaffinity: %s)\n",
                 std::strerror(errno));
    std::exit(2);
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace collrun
