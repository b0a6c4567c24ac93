#include "sim/failures.h"

namespace coll::sim {

long Cables::total() const {
  long n = nic;
  for (long u : uplinks) n += u;
  return n;
}

Cables count_cables(const Cluster& c) {
  Cables cables;
  cables.nic = static_cast<long>(c.nodes) * c.nics_per_node;
  for (const std::vector<int>& level : c.uplinks) {
    long n = 0;
    for (int l : level) n += c.fabric.link(l).cables;
    cables.uplinks.push_back(n);
  }
  return cables;
}

std::vector<Degraded> one_cable_lost(const Cluster& cluster, const CollectiveRun& run,
                                     const std::vector<std::string>& algorithms) {
  std::vector<Degraded> out;
  for (const std::string& name : algorithms) {
    CollectiveRun r = run;
    r.algorithm = name;
    Prediction healthy;
    try {
      healthy = predict(cluster, r);
    } catch (const TooBig& e) {
      out.push_back(Degraded{name, 0, 0, "", e.what()});
      continue;
    }
    Degraded d{name, healthy.result.seconds, healthy.result.seconds, "", ""};
    int busiest = -1;
    const std::vector<double>& carried = healthy.result.link_bytes;
    for (const auto* links : {&cluster.uplinks, &cluster.downlinks})
      for (const std::vector<int>& level : *links)
        for (int l : level)
          // Of the links with a cable to spare: a link of one cable lost cuts the cluster in two.
          if (carried[static_cast<size_t>(l)] > 0 && cluster.fabric.link(l).cables > 1 &&
              (busiest < 0 || carried[static_cast<size_t>(l)] > carried[static_cast<size_t>(busiest)]))
            busiest = l;
    if (busiest >= 0) {
      Cluster failed = cluster;
      d.failed_link = failed.fabric.link(busiest).name;
      fail_cable(failed.fabric, d.failed_link, "--failures");
      d.failed_s = predict(failed, r).result.seconds;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace coll::sim
