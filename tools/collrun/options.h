// collrun's command line, and the CPUs --bind-to core deals the ranks.
#pragma once

#include <vector>

namespace collrun {

struct Options {
  int nranks = 0;
  int spares = 0;  // --spares
  int nodes = 0;   // emulated nodes (--nodes); 0: this machine only
  bool cyclic = false;
  bool tag_output = false;
  bool bind_core = false;  // --bind-to core
  double grace_s = 5.0;
  std::vector<char*> argv;  // the program and its arguments, null-terminated for execvp
};

// Exits with 2 and the usage on a wrong command line, 0 after --help.
Options parse(int argc, char** argv);

// The CPUs this process may use, in order: --bind-to core's cores. Exits
// (2) where they cannot be read, before any rank starts.
std::vector<int> allowed_cpus();

}  // namespace collrun
