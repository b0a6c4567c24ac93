// A cluster file of CPU nodes for the simulator's tests of measured link
// parameters (sim_tuning_test, sim_fit_test).
#pragma once

#include <string>

namespace coll::testing {

// One node of 4 CPU ranks, each core 8 GB/s, their memory 12 GB/s in all; more nodes or ranks when asked.
inline std::string cpu_node(int nodes = 1, int ranks = 4) {
  return R"({"nodes": )" + std::to_string(nodes) + R"(, "node": {"gpus": )" + std::to_string(ranks) +
         R"(, "nics": 1, "gpu_link_gbps": 64,
             "memory_gbps": 96}, "nic_gbps": 8, "latency_us": {"gpu_link": 0, "hop": 0},
             "costs": {"alpha_us": 0, "gamma_ns_per_byte": 0}, "classes": {"node": "shm", "network": "tcp"},
             "network": {"levels": [{"ports": 32}]}})";
}

}  // namespace coll::testing
