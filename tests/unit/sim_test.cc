// The simulator against closed forms: max-min sharing, routes through the
// switch levels, one message, flows sharing a NIC, the ring allreduce's
// alpha-beta-gamma cost, and its errors.
#include "algorithms/algorithms.h"
#include "base/error.h"
#include "sim/cluster.h"
#include "sim/collective_run.h"
#include "sim/engine.h"
#include "sim/explain.h"
#include "sim/failures.h"
#include "sim/maxmin.h"
#include "sim/sweep.h"
#include "sim/symmetry.h"
#include "topology/load.h"
#include "topology/paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

namespace coll::sim {
namespace {

TEST(MaxMin, SharesALinkEquallyAndGivesTheRestToOthers) {
  // Link 0 (capacity 1) carries flows 0 and 1; link 1 (capacity 2) flows 1 and 2.
  const std::vector<Hop> p0{{0}}, p1{{0}, {1}}, p2{{1}};
  std::vector<double> rates;
  max_min_rates({1.0, 2.0}, {&p0, &p1, &p2}, rates);
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_DOUBLE_EQ(rates[0], 0.5);
  EXPECT_DOUBLE_EQ(rates[1], 0.5);
  EXPECT_DOUBLE_EQ(rates[2], 1.5);  // what flow 1 leaves of link 1
}

TEST(MaxMin, AWeightedFlowCountsAsThatManyFlows) {
  // Flow 0 stands for 3 flows on link 0 (capacity 4), flow 1 for one: each of the four gets 1;
  // on link 1 (capacity 10) flow 1 weighs 2 (two of its flows share each such link) and flow 2 takes the rest.
  const std::vector<Hop> p0{{0, 3}}, p1{{0, 1}, {1, 2}}, p2{{1, 1}};
  std::vector<double> rates;
  max_min_rates({4.0, 10.0}, {&p0, &p1, &p2}, rates);
  EXPECT_DOUBLE_EQ(rates[0], 1);
  EXPECT_DOUBLE_EQ(rates[1], 1);
  EXPECT_DOUBLE_EQ(rates[2], 8);
}

TEST(MaxMin, FractionalWeightsLeftOverDoNotStopIt) {
  // Weights that do not sum back to 0 exactly once their flows are frozen.
  const std::vector<Hop> p0{{0, 0.1}}, p1{{0, 0.2}}, p2{{1, 1}};
  std::vector<double> rates;
  max_min_rates({0.3, 5.0}, {&p0, &p1, &p2}, rates);
  EXPECT_NEAR(rates[0], 1, 1e-12);
  EXPECT_NEAR(rates[1], 1, 1e-12);
  EXPECT_DOUBLE_EQ(rates[2], 5);
}

// 2 levels: 4 nodes of 2 GPUs and 1 NIC, 2 NICs a leaf, 2 leaves a pod (one pod).
std::string two_level(const std::string& extra = "") {
  return R"({"name": "t", "nodes": 4, "node": {"gpus": 2, "nics": 1, "gpu_link_gbps": 800},
             "nic_gbps": 80, "latency_us": {"gpu_link": 1, "hop": 2}, "costs": {"alpha_us": 0, "gamma_ns_per_byte": 0},
             "network": {"levels": [{"ports": 2, "oversubscription": 2}]})" +
         extra + "}";
}

TEST(Cluster, RoutesClimbOnlyAsFarAsTheyMust) {
  const Cluster c = parse_cluster(two_level(), "t");
  const Fabric& f = c.fabric;
  ASSERT_EQ(f.nranks(), 8);
  auto names = [&](int a, int b) {
    std::string s;
    for (int l : f.route(a, b)) s += f.link(l).name + " ";
    return s;
  };
  EXPECT_EQ(names(0, 1), "node0.gpu0.up node0.gpu1.down ");
  EXPECT_EQ(names(0, 2), "node0.nic0.up node1.nic0.down ");                      // one leaf
  EXPECT_EQ(names(1, 6), "node0.nic0.up leaf0.up leaf1.down node3.nic0.down ");  // two leaves
  // A leaf's uplink: its 2 NICs' 10 GB/s, halved by 2:1 oversubscription.
  EXPECT_DOUBLE_EQ(f.link(f.route(1, 6)[1]).bytes_per_s, 2 * 10e9 / 2);
  EXPECT_DOUBLE_EQ(f.latency(f.route(1, 6)), 8e-6);
}

TEST(Cluster, RailOptimisedPutsEachNicIndexOnItsOwnLeaf) {
  const Cluster c = parse_cluster(R"({"nodes": 2, "node": {"gpus": 2, "nics": 2, "gpu_link_gbps": 800},
      "nic_gbps": 80, "network": {"rail_optimized": true, "levels": [{"ports": 8}]}})",
                                  "t");
  const Fabric& f = c.fabric;
  // GPU 0 of node 0 to GPU 0 of node 1: rail 0's leaf; GPU 0 to GPU 1 of the other node: across rails.
  EXPECT_EQ(f.route(0, 2).size(), 2u);
  EXPECT_EQ(f.route(0, 3).size(), 4u);
}

TEST(Cluster, ANodeMayBeAMachineCapture) {
  // AWS p4d.24xlarge's NCCL topology file: 8 GPUs, 4 NICs, each NIC shared by the 2 GPUs on its switch.
  const std::string file = COLL_TEST_DATA_DIR "/topology/nccl/p4d-24xl-topo.xml";
  const Cluster c = parse_cluster(R"({"nodes": 2, "node": {"topology": ")" + file + R"(", "gpu_link_gbps": 2400},
      "nic_gbps": 100, "network": {"levels": [{"ports": 8}]}})",
                                  "t");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.nics_per_node, 4);
  const std::vector<int> pairing = topo::nic_for_each_gpu(topo::load_file(file));
  ASSERT_EQ(pairing.size(), 8u);
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(c.fabric.link(c.fabric.place(g).nic_up).name, "node0.nic" + std::to_string(pairing[size_t(g)]) + ".up");
  try {
    parse_cluster(R"({"nodes": 2, "node": {"topology": ")" + file + R"("}, "nic_gbps": 100,
        "network": {"levels": [{"ports": 8}]}})",
                  "t");
    FAIL() << "accepted without NVLink";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no NVLink: give node.gpu_link_gbps"), std::string::npos) << e.what();
  }
}

TEST(Cluster, ABadFileIsRefusedNamingTheField) {
  try {
    parse_cluster(R"({"node": {"gpus": 8}})", "x.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: the cluster has no \"nodes\""), std::string::npos) << e.what();
  }
  try {
    parse_cluster(two_level().replace(two_level().find("\"gpus\": 2"), 9, "\"gpus\": 0"), "x.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node.gpus is 0; an integer of at least 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_cluster("{", "x.json"), Error);
  EXPECT_THROW(parse_cluster(two_level(), "t", 9), Error);  // 9 of 8 GPUs
}

algo::Schedule one_step(algo::OpKind kind, int peer, size_t bytes) {
  algo::Schedule s;
  s.steps.push_back(algo::Step{kind, peer, {}, {}, bytes, {}});
  return s;
}

TEST(Simulate, OneMessageTakesOverheadLatencyAndBytesOverRate) {
  Cluster c = parse_cluster(two_level(), "t", 8);
  c.costs.alpha_s = 3e-6;
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 2, 1 << 20);
  s[2] = one_step(algo::OpKind::kRecv, 0, 1 << 20);
  const Result r = simulate(s, c.fabric, c.costs);
  EXPECT_NEAR(r.seconds, 3e-6 + 4e-6 + (1 << 20) / 10e9, 1e-12);
  EXPECT_EQ(r.messages, 1u);
  EXPECT_EQ(c.fabric.link(r.bottleneck).name, "node0.nic0.up");
}

TEST(Simulate, TwoGpusShareTheirNodesNic) {
  const Cluster c = parse_cluster(two_level(), "t");
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 2, 1 << 20);
  s[1] = one_step(algo::OpKind::kSend, 3, 1 << 20);
  s[2] = one_step(algo::OpKind::kRecv, 0, 1 << 20);
  s[3] = one_step(algo::OpKind::kRecv, 1, 1 << 20);
  const Result r = simulate(s, c.fabric, c.costs);
  EXPECT_NEAR(r.seconds, 4e-6 + 2.0 * (1 << 20) / 10e9, 1e-12);
}

TEST(Simulate, MessagesToOnePeerLeaveOneAfterAnother) {
  // Two 1 MiB messages from rank 0 to rank 2, both ready at once: the first arrives after its own bytes,
  // not after both (as two flows sharing the NIC would).
  const Cluster c = parse_cluster(two_level(), "t");
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 2, 1 << 20);
  s[0].steps.push_back(s[0].steps[0]);
  s[2] = one_step(algo::OpKind::kRecv, 0, 1 << 20);
  s[2].steps.push_back(s[2].steps[0]);
  std::vector<StepTime> timeline;
  const Result r = simulate(s, c.fabric, c.costs, &timeline);
  const double one = (1 << 20) / 10e9;
  EXPECT_NEAR(r.seconds, 4e-6 + 2 * one, 1e-12);
  std::vector<double> received;
  for (const StepTime& t : timeline)
    if (t.rank == 2) received.push_back(t.end_s);
  std::sort(received.begin(), received.end());
  ASSERT_EQ(received.size(), 2u);
  EXPECT_NEAR(received[0], 4e-6 + one, 1e-12);
}

TEST(Simulate, UnpairedMessagesAreRefused) {
  const Cluster c = parse_cluster(two_level(), "t");
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 2, 64);
  s[2] = one_step(algo::OpKind::kRecv, 0, 32);
  EXPECT_THROW(simulate(s, c.fabric, c.costs), Error);
  s[2] = algo::Schedule{};
  EXPECT_THROW(simulate(s, c.fabric, c.costs), Error);
}

TEST(Simulate, RingAllreduceMatchesItsAlphaBetaGammaCost) {
  // One node of n GPUs: each ring step crosses two GPU links (2 x 1 us) at 100 GB/s.
  for (int n : {2, 3, 5, 8}) {
    const Cluster c =
        parse_cluster(R"({"nodes": 1, "node": {"gpus": )" + std::to_string(n) + R"(, "nics": 1, "gpu_link_gbps": 800},
        "nic_gbps": 80, "latency_us": {"gpu_link": 1}, "costs": {"alpha_us": 5, "gamma_ns_per_byte": 0.01},
        "chunk_bytes": 1073741824, "network": {"levels": [{"ports": 8}]}})",
                      "t");
    const size_t bytes = static_cast<size_t>(n) << 20;
    CollectiveRun run{algo::Collective::kAllreduce, bytes, 4, "ring"};
    const Prediction p = predict(c, run);
    const double block = static_cast<double>(bytes) / n;
    const double want = 2 * (n - 1) * (5e-6 + 2e-6 + block / 100e9) + (n - 1) * block * 0.01e-9;
    EXPECT_NEAR(p.result.seconds, want, want * 1e-9) << n << " ranks";
    EXPECT_NEAR(p.busbw_bytes_per_s, bytes * 2.0 * (n - 1) / n / want, 1) << n;
  }
}

TEST(Simulate, EveryAllreduceAlgorithmFinishesAcrossNodes) {
  const Cluster c = parse_cluster(two_level(), "t");
  for (const char* algo : {"ring", "tree", "halving_doubling", "hierarchical", "recursive_doubling"}) {
    CollectiveRun run{algo::Collective::kAllreduce, 8 << 20, 4, algo};
    const Prediction p = predict(c, run);
    // No faster than the NICs allow: each of 4 nodes sends at least (n-1)/n of the vector out of its node.
    EXPECT_GT(p.result.seconds, 0.75 * (8 << 20) / 10e9 * 0.99) << algo;
    EXPECT_GT(p.result.messages, 0u) << algo;
  }
}

// 16 nodes of 4 GPUs and 4 NICs, rail-optimised leaves of 8 ports at 2:1, pods of 2 leaves.
std::string rails_16x4() {
  return R"({"nodes": 16, "node": {"gpus": 4, "nics": 4, "gpu_link_gbps": 800}, "nic_gbps": 100,
             "network": {"rail_optimized": true, "levels": [{"ports": 8, "oversubscription": 2}, {"groups": 2}]}})";
}

TEST(Symmetry, OneNodesRanksStandForAllWhereEveryNodeIsAlike) {
  const Cluster c = parse_cluster(rails_16x4(), "t");
  for (const char* algo : {"ring", "hierarchical"}) {
    CollectiveRun run{algo::Collective::kAllreduce, 64 << 20, 4, algo};
    run.symmetry = CollectiveRun::Symmetry::kNever;
    const Prediction every = predict(c, run);
    run.symmetry = CollectiveRun::Symmetry::kUse;
    const Prediction sym = predict(c, run);
    EXPECT_EQ(every.symmetric_classes, 0) << algo;
    EXPECT_EQ(sym.symmetric_classes, 4) << algo;
    // Every leaf and pod carries the same load here, so pooling a kind's links loses nothing; the
    // ring's steps wait for the same steps on every node, the hierarchical one's not quite.
    const bool ring = std::string(algo) == "ring";
    EXPECT_EQ(sym.same_dependencies, ring) << algo;
    EXPECT_NEAR(sym.result.seconds, every.result.seconds, every.result.seconds * (ring ? 1e-9 : 0.01)) << algo;
    EXPECT_EQ(sym.result.messages, every.result.messages) << algo;
    ASSERT_GE(sym.result.bottleneck_kind, 0) << algo;
    EXPECT_EQ(sym.result.bottleneck_kind, c.fabric.link(every.result.bottleneck).kind) << algo;
  }
}

TEST(Symmetry, LinksOfOneKindButAnotherCapacityAreTheirOwnGroup) {
  // 12 nodes of 4 NICs on leaves of 8 ports at 8:1: the last leaf holds half as many NICs and has half the
  // uplink; and a failed NIC, which the hierarchical allreduce needs.
  const std::string file = R"({"nodes": 12, "node": {"gpus": 4, "nics": 4, "gpu_link_gbps": 800}, "nic_gbps": 100,
      "network": {"levels": [{"ports": 8, "oversubscription": 8}]})";
  const Cluster c = parse_cluster(file + "}", "t");
  for (const char* algo : {"ring", "hierarchical"})
    for (size_t bytes : {size_t{64} << 10, size_t{64} << 20}) {
      CollectiveRun run{algo::Collective::kAllreduce, bytes, 4, algo};
      run.symmetry = CollectiveRun::Symmetry::kNever;
      const double every = predict(c, run).result.seconds;
      run.symmetry = CollectiveRun::Symmetry::kUse;
      const Prediction sym = predict(c, run);
      EXPECT_EQ(sym.symmetric_classes, 4);
      EXPECT_NEAR(sym.result.seconds, every, every * 0.03) << algo << " " << bytes;
    }
  const Cluster failed = parse_cluster(file + R"(, "failed_links": ["node5.nic2"]})", "t");
  CollectiveRun run{algo::Collective::kAllreduce, 64 << 20, 4, "hierarchical"};
  run.symmetry = CollectiveRun::Symmetry::kUse;
  try {
    predict(failed, run);
    FAIL() << "simulated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nic2.up: failed?"), std::string::npos) << e.what();
  }
}

// Nodes differ in their places in the trees: classes of ranks alike in one tree stand for them.
TEST(Symmetry, TreeClassesStandForTheRanksAlikeInEachTree) {
  // 20 nodes: some tree nodes have two alike children, whose parents' two receives one send delivers.
  const std::string file = R"({"nodes": 20, "node": {"gpus": 4, "nics": 4, "gpu_link_gbps": 800}, "nic_gbps": 100,
      "network": {"rail_optimized": true, "levels": [{"ports": 8, "oversubscription": 2}, {"groups": 2}]}})";
  const Cluster c = parse_cluster(file, "t");
  for (size_t bytes : {size_t{64} << 10, size_t{64} << 20}) {
    CollectiveRun run{algo::Collective::kAllreduce, bytes, 4, "tree"};
    run.symmetry = CollectiveRun::Symmetry::kNever;
    const Prediction every = predict(c, run);
    run.symmetry = CollectiveRun::Symmetry::kUse;
    const Prediction sym = predict(c, run);
    // 20 nodes fall into 8 classes in each tree (leaves, inner nodes by height and neighbours), 4 ranks each.
    EXPECT_EQ(sym.symmetric_classes, 2 * 8 * 4) << bytes;
    EXPECT_TRUE(sym.same_dependencies);
    EXPECT_EQ(sym.result.messages, every.result.messages) << bytes;
    // A class's messages take its members' longest latency: 3.9% fast at 64 KiB.
    EXPECT_NEAR(sym.result.seconds, every.result.seconds, every.result.seconds * (bytes < (1 << 20) ? 0.05 : 0.01))
        << bytes;
    ASSERT_GE(sym.result.bottleneck_kind, 0);
    EXPECT_EQ(sym.result.bottleneck_kind, c.fabric.link(every.result.bottleneck).kind) << bytes;
  }
}

TEST(Symmetry, IsFoundOnlyWhereTheSchedulesShiftWithTheNodes) {
  const Cluster c = parse_cluster(rails_16x4(), "t");
  CollectiveRun run{algo::Collective::kAllreduce, 64 << 20, 4, "halving_doubling"};  // partners differ by node
  run.symmetry = CollectiveRun::Symmetry::kUse;
  EXPECT_EQ(predict(c, run).symmetric_classes, 0);
  const Cluster partial = parse_cluster(rails_16x4(), "t", 62);  // the last node holds 2 ranks
  run.algorithm = "tree";
  EXPECT_EQ(predict(partial, run).symmetric_classes, 0);
  run.algorithm = "ring";
  EXPECT_EQ(predict(partial, run).symmetric_classes, 0);
  const algo::Algorithm& ring = algo::find_algorithm(algo::Collective::kAllreduce, "ring");
  algo::CollShape shape;
  shape.nranks = 8;
  shape.count = 1 << 20;
  shape.elem_size = 4;
  shape.node_of = {0, 0, 1, 1, 2, 2, 3, 3};
  const std::optional<SymmetricPlan> sym = find_symmetry(ring, shape);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->schedules.size(), 2u);
  EXPECT_EQ(sym->symmetry.image(1, 2, 2), 6);  // rank 1's next is 2; rank 5's (class 1's member 2) is 6
  EXPECT_EQ(sym->symmetry.image(1, 3, 0), 6);  // rank 1's previous is 0; rank 7's is 6
  // Rank 0 sends to 7, whose part rank 1 plays: to rank 1, 2 is what 0 is to 7.
  EXPECT_EQ(sym->symmetry.counterpart(0, 7), std::make_pair(1, 2));
  shape.node_of = {1, 1, 0, 0, 3, 3, 2, 2};  // nodes not in rank order
  EXPECT_FALSE(find_symmetry(ring, shape).has_value());
}

TEST(Failures, CablesAreCountedOverTheWholeClusterAndFailOneAtATime) {
  // 4 nodes x 1 NIC; leaves of 2 ports at 2:1 have one 10 GB/s cable up each; 2 leaves.
  const Cluster c = parse_cluster(two_level(), "t", 2);  // counted for the whole cluster all the same
  const Cables cables = count_cables(c);
  EXPECT_EQ(cables.nic, 4);
  ASSERT_EQ(cables.uplinks.size(), 1u);
  EXPECT_EQ(cables.uplinks[0], 2);
  EXPECT_DOUBLE_EQ(first_failure_hours(cables.total(), 43800), 43800.0 / 6);
  // Leaves of 8 ports at 2:1: 4 cables up; one lost leaves 3 of them, both ways.
  Cluster wide = parse_cluster(R"({"nodes": 8, "node": {"gpus": 1, "nics": 1, "gpu_link_gbps": 800}, "nic_gbps": 80,
      "network": {"levels": [{"ports": 8, "oversubscription": 2}]}, "failed_links": ["leaf0"]})",
                               "t");
  const Link& up = wide.fabric.link(wide.fabric.find("leaf0.up"));
  EXPECT_EQ(up.cables, 3);
  EXPECT_DOUBLE_EQ(up.bytes_per_s, 3 * 10e9);
  EXPECT_EQ(wide.fabric.link(wide.fabric.find("leaf0.down")).cables, 3);
  try {
    fail_cable(wide.fabric, "leaf9", "test");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'leaf9' is not in the cluster"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fail_cable(wide.fabric, "node0.gpu0", "test"), Error);  // NVLink is not a network link
}

TEST(Failures, AMessageThroughAFailedNicIsAnError) {
  Cluster c = parse_cluster(two_level(R"(, "failed_links": ["node1.nic0"])"), "t");
  std::vector<algo::Schedule> s(8);
  s[0] = one_step(algo::OpKind::kSend, 2, 64);
  s[2] = one_step(algo::OpKind::kRecv, 0, 64);
  try {
    simulate(s, c.fabric, c.costs);
    FAIL() << "simulated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node1.nic0.down: failed?"), std::string::npos) << e.what();
  }
}

TEST(Failures, ALostUplinkCableSlowsWhatCrossesIt) {
  // 16 nodes on 4 leaves at 1:1: the ring crosses leaves; one cable fewer on the busiest uplink.
  const Cluster c = parse_cluster(R"({"nodes": 16, "node": {"gpus": 1, "nics": 1, "gpu_link_gbps": 800},
      "nic_gbps": 80, "costs": {"alpha_us": 0}, "network": {"levels": [{"ports": 4}]}})",
                                  "t");
  CollectiveRun run{algo::Collective::kAllreduce, 64 << 20, 4, ""};
  const std::vector<Degraded> d = one_cable_lost(c, run, {"ring", "halving_doubling"});
  ASSERT_EQ(d.size(), 2u);
  for (const Degraded& x : d) {
    EXPECT_FALSE(x.failed_link.empty()) << x.algorithm;
    EXPECT_GE(x.failed_s, x.healthy_s) << x.algorithm;
  }
  // Halving-doubling's largest exchanges all cross leaves at once: 4 flows on a leaf's 4 cables, then 3.
  EXPECT_GT(d[1].failed_s, d[1].healthy_s * 1.05);
}

TEST(Simulate, ASmallMessageLateInALongRunStillEnds) {
  // After 1 s of per-message cost the clock's resolution exceeds what 4 bytes take at 19.5 GB/s.
  const Cluster c = parse_cluster(R"({"nodes": 1, "node": {"gpus": 2, "nics": 1, "gpu_link_gbps": 156},
      "nic_gbps": 100, "costs": {"alpha_us": 1000000}, "network": {"levels": [{"ports": 8}]}})",
                                  "t");
  const Prediction p = predict(c, CollectiveRun{algo::Collective::kBroadcast, 4, 4, ""});
  EXPECT_NEAR(p.result.seconds, 1.0 + 2e-6, 1e-6);
}

TEST(Failures, OnlyLinksWithACableToSpareAreFailedAndFailuresAreCounted) {
  // Leaves of 2 NICs at 2:1 have one cable up: losing it would cut the cluster, so none is failed.
  const Cluster c = parse_cluster(R"({"nodes": 4, "node": {"gpus": 1, "nics": 1, "gpu_link_gbps": 800},
      "nic_gbps": 80, "network": {"levels": [{"ports": 2, "oversubscription": 2}]}})",
                                  "t");
  const std::vector<Degraded> d =
      one_cable_lost(c, CollectiveRun{algo::Collective::kAllreduce, 1 << 20, 4, ""}, {"ring"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].failed_link.empty());
  EXPECT_EQ(d[0].failed_s, d[0].healthy_s);
  // Any node's NIC may be named, also with fewer ranks; a cable cannot fail twice.
  EXPECT_NO_THROW(parse_cluster(two_level(R"(, "failed_links": ["node3.nic0"])"), "t", 2));
  try {
    parse_cluster(two_level(R"(, "failed_links": ["leaf0", "leaf0"])"), "t");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every cable of 'leaf0' has failed already"), std::string::npos) << e.what();
  }
}

TEST(Sweep, FindsWhereTheFastestAlgorithmChanges) {
  const Cluster c = parse_cluster(two_level(R"(, "chunk_bytes": 65536)"), "t");
  CollectiveRun run{algo::Collective::kAllreduce, 0, 4, ""};
  const Sweep s = sweep(c, run, 1024, 64 << 20, {"ring", "recursive_doubling"});
  ASSERT_EQ(s.sizes.front(), 1024u);
  ASSERT_EQ(s.sizes.back(), size_t{64} << 20);
  // Recursive doubling (log n messages) wins small, the ring (bandwidth-optimal) large: one crossover.
  EXPECT_GT(s.busbw.front()[1], s.busbw.front()[0]);
  EXPECT_GT(s.busbw.back()[0], s.busbw.back()[1]);
  ASSERT_EQ(s.crossovers.size(), 1u);
  EXPECT_EQ(s.crossovers[0].from, "recursive_doubling");
  EXPECT_EQ(s.crossovers[0].to, "ring");
  EXPECT_THROW(sweep(c, run, 4096, 1024, {"ring"}), Error);  // smallest above largest
  // A message that cannot arrive is an error, not an algorithm left out as too big to simulate.
  const Cluster failed = parse_cluster(two_level(R"(, "failed_links": ["node1.nic0"])"), "t");
  EXPECT_THROW(sweep(failed, run, 1024, 4096, {"ring"}), Error);
  const Sweep top = sweep(c, run, size_t{1} << 20, (size_t{1} << 20) * 5, {"ring"});
  EXPECT_EQ(top.sizes, (std::vector<size_t>{size_t{1} << 20, size_t{4} << 20, size_t{5} << 20}));
  const std::string svg = sweep_svg(s, "a <title> & more");
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("recursive_doubling &#8594; ring"), std::string::npos);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
}

TEST(Explain, TheRingOfFourIsSixRoundsOfFourTransfers) {
  const Cluster c = teaching_cluster(4, 0);
  CollectiveRun run{algo::Collective::kAllreduce, 64, 4, "ring"};
  const Explanation e = explain(c, run);
  ASSERT_EQ(e.rounds.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    ASSERT_EQ(e.rounds[k].transfers.size(), 4u) << k;
    for (const Transfer& t : e.rounds[k].transfers) {
      EXPECT_EQ(t.to, (t.from + 1) % 4);
      EXPECT_EQ(t.bytes, 16u);
      EXPECT_EQ(t.reduce, k < 3) << "reduce-scatter first, then allgather";
    }
  }
  // On a uniform fabric the simulation is the cost model's formula.
  EXPECT_NEAR(e.result.seconds, e.plan.algorithm->cost(e.plan.shape, e.plan.link), 1e-9);
  const std::string text = explain_text(e, run);
  EXPECT_NE(text.find("cost: 2(n-1) a + (n-1)/n S (2 b + g)"), std::string::npos) << text;
  const std::string svg = explain_svg(e, run);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 30, true);
  EXPECT_NE(svg.find("repeatCount=\"indefinite\""), std::string::npos);
  EXPECT_THROW(teaching_cluster(6, 4), Error);
}

}  // namespace
}  // namespace coll::sim
