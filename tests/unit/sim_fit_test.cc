// collsim --fit: the node class's parameters recovered from runs that the
// simulator made with known ones (the weights of CPU ranks' copies among
// them), and bad runs refused naming their line.
#include "algorithms/cost_model.h"
#include "base/error.h"
#include "sim/cluster.h"
#include "sim/collective_run.h"
#include "sim/fit.h"
#include "sim/tuning.h"
#include "support/cpu_node.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace coll::sim {
namespace {

using coll::testing::cpu_node;

// The parameters that make the "measured" runs, before the weights.
algo::LinkModel base_truth() {
  algo::LinkModel truth;
  truth.alpha_us = 3;
  truth.beta_ns_per_byte = 0.2;
  truth.cache_bytes = 1 << 20;
  truth.cache_beta_ns_per_byte = 0.08;
  truth.cache2_bytes = 16 << 20;  // beyond it, beta: the largest runs hold 24 to 72 MiB of buffers
  truth.cache2_beta_ns_per_byte = 0.12;
  // A ring's core carries 2 flows, the memory n: it binds from 5 ranks (n 0.09 > 2 0.2), as at 8.
  truth.node_beta_ns_per_byte = 0.09;
  truth.gamma_ns_per_byte = 0.05;
  return truth;
}

TEST(Fit, FindsTheParametersThatMadeTheRuns) {
  // Runs "measured" by the simulator itself with known parameters: the fit must reproduce them.
  const algo::LinkModel truth = base_truth();
  const auto cluster_of = [](int ranks) { return parse_cluster(cpu_node(1, 8), "t", ranks); };
  std::vector<Measured> runs;
  for (auto [collective, ranks] :
       {std::pair{algo::Collective::kAllgather, 2}, std::pair{algo::Collective::kAllreduce, 2},
        std::pair{algo::Collective::kAllgather, 8}})
    for (size_t bytes = 64 << 10; bytes <= (8u << 20); bytes *= 2) {
      Cluster c = cluster_of(ranks);
      set_node_class(c, truth);
      const double s = predict(c, CollectiveRun{collective, bytes, 4, "ring"}).result.seconds;
      runs.push_back(Measured{collective, "ring", ranks, bytes, s});
    }
  const FitResult fit = fit_node_class(cluster_of, runs);
  EXPECT_LT(fit.rms_log_error, 0.01);
  EXPECT_NEAR(fit.link.beta_ns_per_byte, truth.beta_ns_per_byte, 0.02);
  EXPECT_NEAR(fit.link.node_beta_ns_per_byte, truth.node_beta_ns_per_byte, 0.009);
  EXPECT_NEAR(fit.link.cache2_beta_ns_per_byte, truth.cache2_beta_ns_per_byte, 0.012);
  EXPECT_EQ(fit.link.same_core_read_weight, 1);  // a core each: no run reads within a core, nor waits its turn
  EXPECT_EQ(fit.link.turn_us, 0);
  ASSERT_EQ(fit.predicted_s.size(), runs.size());
  // Its lines are a tuning file that gives the cluster those parameters again.
  const Tuning t{tuning_lines("shm", fit.link), "fitted"};
  const Cluster back = parse_cluster(cpu_node(), "t", 2, &t);
  EXPECT_NEAR(back.gpu_link_bytes_per_s, 1e9 / fit.link.beta_ns_per_byte, 1e9 / fit.link.beta_ns_per_byte * 1e-5);
  EXPECT_NEAR(back.cache_bytes, fit.link.cache_bytes, 1);
  EXPECT_NEAR(back.cache2_bytes, fit.link.cache2_bytes, 1);
}

TEST(Fit, FindsTheWeightsOfCopiesOnSharedCores) {
  // On 2 cores, as calibrate.sh gives them: 8 ranks take turns, and their halving-doubling's messages at
  // distances 2 and 4 stay on one core; the direct allreduce copies through scratch and reduces there.
  algo::LinkModel truth = base_truth();  // a core carries half the ranks' flows: the cores bind
  truth.local_weight = 0.6;
  truth.reduce_weight = 1.3;
  truth.same_core_read_weight = 0.4;
  truth.turn_us = 2;
  const Tuning cores{"shm.cores = 2\n", "t"};
  const auto cluster_of = [&](int ranks) { return parse_cluster(cpu_node(1, 8), "t", ranks, &cores); };
  std::vector<Measured> runs;
  for (auto [collective, algorithm, ranks] :
       {std::tuple{algo::Collective::kAllgather, "ring", 2}, std::tuple{algo::Collective::kAllreduce, "ring", 2},
        std::tuple{algo::Collective::kAllgather, "ring", 8},
        std::tuple{algo::Collective::kAllreduce, "halving_doubling", 8},
        std::tuple{algo::Collective::kAllreduce, "direct", 2}})
    for (size_t bytes = 64 << 10; bytes <= (8u << 20); bytes *= 2) {
      Cluster c = cluster_of(ranks);
      set_node_class(c, truth);
      const double s = predict(c, CollectiveRun{collective, bytes, 4, algorithm}).result.seconds;
      runs.push_back(Measured{collective, algorithm, ranks, bytes, s});
    }
  const FitResult fit = fit_node_class(cluster_of, runs);
  SCOPED_TRACE(tuning_lines("shm", fit.link));
  EXPECT_LT(fit.rms_log_error, 0.01);
  EXPECT_NEAR(fit.link.beta_ns_per_byte, truth.beta_ns_per_byte, 0.02);
  EXPECT_NEAR(fit.link.local_weight, truth.local_weight, 0.1);
  EXPECT_NEAR(fit.link.reduce_weight, truth.reduce_weight, 0.15);
  EXPECT_NEAR(fit.link.same_core_read_weight, truth.same_core_read_weight, 0.15);
  EXPECT_NEAR(fit.link.turn_us, truth.turn_us, 0.5);
  EXPECT_NEAR(fit.link.gamma_ns_per_byte, truth.gamma_ns_per_byte, 0.01);
  // Its lines give the cluster those weights again.
  const Tuning t{tuning_lines("shm", fit.link) + "shm.cores = 2\n", "fitted"};
  const Cluster back = parse_cluster(cpu_node(), "t", 2, &t);
  EXPECT_NEAR(back.costs.local_weight, fit.link.local_weight, 1e-5);
  EXPECT_NEAR(back.costs.same_core_read_weight, fit.link.same_core_read_weight, 1e-5);
  EXPECT_NEAR(back.costs.turn_s, fit.link.turn_us * 1e-6, 1e-11);
}

TEST(Fit, BadRunsAreRefusedNamingTheLine) {
  const auto error_of = [](const std::string& text) -> std::string {
    try {
      parse_measured(text, "runs.txt");
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(parse_measured("# c a n bytes us\nallgather ring 2 65536 21.5\n", "r").size(), 1u);
  EXPECT_NE(error_of("allgather ring 2 65536\n").find("runs.txt:1: expected 'collective algorithm ranks bytes"),
            std::string::npos);
  EXPECT_NE(error_of("\nallgatherv ring 2 65536 3\n").find("runs.txt:2: unknown collective 'allgatherv'"),
            std::string::npos);
  EXPECT_NE(error_of("allgather tree 2 65536 3\n").find("allgather has no algorithm 'tree'"), std::string::npos);
  EXPECT_NE(error_of("allgather ring 2 65536 1e-320\n").find("runs.txt:1: expected"), std::string::npos);
  EXPECT_NE(error_of("allgather ring 2 65536 inf\n").find("runs.txt:1: expected"), std::string::npos);
  EXPECT_THROW(fit_node_class([](int r) { return parse_cluster(cpu_node(), "t", r); }, {}), Error);
  EXPECT_THROW(fit_node_class([](int r) { return parse_cluster(cpu_node(), "t", r); },
                              {Measured{algo::Collective::kAllgather, "ring", 2, 1 << 20, 0}}),
               Error);
  EXPECT_THROW(fit_node_class([](int r) { return parse_cluster(cpu_node(), "t", r); },
                              {Measured{algo::Collective::kAllgather, "ring", 2, 1 << 20, 1e-3},
                               Measured{algo::Collective::kAllgather, "ring", 2, 1 << 10, -1}}),
               Error);
  // Ranks over two nodes, or a node without memory, cannot be fitted as one node's class.
  std::vector<Measured> wide{Measured{algo::Collective::kAllgather, "ring", 8, 1 << 20, 1e-3}};
  EXPECT_THROW(fit_node_class([](int r) { return parse_cluster(cpu_node(2), "t", r); }, wide), Error);
}

TEST(Fit, ParametersTheRunsLeaveFreeStayPhysicalAndAreATuningFile) {
  // Runs with one step in their rate at 4 MiB and noise of +-10% and +-20%: the
  // second cache and beta beyond it are free, and unbounded they drifted to
  // 22 GB and 110 ns/B, or to an overflow that collsim then refused.
  const auto cluster_of = [](int ranks) { return parse_cluster(cpu_node(1, 8), "t", ranks); };
  for (const double noise : {0.1, 0.2}) {
    std::vector<Measured> runs;
    for (auto [collective, ranks] :
         {std::pair{algo::Collective::kAllgather, 2}, std::pair{algo::Collective::kAllreduce, 2},
          std::pair{algo::Collective::kAllgather, 4}})
      for (size_t bytes = 64 << 10; bytes <= (64u << 20); bytes *= 2) {
        const double s = 2e-6 + static_cast<double>(bytes) * (bytes > (4u << 20) ? 0.2e-9 : 0.1e-9);
        runs.push_back(Measured{collective, "ring", ranks, bytes, s * (runs.size() % 2 ? 1 + noise : 1 - noise)});
      }
    const double beta0 = runs.back().seconds / static_cast<double>(runs.back().bytes) * 1e9;
    const FitResult fit = fit_node_class(cluster_of, runs);
    SCOPED_TRACE(tuning_lines("shm", fit.link));
    EXPECT_LE(fit.link.beta_ns_per_byte, 100 * beta0);
    EXPECT_LE(fit.link.cache2_bytes, 4.0 * (1 << 30));
    EXPECT_GT(fit.link.cache2_bytes, fit.link.cache_bytes);
    const Tuning t{tuning_lines("shm", fit.link), "fitted"};
    EXPECT_NO_THROW(parse_cluster(cpu_node(), "t", 2, &t));
  }
}

}  // namespace
}  // namespace coll::sim
