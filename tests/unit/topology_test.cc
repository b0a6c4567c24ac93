// Topology: the loaders (hwloc XML, NCCL XML), path classes, GPU-NIC
// pairing and the dump, on synthetic files, then on real machine captures
// and cloud topology files against the answers in
// tests/data/topology/README.md. Every file is part of the repository: a
// missing one fails its test (load_file throws), it is never skipped.
#include "base/error.h"
#include "core/fastpath/fastpath.h"
#include "topology/load.h"
#include "topology/nodes.h"
#include "topology/paths.h"
#include "transport/router.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace coll::topo {
namespace {

const std::string kData = COLL_TEST_DATA_DIR "/topology/";

std::string path_of(const Topology& t, int a, int b, bool nvlink = true) {
  return path_between(t, a, b, nvlink).to_string();
}
std::string gpu_gpu(const Topology& t, size_t i, size_t j, bool nvlink = true) {
  return path_of(t, t.gpus.at(i), t.gpus.at(j), nvlink);
}
std::string gpu_nic(const Topology& t, size_t g, size_t n) { return path_of(t, t.gpus.at(g), t.nics.at(n)); }
int numa(const Topology& t, int node) { return t.nodes[static_cast<size_t>(t.numa_of(node))].os_index; }
const Node& gpu(const Topology& t, size_t i) { return t.nodes[static_cast<size_t>(t.gpus.at(i))]; }
const Node& nic(const Topology& t, size_t i) { return t.nodes[static_cast<size_t>(t.nics.at(i))]; }
size_t rdma_nics(const Topology& t) {
  size_t n = 0;
  for (int i : t.nics) n += t.nodes[static_cast<size_t>(i)].rdma;
  return n;
}

TEST(PciAddress, ParsesPrintsAndOrdersLikeCuda) {
  PciAddress a, b, c;
  ASSERT_TRUE(PciAddress::parse("0000:03:00.0", &a));
  ASSERT_TRUE(PciAddress::parse("44:00.0", &b));
  ASSERT_TRUE(PciAddress::parse("ffff:ff:1f.7", &c));
  EXPECT_EQ(a.to_string(), "0000:03:00.0");
  EXPECT_EQ(b.to_string(), "0000:44:00.0");
  EXPECT_EQ(c.to_string(), "ffff:ff:1f.7");
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  for (const char* bad : {"", "03:00", "0000:03:00.8", "0000:100:00.0", "zz:00.0", "0000:03:00.0x"})
    EXPECT_FALSE(PciAddress::parse(bad, &a)) << bad;
}

TEST(CpuList, ParsesAndPrintsTheOsForm) {
  EXPECT_EQ(cpu_list(parse_cpu_list("0-5,48-53")), "0-5,48-53");
  EXPECT_EQ(cpu_list(parse_cpu_list("3,1,2,7")), "1-3,7");
  EXPECT_EQ(cpu_list(parse_cpu_list("")), "");
  EXPECT_EQ(cpu_list(parse_cpu_list("x,4")), "4");
  std::vector<bool> two = parse_cpu_list("1");
  EXPECT_EQ(two, (std::vector<bool>{false, true}));
}

TEST(HwlocXml, SyntheticTwoSocketNode) {
  Topology t = load_file(kData + "two-socket-gpu.xml");
  EXPECT_EQ(t.packages.size(), 2u);
  EXPECT_EQ(t.numas.size(), 2u);
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.pus, 4);
  ASSERT_EQ(t.gpus.size(), 3u) << "the ASPEED BMC VGA is not a GPU";
  EXPECT_EQ(gpu(t, 0).pci.to_string(), "0000:05:00.0");
  EXPECT_EQ(gpu(t, 1).pci.to_string(), "0000:09:00.0");
  EXPECT_EQ(gpu(t, 2).pci.to_string(), "0000:85:00.0");
  EXPECT_EQ(numa(t, t.gpus[0]), 0);
  EXPECT_EQ(numa(t, t.gpus[2]), 1);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_TRUE(nic(t, 0).rdma);
  EXPECT_EQ(nic(t, 0).link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(nic(t, 0).names, (std::vector<std::string>{"mlx5_0", "ib0"}));
  EXPECT_EQ(gpu_nic(t, 0, 0), "PIX");
  EXPECT_EQ(gpu_nic(t, 1, 0), "PHB");
  EXPECT_EQ(gpu_nic(t, 2, 0), "SYS");
  EXPECT_EQ(gpu_gpu(t, 0, 1), "PHB");
  EXPECT_EQ(gpu_gpu(t, 0, 2), "SYS");
  EXPECT_NEAR(path_between(t, t.gpus[1], t.nics[0]).gbps, 7.88, 0.01) << "the slower root port's link";
  EXPECT_EQ(nic_for_each_gpu(t), (std::vector<int>{0, 0, 0}));
}

TEST(NcclXml, SyntheticCloudNode) {
  Topology t = load_file(kData + "cloud-nccl.xml");
  ASSERT_EQ(t.numas.size(), 2u);
  EXPECT_EQ(t.nodes[static_cast<size_t>(t.numas[0])].cpuset, "0-15");
  EXPECT_EQ(t.nodes[static_cast<size_t>(t.numas[1])].cpuset, "48-63");
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(gpu(t, 0).pci.to_string(), "0000:10:1c.0");
  EXPECT_EQ(gpu(t, 2).pci.to_string(), "0001:00:00.0");
  EXPECT_EQ(gpu_gpu(t, 0, 1), "NVL");
  EXPECT_DOUBLE_EQ(path_between(t, t.gpus[0], t.gpus[1]).gbps, 240);
  EXPECT_EQ(gpu_gpu(t, 0, 1, false), "PIX");
  EXPECT_EQ(gpu_gpu(t, 0, 2), "SYS");
  ASSERT_EQ(t.nics.size(), 3u);
  EXPECT_EQ(nic(t, 0).link_layer, LinkLayer::kEfa);
  EXPECT_TRUE(nic(t, 0).rdma);
  EXPECT_EQ(nic(t, 1).link_layer, LinkLayer::kInfiniBand);
  EXPECT_FALSE(nic(t, 2).has_pci);
  EXPECT_EQ(nic(t, 2).names, std::vector<std::string>{"eth0"});
  EXPECT_FALSE(nic(t, 2).rdma);
  EXPECT_EQ(gpu_nic(t, 0, 0), "PIX");
  EXPECT_EQ(gpu_nic(t, 2, 1), "PHB");
  EXPECT_EQ(gpu_nic(t, 2, 2), "NODE");
  EXPECT_EQ(nic_for_each_gpu(t), (std::vector<int>{0, 0, 1})) << "RDMA NICs first; the Ethernet one is not used";
}

TEST(Dump, ReadsBackInNcclFormatWithTheSameAnswers) {
  Topology t = load_file(kData + "two-socket-gpu.xml");
  const std::string file = "/tmp/coll-topo-dump-" + std::to_string(getpid()) + ".xml";
  {
    std::ofstream out(file);
    out << to_nccl_xml(t);
  }
  Topology back = load_file(file);
  std::remove(file.c_str());
  ASSERT_EQ(back.gpus.size(), t.gpus.size());
  ASSERT_EQ(back.nics.size(), t.nics.size());
  ASSERT_EQ(back.numas.size(), t.numas.size());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    EXPECT_EQ(gpu(back, i).pci, gpu(t, i).pci);
    EXPECT_EQ(numa(back, back.gpus[i]), numa(t, t.gpus[i]));
    for (size_t j = 0; j < t.gpus.size(); ++j) EXPECT_EQ(gpu_gpu(back, i, j), gpu_gpu(t, i, j)) << i << "," << j;
    EXPECT_EQ(gpu_nic(back, i, 0), gpu_nic(t, i, 0)) << i;
  }
  EXPECT_EQ(nic(back, 0).names, nic(t, 0).names);
  EXPECT_EQ(back.nodes[static_cast<size_t>(back.numas[1])].cpuset, "2-3");
}

TEST(Dump, KeepsNvlinksToGpusAndSwitches) {
  const std::string file = "/tmp/coll-topo-dump-nvl-" + std::to_string(getpid()) + ".xml";
  Topology t = load_file(kData + "cloud-nccl.xml");
  std::ofstream(file) << to_nccl_xml(t);
  Topology back = load_file(file);
  EXPECT_EQ(gpu_gpu(back, 0, 1), "NVL");
  EXPECT_DOUBLE_EQ(path_between(back, back.gpus[0], back.gpus[1]).gbps, 240);
  // NVSwitch links whose target is no <pci> of the file (NCCL's own dumps):
  // one implied switch joins the GPUs.
  std::ofstream(file) << "<system version=\"1\"><cpu numaid=\"0\" affinity=\"00000003\">"
                      << "<pci busid=\"0000:07:00.0\" class=\"0x030200\"><gpu dev=\"0\">"
                      << "<nvlink target=\"0000:00:00.0\" count=\"12\" tclass=\"0x068000\"/></gpu></pci>"
                      << "<pci busid=\"0000:0f:00.0\" class=\"0x030200\"><gpu dev=\"1\">"
                      << "<nvlink target=\"0000:00:00.0\" count=\"12\" tclass=\"0x068000\"/></gpu></pci>"
                      << "</cpu></system>\n";
  Topology hgx = load_file(file);
  EXPECT_EQ(gpu_gpu(hgx, 0, 1), "NVL");
  EXPECT_DOUBLE_EQ(path_between(hgx, hgx.gpus[0], hgx.gpus[1]).gbps, 240);
  std::ofstream(file) << to_nccl_xml(hgx);
  EXPECT_EQ(gpu_gpu(load_file(file), 0, 1), "NVL") << to_nccl_xml(hgx);
  std::remove(file.c_str());
}

TEST(Load, BadFilesAreClearErrorsNamingTheFile) {
  const std::string dir = "/tmp/coll-topo-bad-" + std::to_string(getpid());
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/no/such/topology.xml", "cannot open"},
      {write(".garbage", "not xml at all"), "neither an hwloc XML export"},
      {write(".broken", "<system version=\"1\"><cpu numaid=\"0\">"), "not readable XML"},
      {write(".busid", "<system><cpu numaid=\"0\"><pci busid=\"12:zz\" class=\"0x030200\"/></cpu></system>"),
       "is not a PCI address"},
      {write(".hwloc", "<topology version=\"2.0\"><object type=\"Nonsense\"/></topology>"), "hwloc"},
  };
  for (const auto& [file, says] : cases) {
    try {
      load_file(file);
      ADD_FAILURE() << file << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    std::remove(file.c_str());
  }
}

TEST(Live, ThisMachineHasAtLeastOneNumaNodeAndItsCores) {
  Topology t = load_live();
  EXPECT_GE(t.numas.size(), 1u);
  EXPECT_EQ(t.pus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

// --- the real captures, with the answers of tests/data/topology/README.md ---

struct Expected {
  std::string file;
  size_t packages, numas;
  int cores, pus;
  size_t gpus, rdma;
  std::vector<int> gpu_numa;  // per GPU, CUDA order
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.file; }

class Capture : public ::testing::TestWithParam<Expected> {};

TEST_P(Capture, CountsAndGpuLocalityMatchTheReadme) {
  const Expected& e = GetParam();
  Topology t = load_file(kData + e.file);
  if (e.packages > 0) EXPECT_EQ(t.packages.size(), e.packages);
  EXPECT_EQ(t.numas.size(), e.numas);
  if (e.cores > 0) EXPECT_EQ(t.cores, e.cores);
  if (e.pus > 0) EXPECT_EQ(t.pus, e.pus);
  EXPECT_EQ(t.gpus.size(), e.gpus);
  EXPECT_EQ(rdma_nics(t), e.rdma);
  ASSERT_EQ(e.gpu_numa.size(), t.gpus.size());
  for (size_t g = 0; g < t.gpus.size(); ++g) EXPECT_EQ(numa(t, t.gpus[g]), e.gpu_numa[g]) << "GPU" << g;
}

INSTANTIATE_TEST_SUITE_P(
    Files, Capture,
    ::testing::Values(
        Expected{"hwloc/nvidiaDGX2.xml", 2, 2, 4, 4, 16, 0, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
        Expected{"hwloc/power8gpudistances.xml", 2, 2, 8, 16, 4, 0, {0, 0, 1, 1}},
        Expected{"hwloc/24em64t-2n6c2t-pci.xml", 2, 2, 12, 24, 3, 1, {0, 1, 1}},
        Expected{"hwloc/topo.jwb0004.xml", 2, 8, 48, 96, 4, 4, {3, 1, 7, 5}},
        Expected{"hwloc/topo.jrc0386.xml", 2, 8, 128, 256, 4, 4, {3, 1, 7, 5}},
        Expected{"hwloc/topo.jwc09n003.xml", 2, 2, 40, 80, 4, 2, {0, 0, 1, 1}},
        Expected{"hwloc/topo.mel2001.xml", 2, 8, 64, 128, 4, 2, {3, 1, 7, 5}},
        Expected{"hwloc/topo.jwc00n001.xml", 2, 2, 48, 96, 0, 1, {}},
        Expected{"hwloc/Intel-RaptorLake-Corei7-1370P.xml", 1, 1, 14, 20, 0, 0, {}},
        Expected{"nccl/ndv4-topo.xml", 0, 4, 0, 0, 8, 8, {1, 1, 0, 0, 3, 3, 2, 2}},
        Expected{"nccl/ndv5-topo.xml", 0, 2, 0, 0, 8, 8, {0, 0, 0, 0, 1, 1, 1, 1}},
        Expected{"nccl/ncv4-topo.xml", 0, 4, 0, 0, 4, 0, {0, 1, 2, 3}},
        Expected{"nccl/p4d-24xl-topo.xml", 0, 2, 0, 0, 8, 4, {0, 0, 0, 0, 1, 1, 1, 1}}),
    [](const auto& info) {
      std::string name = info.param.file;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// A capture of tests/data/topology/; load_file throws (the test fails) when it is missing.
Topology capture(const std::string& file) { return load_file(kData + file); }

std::vector<std::string> paired_names(const Topology& t) {
  std::vector<std::string> out;
  for (int k : nic_for_each_gpu(t)) out.push_back(nic(t, static_cast<size_t>(k)).names.at(0));
  return out;
}

// The smallest share of an L2 a core has: Raptor Lake's efficiency cores
// share 2 MiB four to a cluster (its performance cores have 1.25 MiB each);
// captures without caches, and NCCL's files, say nothing.
TEST(Captures, L2PerCoreIsTheSmallestShare) {
  for (const auto& [file, bytes] :
       std::vector<std::pair<std::string, size_t>>{{"hwloc/24em64t-2n6c2t-pci.xml", 262144},
                                                   {"hwloc/Intel-RaptorLake-Corei7-1370P.xml", 524288},
                                                   {"hwloc/nvidiaDGX2.xml", 1048576},
                                                   {"hwloc/topo.jwb0004.xml", 524288},
                                                   {"hwloc/power8gpudistances.xml", 0},
                                                   {"nccl/ndv5-topo.xml", 0}})
    EXPECT_EQ(capture(file).l2_bytes_per_core, bytes) << file;
}

// The staged direct-access allreduce streams in place where a core's L2
// cannot keep, for each of its ranks, the (n-1)/n of a 2 MiB window that
// step 1 read: on 2 ranks, 1 MiB.
TEST(Captures, InPlaceStreamsWhereTheL2CannotHoldWhatStepOneRead) {
  EXPECT_FALSE(streams_in_place(1280 << 10, 1, 2)) << "1.25 MiB of L2, 2 ranks: measured faster unstreamed";
  EXPECT_TRUE(streams_in_place(512 << 10, 1, 2)) << "512 KiB of L2, 2 ranks: measured faster streamed";
  EXPECT_TRUE(streams_in_place(512 << 10, 2, 4));
  EXPECT_FALSE(streams_in_place(1 << 20, 1, 2)) << "exactly what step 1 read";
  EXPECT_TRUE(streams_in_place((1 << 20) - 1, 1, 2));
  EXPECT_TRUE(streams_in_place(1280 << 10, 2, 4)) << "two ranks a core: 1.5 MiB each";
  EXPECT_FALSE(streams_in_place(2 << 20, 1, 8)) << "1.75 MiB";
  EXPECT_TRUE(streams_in_place(0, 1, 2)) << "an L2 not known streams, as out of place";
}

TEST(Captures, Dgx2NvlinkIslandsAndPcieTree) {
  Topology t = capture("hwloc/nvidiaDGX2.xml");
  size_t switches = 0;
  for (const Node& n : t.nodes) switches += n.kind == Kind::kNvSwitch;
  EXPECT_EQ(switches, 12u) << "hwloc's NVSwitch subtype counts the one with unreadable config space";
  EXPECT_EQ(gpu_gpu(t, 0, 1), "NVL");
  EXPECT_DOUBLE_EQ(path_between(t, t.gpus[0], t.gpus[7]).gbps, 150) << "6 switches x 25 GB/s";
  EXPECT_EQ(gpu_gpu(t, 0, 8), "SYS") << "two NVSwitch islands in this capture";
  EXPECT_EQ(gpu_gpu(t, 0, 1, false), "PIX");
  EXPECT_EQ(gpu_gpu(t, 0, 2, false), "PXB");
  EXPECT_EQ(gpu_gpu(t, 0, 4, false), "NODE");
  EXPECT_EQ(gpu_gpu(t, 14, 15, false), "PIX");
  EXPECT_EQ(gpu_gpu(t, 0, 8, false), "SYS");
  std::vector<int> ring = gpu_ring(t);
  int crossings = 0;
  for (size_t i = 0; i < ring.size(); ++i)
    crossings += gpu_gpu(t, static_cast<size_t>(ring[i]), static_cast<size_t>(ring[(i + 1) % ring.size()])) != "NVL";
  EXPECT_EQ(crossings, 2) << "the ring leaves each NVLink island once";
  // The dump keeps the NVSwitch links.
  const std::string file = "/tmp/coll-topo-dgx2-" + std::to_string(getpid()) + ".xml";
  std::ofstream(file) << to_nccl_xml(t);
  Topology back = load_file(file);
  std::remove(file.c_str());
  EXPECT_EQ(gpu_gpu(back, 0, 7), "NVL");
  EXPECT_DOUBLE_EQ(path_between(back, back.gpus[0], back.gpus[7]).gbps, 150);
  EXPECT_EQ(gpu_gpu(back, 0, 8), "SYS");
}

TEST(Captures, Power8NvlinkPairs) {
  Topology t = capture("hwloc/power8gpudistances.xml");
  EXPECT_EQ(gpu(t, 0).pci.to_string(), "0002:01:00.0");
  EXPECT_EQ(gpu_gpu(t, 0, 1), "NVL");
  EXPECT_EQ(gpu_gpu(t, 2, 3), "NVL");
  EXPECT_EQ(gpu_gpu(t, 0, 2), "SYS");
  EXPECT_EQ(gpu_gpu(t, 0, 1, false), "NODE");
}

TEST(Captures, Sl390sGpuNicPaths) {
  Topology t = capture("hwloc/24em64t-2n6c2t-pci.xml");
  size_t hca = 0;  // the ConnectX-2; the Intel 82576 ports are NICs too, not RDMA ones
  while (hca < t.nics.size() && !nic(t, hca).rdma) ++hca;
  ASSERT_LT(hca, t.nics.size());
  EXPECT_EQ(nic(t, hca).names.at(0), "mlx4_0");
  EXPECT_EQ(gpu_nic(t, 0, hca), "PHB");
  EXPECT_EQ(gpu_nic(t, 1, hca), "SYS");
  EXPECT_EQ(gpu_nic(t, 2, hca), "SYS");
  EXPECT_EQ(gpu_gpu(t, 1, 2), "PHB");
  EXPECT_EQ(nic_for_each_gpu(t), (std::vector<int>(3, static_cast<int>(hca))));
}

TEST(Captures, JuwelsBoosterOneNicPerGpu) {
  Topology t = capture("hwloc/topo.jwb0004.xml");
  for (size_t g = 0; g < 4; ++g) EXPECT_EQ(gpu_nic(t, g, g), "PIX") << g;
  EXPECT_EQ(gpu_nic(t, 0, 1), "SYS(same-pkg)");
  EXPECT_EQ(gpu_nic(t, 0, 2), "SYS");
  EXPECT_EQ(paired_names(t), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  EXPECT_EQ(t.nodes[static_cast<size_t>(t.numa_of(t.gpus[0]))].cpuset, "18-23,66-71");
}

TEST(Captures, JurecaPairsByLocalityNotName) {
  Topology t = capture("hwloc/topo.jrc0386.xml");
  EXPECT_EQ(paired_names(t), (std::vector<std::string>{"mlx5_1", "mlx5_0", "mlx5_3", "mlx5_2"}));
  for (size_t g = 0; g < 4; ++g) EXPECT_EQ(gpu_nic(t, g, g), "PIX") << g;
}

TEST(Captures, JuwelsClusterTwoGpusPerNic) {
  Topology t = capture("hwloc/topo.jwc09n003.xml");
  EXPECT_EQ(paired_names(t), (std::vector<std::string>{"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"}));
  EXPECT_EQ(gpu_gpu(t, 0, 1), "PIX");
  EXPECT_EQ(gpu_gpu(t, 2, 3), "PIX");
  EXPECT_EQ(gpu_gpu(t, 0, 2), "SYS");
}

TEST(Captures, MeluxinaAsymmetricNics) {
  Topology t = capture("hwloc/topo.mel2001.xml");
  EXPECT_EQ(gpu_nic(t, 1, 0), "PIX");
  EXPECT_EQ(gpu_nic(t, 2, 1), "PIX");
  EXPECT_EQ(gpu_nic(t, 0, 0), "SYS(same-pkg)");
  EXPECT_EQ(gpu_nic(t, 3, 1), "SYS(same-pkg)");
  EXPECT_EQ(paired_names(t), (std::vector<std::string>{"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"}));
}

TEST(Captures, CpuOnlyServerNicOnSocket0) {
  Topology t = capture("hwloc/topo.jwc00n001.xml");
  std::vector<int> rdma;
  for (int n : t.nics)
    if (t.nodes[static_cast<size_t>(n)].rdma) rdma.push_back(n);
  ASSERT_EQ(rdma.size(), 1u);
  EXPECT_EQ(numa(t, rdma[0]), 0);
  EXPECT_TRUE(nic_for_each_gpu(t).empty());
}

TEST(Captures, Hwloc3FormatIsRefusedClearly) {
  const std::string file = kData + "hwloc/v3/nvidiaDGX2.xml";
  ASSERT_EQ(access(file.c_str(), R_OK), 0) << file << " is missing: the refusal below would be for the wrong reason";
  try {
    load_file(file);
    ADD_FAILURE() << "hwloc 2.x loaded a 3.0 export";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("3.0"), std::string::npos) << e.what();
  }
}

TEST(Captures, AzureNdv4AndNdv5OneNicPerGpu) {
  for (const char* file : {"nccl/ndv4-topo.xml", "nccl/ndv5-topo.xml"}) {
    Topology t = capture(file);
    for (size_t g = 0; g < 8; ++g) EXPECT_EQ(gpu_nic(t, g, g), "PIX") << file << " GPU" << g;
    EXPECT_EQ(nic_for_each_gpu(t), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7})) << file;
  }
  Topology v5 = capture("nccl/ndv5-topo.xml");
  EXPECT_EQ(gpu(v5, 3).pci.to_string(), "0008:00:00.0");
  EXPECT_EQ(v5.nodes[static_cast<size_t>(v5.numa_of(v5.gpus[4]))].cpuset, "48-95");
}

TEST(Captures, AzureNcv4NoRdmaAndASelfNvlink) {
  Topology t = capture("nccl/ncv4-topo.xml");
  EXPECT_EQ(gpu_gpu(t, 0, 1), "SYS") << "an NVLink to the GPU itself is not a link";
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_FALSE(nic(t, 0).has_pci);
  EXPECT_EQ(nic(t, 0).names, std::vector<std::string>{"eth0"});
}

TEST(Captures, AwsP4dEfaPairs) {
  Topology t = capture("nccl/p4d-24xl-topo.xml");
  for (size_t g = 0; g < 8; ++g) {
    EXPECT_EQ(gpu_nic(t, g, g / 2), "PIX") << g;
    EXPECT_EQ(nic(t, g / 2).link_layer, LinkLayer::kEfa);
  }
  EXPECT_EQ(nic_for_each_gpu(t), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
}

}  // namespace
}  // namespace coll::topo

namespace coll {
namespace {

std::string address_on(const std::string& host) { return "shm=shm|" + host + "|/seg|1;tcp=tcp|x;host=" + host; }

// The orders, from the router addresses as the communicator gets them.
std::vector<std::vector<int>> nodes_of(const std::vector<std::string>& addresses) {
  std::vector<std::string> hosts;
  for (const auto& a : addresses) hosts.push_back(Router::host_of(a));
  return ranks_by_node(hosts);
}
std::vector<int> ring_by_node(const std::vector<std::string>& addresses) {
  return coll::ring_by_node(nodes_of(addresses));
}
std::vector<int> spread_over_nodes(const std::vector<std::string>& addresses) {
  return coll::spread_over_nodes(nodes_of(addresses));
}

TEST(RingByNode, GroupsRanksByNodeKeepingLauncherOrderInside) {
  // Interleaved placement: ranks 0,2 on A; 1,3 on B.
  EXPECT_EQ(ring_by_node({address_on("A"), address_on("B"), address_on("A"), address_on("B")}),
            (std::vector<int>{0, 2, 1, 3}));
  // Three nodes, round robin over 6 ranks.
  std::vector<std::string> six;
  for (int r = 0; r < 6; ++r) six.push_back(address_on(std::string(1, static_cast<char>('A' + r % 3))));
  EXPECT_EQ(ring_by_node(six), (std::vector<int>{0, 3, 1, 4, 2, 5}));
  // Already grouped, or one node: the launcher's order (empty).
  EXPECT_TRUE(ring_by_node({address_on("A"), address_on("A"), address_on("B"), address_on("B")}).empty());
  EXPECT_TRUE(ring_by_node({address_on("A"), address_on("A")}).empty());
  EXPECT_EQ(Router::host_of(address_on("node7")), "node7");
}

TEST(SpreadOverNodes, TakesTurnsBetweenNodes) {
  // In blocks: ranks 0,1 on A; 2,3 on B -> A B A B.
  EXPECT_EQ(spread_over_nodes({address_on("A"), address_on("A"), address_on("B"), address_on("B")}),
            (std::vector<int>{0, 2, 1, 3}));
  // Interleaved already takes turns; one node keeps launcher order.
  EXPECT_TRUE(spread_over_nodes({address_on("A"), address_on("B"), address_on("A"), address_on("B")}).empty());
  EXPECT_TRUE(spread_over_nodes({address_on("A"), address_on("A"), address_on("A")}).empty());
  // Unequal nodes: 3 on A, 1 on B.
  EXPECT_EQ(spread_over_nodes({address_on("A"), address_on("A"), address_on("A"), address_on("B")}),
            (std::vector<int>{0, 3, 1, 2}));
}

}  // namespace
}  // namespace coll
