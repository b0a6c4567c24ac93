// The simulator with measured link parameters: a node's memory shared by
// its ranks' messages, a tuning file's classes mapped onto the cluster's
// links, and the errors of a bad file. Closed forms computed by hand. The
// fit of those parameters to runs: sim_fit_test.
#include "algorithms/cost_model.h"
#include "base/error.h"
#include "sim/cluster.h"
#include "sim/collective_run.h"
#include "sim/engine.h"
#include "sim/tuning.h"
#include "support/cpu_node.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace coll::sim {
namespace {

using coll::testing::cpu_node;

// The same cluster with no memory: nodes of GPUs.
std::string without_memory(std::string cluster) {
  return cluster.replace(cluster.find(R"("memory_gbps": 96)"), 17, R"("memory_gbps": 0)");
}

// What parsing `cluster` under the tuning `text` throws, or "accepted".
std::string tuning_error(const std::string& cluster, const std::string& text) {
  const Tuning t{text, "tuning.txt"};
  try {
    parse_cluster(cluster, "c.json", 0, &t);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

algo::Schedule one_step(algo::OpKind kind, int peer, size_t bytes) {
  algo::Schedule s;
  algo::Step step;
  step.kind = kind;
  step.peer = peer;
  step.bytes = bytes;
  s.steps.push_back(step);
  return s;
}

// `bytes` from each `from` to its `to`, on `ranks` ranks.
std::vector<algo::Schedule> pairs(const std::vector<std::pair<int, int>>& messages, int ranks = 4,
                                  size_t bytes = 1 << 20) {
  std::vector<algo::Schedule> s(static_cast<size_t>(ranks));
  for (auto [from, to] : messages) {
    s[static_cast<size_t>(from)].steps.push_back(one_step(algo::OpKind::kSend, to, bytes).steps[0]);
    s[static_cast<size_t>(to)].steps.push_back(one_step(algo::OpKind::kRecv, from, bytes).steps[0]);
  }
  return s;
}

TEST(Memory, ACpuRanksCoreAndItsNodesMemoryAreShared) {
  const Cluster c = parse_cluster(cpu_node(), "t");
  const std::vector<int> route = c.fabric.route(0, 1);
  ASSERT_EQ(route.size(), 3u);  // the sender's core, the node's memory, the receiver's core
  EXPECT_EQ(c.fabric.link(route[0]).name, "node0.gpu0.core");
  EXPECT_EQ(c.fabric.link(route[1]).name, "node0.memory");
  EXPECT_EQ(c.fabric.route(1, 0)[2], route[0]);  // one core copies both ways
  // Alone, a message goes at its ranks' 8 GB/s: the memory's 12 do not bind.
  EXPECT_NEAR(simulate(pairs({{0, 1}}), c.fabric, c.costs).seconds, (1 << 20) / 8e9, 1e-12);
  // Two pairs apart: 12 GB/s of memory between them, 6 each.
  const Result apart = simulate(pairs({{0, 1}, {2, 3}}), c.fabric, c.costs);
  EXPECT_NEAR(apart.seconds, (1 << 20) / 6e9, 1e-12);
  EXPECT_EQ(c.fabric.link(apart.bottleneck).name, "node0.memory");
  // A ring of three: each core copies one message out and one in, 4 GB/s each.
  const Result ring = simulate(pairs({{0, 1}, {1, 2}, {2, 0}}), c.fabric, c.costs);
  EXPECT_NEAR(ring.seconds, (1 << 20) / 4e9, 1e-12);
  // A local copy takes the same core and memory: alone, 8 GB/s; beside a message, 4.
  std::vector<algo::Schedule> copy = pairs({{0, 1}});
  algo::Step local = one_step(algo::OpKind::kCopy, -1, 1 << 20).steps[0];
  copy[0].steps.push_back(local);
  EXPECT_NEAR(simulate(copy, c.fabric, c.costs).seconds, (2 << 20) / 8e9, 1e-12);
  // Without memory_gbps a node has none, and GPUs their two links.
  const Cluster g = parse_cluster(without_memory(cpu_node()), "t");
  EXPECT_EQ(g.fabric.route(0, 1).size(), 2u);
  EXPECT_TRUE(g.fabric.local_route(0).empty());
}

TEST(Memory, RanksThatOutnumberTheCoresTakeTurnsOnThem) {
  std::string two_cores = cpu_node();
  two_cores.replace(two_cores.find(R"("memory_gbps")"), 13, R"("cores": 2, "memory_gbps")");
  const Cluster c = parse_cluster(two_cores, "t");
  // Rank i on core i % 2: ranks 0 and 2 share one.
  EXPECT_EQ(c.fabric.link(c.fabric.route(0, 1)[0]).name, "node0.core0");
  EXPECT_EQ(c.fabric.link(c.fabric.route(0, 1)[2]).name, "node0.core1");
  EXPECT_EQ(c.fabric.route(0, 2)[2], c.fabric.route(0, 2)[0]);
  // Between two ranks of one core, it copies the message out and in: 4 of its 8 GB/s.
  EXPECT_NEAR(simulate(pairs({{0, 2}}), c.fabric, c.costs).seconds, (1 << 20) / 4e9, 1e-12);
  // Two pairs: each core copies two messages, 4 GB/s each, below the memory's 6 each.
  const Result both = simulate(pairs({{0, 1}, {2, 3}}), c.fabric, c.costs);
  EXPECT_NEAR(both.seconds, (1 << 20) / 4e9, 1e-12);
  EXPECT_EQ(c.fabric.link(both.bottleneck).name.substr(0, 10), "node0.core");
  // A core each (no cores given), the memory binds: 6 GB/s.
  EXPECT_NEAR(simulate(pairs({{0, 1}, {2, 3}}), parse_cluster(cpu_node(), "t").fabric, c.costs).seconds,
              (1 << 20) / 6e9, 1e-12);
  // As many cores as ranks, or more: a core each, as without.
  std::string nine_cores = two_cores;
  nine_cores.replace(nine_cores.find(R"("cores": 2)"), 10, R"("cores": 9)");
  const Cluster each = parse_cluster(nine_cores, "t");
  EXPECT_EQ(each.fabric.link(each.fabric.route(0, 2)[2]).name, "node0.gpu2.core");
  // A tuning file gives the same.
  const Tuning t{"shm.cores = 2\n", "t"};
  const Cluster tuned = parse_cluster(cpu_node(), "t", 0, &t);
  EXPECT_EQ(tuned.fabric.link(tuned.fabric.route(0, 2)[0]).name, "node0.core0");
  EXPECT_EQ(tuned.fabric.route(0, 2)[2], tuned.fabric.route(0, 2)[0]);
  // A count that is no whole number or negative, the network's class, or nodes of GPUs: refused.
  EXPECT_NE(tuning_error(cpu_node(), "shm.cores = 1.5\n").find("shm.cores is 1.5; a whole number"), std::string::npos);
  EXPECT_EQ(tuning_error(cpu_node(), "shm.cores = 0\n"), "accepted");  // a core each, as the file has it
  EXPECT_NE(tuning_error(cpu_node(), "shm.cores = -2\n").find("must not be negative"), std::string::npos);
  EXPECT_NE(tuning_error(cpu_node(), "tcp.cores = 2\n")
                .find("tcp.cores: the CPU ranks' cores, weights and turn are the node class's (shm.cores)"),
            std::string::npos);
  EXPECT_NE(tuning_error(without_memory(cpu_node()), "shm.cores = 2\n").find("shm.cores is for nodes of CPU ranks"),
            std::string::npos);
  EXPECT_THROW(parse_cluster(without_memory(two_cores), "t"), Error);
}

TEST(Memory, ACopysWeightOnACoreIsTheTuningFiles) {
  const Tuning t{"shm.cores = 2\nshm.same_core_read_weight = 0.5\nshm.local_weight = 0.5\nshm.reduce_weight = 1.5\n",
                 "t"};
  const Cluster c = parse_cluster(cpu_node(), "t", 0, &t);
  const double mib = 1 << 20;
  // Between cores, a message weighs 1 on each, as before: 8 GB/s.
  EXPECT_NEAR(simulate(pairs({{0, 1}}), c.fabric, c.costs).seconds, mib / 8e9, 1e-12);
  // Between two ranks of core 0: copied in (1), then read from the core's own cache (0.5).
  EXPECT_NEAR(simulate(pairs({{0, 2}}), c.fabric, c.costs).seconds, 1.5 * mib / 8e9, 1e-12);
  // A local copy weighs 0.5 on its core and the memory; a local reduction 0.5 x 1.5.
  for (auto [kind, weight] : {std::pair{algo::OpKind::kCopy, 0.5}, std::pair{algo::OpKind::kReduce, 0.75}}) {
    std::vector<algo::Schedule> local(4);
    local[0] = one_step(kind, -1, 1 << 20);
    EXPECT_NEAR(simulate(local, c.fabric, c.costs).seconds, weight * mib / 8e9, 1e-12);
  }
  // A message its receiver reduces weighs 1.5 on the receiver's core, 1 on the sender's and the memory.
  std::vector<algo::Schedule> reducing(4);
  reducing[0] = one_step(algo::OpKind::kSend, 1, 1 << 20);
  reducing[1] = one_step(algo::OpKind::kRecvReduce, 0, 1 << 20);
  EXPECT_NEAR(simulate(reducing, c.fabric, c.costs).seconds, 1.5 * mib / 8e9, 1e-12);
  // Without the lines, every weight is 1: the model as it was.
  const Tuning cores_only{"shm.cores = 2\n", "t"};
  const Cluster plain = parse_cluster(cpu_node(), "t", 0, &cores_only);
  EXPECT_NEAR(simulate(pairs({{0, 2}}), plain.fabric, plain.costs).seconds, 2 * mib / 8e9, 1e-12);
  // A weight of 0, one of the network's class, or on nodes of GPUs: refused.
  EXPECT_NE(tuning_error(cpu_node(), "shm.local_weight = 0\n").find("shm.local_weight is 0; a weight above 0"),
            std::string::npos);
  EXPECT_NE(tuning_error(cpu_node(), "tcp.reduce_weight = 2\n").find("weights and turn are the node class's"),
            std::string::npos);
  EXPECT_NE(tuning_error(without_memory(cpu_node()), "shm.same_core_read_weight = 0.5\n")
                .find("shm.same_core_read_weight is for nodes of CPU ranks"),
            std::string::npos);
}

TEST(Memory, AMessageWaitsForTheTurnsOfTheOtherRanksOfItsReceiversCore) {
  // 8 ranks on 2 cores: 0, 2, 4, 6 on core 0. A message to 2 waits 3 us for each of the 3 others.
  const Tuning t{"shm.cores = 2\nshm.turn_us = 3\n", "t"}, no_turn{"shm.cores = 2\n", "t"};
  // How much longer one message takes with the turn than without, on `nodes` nodes of `ranks`.
  const auto waits = [&](int ranks, int from, int to, size_t bytes, int nodes = 1) {
    const Cluster c = parse_cluster(cpu_node(nodes, ranks), "t", 0, &t);
    const Cluster plain = parse_cluster(cpu_node(nodes, ranks), "t", 0, &no_turn);
    const std::vector<algo::Schedule> s = pairs({{from, to}}, nodes * ranks, bytes);
    return simulate(s, c.fabric, c.costs).seconds - simulate(s, plain.fabric, plain.costs).seconds;
  };
  EXPECT_NEAR(waits(8, 0, 2, 4), 9e-6, 1e-12);
  EXPECT_NEAR(waits(8, 6, 0, 4), 9e-6, 1e-12);
  EXPECT_NEAR(waits(8, 0, 1, 4), 9e-6, 1e-12);  // from the other core, the same
  // 4 ranks on 2 cores: one other rank each, whatever the message's size.
  EXPECT_NEAR(waits(4, 0, 2, 1 << 20), 3e-6, 1e-12);
  EXPECT_NEAR(waits(4, 1, 2, 1 << 20), 3e-6, 1e-12);
  // 3 ranks on 2 cores: 0 and 2 share core 0, 1 has core 1 to itself. The receiver's core counts.
  EXPECT_NEAR(waits(3, 1, 0, 4), 3e-6, 1e-12);
  EXPECT_NEAR(waits(3, 0, 1, 4), 0, 1e-12);
  EXPECT_NEAR(waits(3, 2, 1, 4), 0, 1e-12);
  // A core each: nothing to wait for.
  EXPECT_NEAR(waits(2, 0, 1, 4), 0, 1e-12);
  // Between nodes, nothing either: 0 on node 0 to 8, on node 1's shared core 0; inside node 1 it waits.
  EXPECT_NEAR(waits(8, 0, 8, 4, 2), 0, 1e-12);
  EXPECT_NEAR(waits(8, 8, 10, 4, 2), 9e-6, 1e-12);
  // On 2 nodes of 8, a run that uses the symmetry waits as one that simulates every rank.
  const Cluster two = parse_cluster(cpu_node(2, 8), "t", 0, &t),
                two_plain = parse_cluster(cpu_node(2, 8), "t", 0, &no_turn);
  CollectiveRun run{algo::Collective::kAllreduce, 64 << 10, 4, "halving_doubling"};
  run.symmetry = CollectiveRun::Symmetry::kNever;
  const double every = predict(two, run).result.seconds;
  EXPECT_GT(every, predict(two_plain, run).result.seconds + 2 * 9e-6);  // at least two steps in a node, each way
  run.symmetry = CollectiveRun::Symmetry::kUse;
  const Prediction sym = predict(two, run);
  ASSERT_GT(sym.symmetric_classes, 0);
  EXPECT_NEAR(sym.result.seconds, every, every * 1e-6);
  // 0 turns it off; more than 10 ms, one of the network's class, or on nodes of GPUs: refused.
  EXPECT_EQ(tuning_error(cpu_node(), "shm.turn_us = 0\n"), "accepted");
  EXPECT_NE(tuning_error(cpu_node(), "shm.turn_us = 20000\n").find("shm.turn_us is 20000; a time of 0 to 10000"),
            std::string::npos);
  EXPECT_NE(tuning_error(cpu_node(), "tcp.turn_us = 2\n").find("weights and turn are the node class's"),
            std::string::npos);
  EXPECT_NE(tuning_error(without_memory(cpu_node()), "shm.turn_us = 2\n").find("shm.turn_us is for nodes of CPU ranks"),
            std::string::npos);
}

TEST(Memory, TheSymmetricRunPoolsTheMemoryOfEveryNode) {
  // 8 nodes of 4: the ring inside every node passes its memory; both runs see the same load. The
  // allgather's own block is a local copy through the core and the memory too.
  const Cluster c = parse_cluster(cpu_node(8), "t");
  for (algo::Collective collective : {algo::Collective::kAllreduce, algo::Collective::kAllgather}) {
    CollectiveRun run{collective, 16 << 20, 4, "ring"};
    run.symmetry = CollectiveRun::Symmetry::kNever;
    const double every = predict(c, run).result.seconds;
    run.symmetry = CollectiveRun::Symmetry::kUse;
    const Prediction sym = predict(c, run);
    ASSERT_GT(sym.symmetric_classes, 0);
    EXPECT_NEAR(sym.result.seconds, every, every * 1e-6) << algo::collective_name(collective);
  }
}

TEST(Tuning, TheCacheSpeedsTheShareOfTheBuffersItHolds) {
  algo::LinkModel m;
  m.beta_ns_per_byte = 0.2;
  m.node_beta_ns_per_byte = 0.1;
  EXPECT_EQ(m.at_size(1 << 20, 2).beta_ns_per_byte, 0.2);  // no cache: itself
  m.cache_bytes = 4 << 20;
  m.cache_beta_ns_per_byte = 0.05;
  EXPECT_DOUBLE_EQ(m.at_size(2 << 20, 2).beta_ns_per_byte, 0.05);  // 2 ranks of 2 MiB: all held
  const algo::LinkModel quarter = m.at_size(8 << 20, 2);           // 16 MiB on the node: a quarter held
  EXPECT_DOUBLE_EQ(quarter.beta_ns_per_byte, 0.2 - 0.15 / 4);
  EXPECT_DOUBLE_EQ(quarter.node_beta_ns_per_byte, 0.1 * quarter.beta_ns_per_byte / 0.2);
  EXPECT_DOUBLE_EQ(m.at_size(8 << 20, 1).beta_ns_per_byte, 0.2 - 0.15 / 2);  // alone: half held
  // The simulator's cluster at a size is the same arithmetic on its links.
  const Tuning t{"shm.beta_ns_per_byte = 0.2\nshm.cache_bytes = 4194304\nshm.cache_beta_ns_per_byte = 0.05\n", "t"};
  const Cluster c = parse_cluster(cpu_node(), "t", 2, &t);
  const Cluster sized = at_size(c, 8 << 20);
  EXPECT_NEAR(sized.gpu_link_bytes_per_s, 1e9 / (0.2 - 0.15 / 4), 1e-3);
  EXPECT_NEAR(sized.fabric.link(sized.fabric.place(1).gpu_up).bytes_per_s, 1e9 / (0.2 - 0.15 / 4), 1e-3);
}

TEST(Tuning, WhatTheCacheHoldsIsEachRanksInputAndOutput) {
  using algo::Collective;
  algo::CollShape s;
  s.nranks = 4;
  s.count = 10;  // elements: the vector; allgather's and reduce_scatter's part; alltoall's block
  s.elem_size = 8;
  const auto bytes = [&](Collective c) {
    s.collective = c;
    s.send_offset.reset();
    const double out_of_place = algo::buffer_bytes(s);
    s.send_offset = 0;  // in place: every rank must price the same, whichever its call is
    EXPECT_EQ(algo::buffer_bytes(s), out_of_place) << algo::collective_name(c);
    return out_of_place;
  };
  EXPECT_EQ(bytes(Collective::kAllreduce), 160);
  for (Collective c : {Collective::kAllgather, Collective::kReduceScatter})
    EXPECT_EQ(bytes(c), 400) << algo::collective_name(c);  // a part and the 4 parts
  EXPECT_EQ(bytes(Collective::kAlltoall), 640);
  for (Collective c : {Collective::kReduce, Collective::kBroadcast, Collective::kSend, Collective::kRecv})
    EXPECT_EQ(bytes(c), 80) << algo::collective_name(c);  // one vector (reduce's output is the root's alone)
  EXPECT_EQ(bytes(Collective::kBarrier), 0);

  // The simulator sizes a run's cluster by them: a cache of 4 MiB holds 2 ranks' allreduce of 1 MiB
  // (4 MiB of buffers), half of one of 2 MiB, and 2 of the 3 MiB of each rank's allgather of 2 MiB.
  const Tuning t{"shm.beta_ns_per_byte = 0.2\nshm.cache_bytes = 4194304\nshm.cache_beta_ns_per_byte = 0.05\n", "t"};
  const Cluster c = parse_cluster(cpu_node(), "t", 2, &t);
  const auto beta = [&](Collective collective, size_t bytes) {
    return 1e9 / sized_for(c, CollectiveRun{collective, bytes, 4, "ring"})->gpu_link_bytes_per_s;
  };
  EXPECT_NEAR(beta(Collective::kAllreduce, 1 << 20), 0.05, 1e-12);
  EXPECT_NEAR(beta(Collective::kAllreduce, 2 << 20), 0.2 - 0.15 / 2, 1e-12);
  EXPECT_NEAR(beta(Collective::kAllgather, 2 << 20), 0.2 - 0.15 * 4 / 6, 1e-12);
  EXPECT_FALSE(sized_for(parse_cluster(cpu_node(), "t", 2), CollectiveRun{}).has_value());  // no cache
}

TEST(Tuning, ASecondCacheSpeedsWhatItHoldsBeyondTheFirst) {
  algo::LinkModel m;
  m.beta_ns_per_byte = 0.3;
  m.cache_bytes = 4 << 20;
  m.cache_beta_ns_per_byte = 0.05;
  m.cache2_bytes = 32 << 20;
  m.cache2_beta_ns_per_byte = 0.1;
  EXPECT_DOUBLE_EQ(m.at_size(2 << 20, 2).beta_ns_per_byte, 0.05);  // 4 MiB on the node: all in the first
  EXPECT_DOUBLE_EQ(m.at_size(8 << 20, 2).beta_ns_per_byte, 0.05 / 4 + 0.1 * 3 / 4);  // 16 MiB: a quarter, the rest
  EXPECT_DOUBLE_EQ(m.at_size(32 << 20, 2).beta_ns_per_byte, 0.05 / 16 + 0.1 * 7 / 16 + 0.3 / 2);  // 64 MiB
  m.cache2_beta_ns_per_byte = 0;  // no rate: no second cache
  EXPECT_DOUBLE_EQ(m.at_size(8 << 20, 2).beta_ns_per_byte, 0.3 - 0.25 / 4);
  m.cache2_beta_ns_per_byte = 0.1;
  m.cache2_bytes = 1 << 20;  // smaller than the first: nothing beyond it
  EXPECT_DOUBLE_EQ(m.at_size(8 << 20, 2).beta_ns_per_byte, 0.3 - 0.25 / 4);
  // A tuning file gives both to the simulator's cluster; a second cache without the first, or not
  // larger, is refused.
  for (const char* bad : {"shm.cache2_bytes = 33554432\nshm.cache2_beta_ns_per_byte = 0.1\n",
                          "shm.cache_bytes = 4194304\nshm.cache_beta_ns_per_byte = 0.05\n"
                          "shm.cache2_bytes = 4194304\nshm.cache2_beta_ns_per_byte = 0.1\n"}) {
    const Tuning no_first{bad, "bad"};
    EXPECT_THROW(parse_cluster(cpu_node(), "t", 2, &no_first), Error) << bad;
  }
  const Tuning t{
      "shm.beta_ns_per_byte = 0.3\nshm.cache_bytes = 4194304\nshm.cache_beta_ns_per_byte = 0.05\n"
      "shm.cache2_bytes = 33554432\nshm.cache2_beta_ns_per_byte = 0.1\n",
      "t"};
  const Cluster sized = at_size(parse_cluster(cpu_node(), "t", 2, &t), 8 << 20);
  EXPECT_NEAR(sized.gpu_link_bytes_per_s, 1e9 / (0.05 / 4 + 0.1 * 3 / 4), 1e-3);
}

TEST(Tuning, ItsClassesSetTheClustersLinks) {
  const Tuning t{R"(# as scripts/calibrate.sh writes it
shm.alpha_us = 3
shm.beta_ns_per_byte = 0.25        # 4 GB/s a rank
shm.node_beta_ns_per_byte = 0.1    # 10 GB/s the node
shm.gamma_ns_per_byte = 0.05
shm.chunk_bytes = 131072
tcp.alpha_us = 13                  # 10 us beyond shm's, over 2 hops
tcp.beta_ns_per_byte = 8           # 1 Gbit/s
tcp.chunk_bytes = 524288
)",
                 "tuning.txt"};
  const Cluster one = parse_cluster(cpu_node(2), "t", 4, &t);
  EXPECT_DOUBLE_EQ(one.gpu_link_bytes_per_s, 4e9);
  EXPECT_DOUBLE_EQ(one.memory_bytes_per_s, 1e10);
  EXPECT_DOUBLE_EQ(one.nic_bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(one.costs.alpha_s, 3e-6);
  EXPECT_DOUBLE_EQ(one.costs.gamma_s_per_byte, 0.05e-9);
  EXPECT_EQ(one.chunk_bytes, 131072u);  // one node: shm's chunk
  const Cluster both = parse_cluster(cpu_node(2), "t", 8, &t);
  EXPECT_EQ(both.chunk_bytes, 524288u);  // across nodes: tcp's
  // A message between nodes: alpha at the sender, tcp's latency beyond it on the way, 1 MiB at 1 Gbit/s.
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 4, 1 << 20);
  s[4] = one_step(algo::OpKind::kRecv, 0, 1 << 20);
  EXPECT_NEAR(simulate(s, both.fabric, both.costs).seconds, 13e-6 + (1 << 20) / 1.25e8, 1e-12);
  // The selector's model inside collsim carries the same numbers, by the same names.
  const algo::CostModel m = cost_model_of(both);
  EXPECT_NEAR(m.link("tcp").alpha_us, 13, 1e-9);
  EXPECT_NEAR(m.link("shm").beta_ns_per_byte, 0.25, 1e-12);
  EXPECT_NEAR(m.link("shm").node_beta_ns_per_byte, 0.1, 1e-12);
}

TEST(Tuning, WhatItDoesNotSetStaysTheClusterFiles) {
  // Leaves of one port under a spine: a message from node 0 to node 1 crosses 2 NICs and 2 leaf links, 2 us each.
  const std::string wide = R"({"nodes": 2, "node": {"gpus": 1, "nics": 1, "gpu_link_gbps": 64, "memory_gbps": 96},
      "nic_gbps": 8, "latency_us": {"gpu_link": 0, "hop": 2}, "costs": {"alpha_us": 1, "gamma_ns_per_byte": 0},
      "classes": {"node": "shm", "network": "tcp"}, "network": {"levels": [{"ports": 1}, {"groups": 2}]}})";
  std::vector<algo::Schedule> s(2);
  s[0] = one_step(algo::OpKind::kSend, 1, 8);
  s[1] = one_step(algo::OpKind::kRecv, 0, 8);
  const auto time_with = [&](const std::string& text) {
    const Tuning t{text, "tuning.txt"};
    const Cluster c = parse_cluster(wide, "t", 0, &t);
    return simulate(s, c.fabric, c.costs).seconds - 8 / 1e9;  // less the 8 bytes at 1 GB/s
  };
  EXPECT_NEAR(time_with(""), 1e-6 + 8e-6, 1e-12);
  EXPECT_NEAR(time_with("shm.gamma_ns_per_byte = 0.01\n"), 1e-6 + 8e-6, 1e-12);
  // The network's alpha is a message's between nodes under one leaf: its NICs' 5 us each; the leaves keep 2.
  EXPECT_NEAR(time_with("tcp.alpha_us = 11\n"), 1e-6 + 10e-6 + 4e-6, 1e-12);
  // The node's alpha alone: the NICs keep theirs.
  EXPECT_NEAR(time_with("shm.alpha_us = 3\n"), 3e-6 + 8e-6, 1e-12);
}

TEST(Tuning, ABadFileOrClassIsNamed) {
  EXPECT_NE(tuning_error(cpu_node(), "shm.alpha_us 3\n").find("tuning.txt:1: expected 'class.parameter = number'"),
            std::string::npos);
  // The cluster's classes are shm and tcp: an ib line does not apply to it.
  EXPECT_NE(tuning_error(cpu_node(), "\nib.alpha_us = 3\n").find("tuning.txt:2: unknown parameter 'ib.alpha_us'"),
            std::string::npos);
  EXPECT_NE(tuning_error(cpu_node(), "tcp.beta_ns_per_byte = 0\n").find("must be above 0"), std::string::npos);
  std::string same = cpu_node();
  same.replace(same.find(R"("network": "tcp")"), 16, R"("network": "shm")");
  EXPECT_NE(tuning_error(same, "").find("classes.node and classes.network are both 'shm'"), std::string::npos);
  EXPECT_NE(tuning_error(cpu_node(), "tcp.alpha_us = 0.5\nshm.alpha_us = 3\n").find("tcp.alpha_us (0.5) is below"),
            std::string::npos);
  std::string classes = cpu_node();
  classes.replace(classes.find(R"("node": "shm")"), 13, R"("nodes": "shm")");
  EXPECT_NE(tuning_error(classes, "").find("classes.nodes is not a class of the cluster"), std::string::npos);
  // A GPU cluster's nodes have no memory to set.
  EXPECT_NE(
      tuning_error(without_memory(cpu_node()), "shm.node_beta_ns_per_byte = 0.1\n").find("is for nodes of CPU ranks"),
      std::string::npos);
  EXPECT_EQ(tuning_error(cpu_node(), "shm.alpha_us = 3\n"), "accepted");
  EXPECT_THROW(load_cluster("no-such-cluster.json"), Error);
}

}  // namespace
}  // namespace coll::sim
