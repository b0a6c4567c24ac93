#include "topology/bind.h"

#include "base/error.h"
#include "topology/paths.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace coll::topo {
namespace {

cpu_set_t to_cpu_set(const std::string& list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const std::vector<bool> cpus = parse_cpu_list(list);
  for (size_t cpu = 0; cpu < cpus.size() && cpu < CPU_SETSIZE; ++cpu)
    if (cpus[cpu]) CPU_SET(cpu, &set);
  return set;
}

std::string to_list(const cpu_set_t& set) {
  std::vector<bool> cpus(CPU_SETSIZE, false);
  for (size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) cpus[cpu] = CPU_ISSET(cpu, &set);
  return cpu_list(cpus);
}

}  // namespace

Placement place(const Topology& t, int local_rank, int local_size) {
  Placement p;
  if (local_rank < 0 || local_size <= 0) return p;
  int numa_node = -1;
  if (!t.gpus.empty() && local_size <= static_cast<int>(t.gpus.size())) {
    p.gpu = local_rank;
    numa_node = t.numa_of(t.gpus[static_cast<size_t>(local_rank)]);
    std::vector<int> nic_of = nic_for_each_gpu(t);
    if (!nic_of.empty()) {
      const Node& nic =
          t.nodes[static_cast<size_t>(t.nics[static_cast<size_t>(nic_of[static_cast<size_t>(local_rank)])])];
      p.nic = nic.names.empty() ? (nic.has_pci ? nic.pci.to_string() : "") : nic.names[0];
    }
  } else if (!t.numas.empty()) {
    // Local rank i of L gets NUMA nodes [i*N/L, (i+1)*N/L) of N, at least
    // one: one rank per node keeps the whole node, N ranks get one each.
    const size_t n = t.numas.size(), l = static_cast<size_t>(local_size), i = static_cast<size_t>(local_rank);
    const size_t first = i * n / l, last = std::max(first + 1, (i + 1) * n / l);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (size_t k = first; k < last && k < n; ++k) {
      cpu_set_t one = to_cpu_set(t.nodes[static_cast<size_t>(t.numas[k])].cpuset);
      CPU_OR(&all, &all, &one);
    }
    p.numa = t.nodes[static_cast<size_t>(t.numas[first])].os_index;
    p.cpus = to_list(all);
    return p;
  }
  if (numa_node >= 0) {
    p.numa = t.nodes[static_cast<size_t>(numa_node)].os_index;
    p.cpus = t.nodes[static_cast<size_t>(numa_node)].cpuset;
  }
  return p;
}

std::string bind_to(const Placement& p) {
  if (p.cpus.empty()) return "not bound: no NUMA node known";
  cpu_set_t now;
  if (sched_getaffinity(0, sizeof(now), &now) != 0)
    return str_cat("not bound: sched_getaffinity: ", std::strerror(errno));
  cpu_set_t want = to_cpu_set(p.cpus), both;
  CPU_AND(&both, &want, &now);
  if (CPU_COUNT(&both) == 0)
    return str_cat("not bound: NUMA ", p.numa, "'s CPUs ", p.cpus, " are not among those allowed (", to_list(now), ")");
  if (CPU_EQUAL(&both, &now)) return str_cat("already on CPUs ", to_list(now), " (NUMA ", p.numa, ")");
  if (sched_setaffinity(0, sizeof(both), &both) != 0)
    return str_cat("not bound: sched_setaffinity: ", std::strerror(errno));
  return str_cat("bound to CPUs ", to_list(both), " (NUMA ", p.numa, ")");
}

}  // namespace coll::topo
