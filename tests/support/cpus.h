// The CPUs the calling thread may run on, in order: what a test or a
// benchmark that pins threads, or checks a binding, starts from.
#pragma once

#include <sched.h>

#include <vector>

namespace coll::testing {

inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

}  // namespace coll::testing
