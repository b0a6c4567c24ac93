// COLL_IB_HCA parsing and the automatic RoCE GID choice: pure text and bytes.
#include "base/error.h"
#include "transport/ib/hca.h"
#include "transport/roce/gid.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace coll::transport {
namespace {

using ib::HcaFilter;
using roce::GidEntry;
using roce::GidPolicy;
using roce::GidType;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The Error that `f` throws; a test failure when it throws nothing.
template <typename F>
Error error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(Code::kInternal, "");
}

TEST(HcaFilter, EmptySelectsEverything) {
  HcaFilter f = HcaFilter::parse("");
  EXPECT_TRUE(f.entries.empty());
  EXPECT_TRUE(f.selects("mlx5_0", 1));
  EXPECT_TRUE(f.selects("rxe0", 2));
  EXPECT_EQ(f.describe(), "every HCA");
}

TEST(HcaFilter, NamesArePrefixesLikeNccl) {
  HcaFilter f = HcaFilter::parse("mlx5");
  EXPECT_FALSE(f.exclude);
  EXPECT_FALSE(f.exact);
  EXPECT_TRUE(f.selects("mlx5_0", 1));
  EXPECT_TRUE(f.selects("mlx5_12", 1));
  EXPECT_FALSE(f.selects("mlx4_0", 1));
  HcaFilter g = HcaFilter::parse("mlx5_1");
  EXPECT_TRUE(g.selects("mlx5_1", 1));
  EXPECT_TRUE(g.selects("mlx5_12", 1));
  EXPECT_FALSE(g.selects("mlx5_2", 1));
  EXPECT_EQ(g.describe(), "only names starting with mlx5_1");
}

TEST(HcaFilter, EqualsMeansExactNames) {
  HcaFilter f = HcaFilter::parse("=mlx5_1,rxe0");
  EXPECT_TRUE(f.exact);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[1].device, "rxe0");
  EXPECT_TRUE(f.selects("mlx5_1", 1));
  EXPECT_FALSE(f.selects("mlx5_12", 1));
  EXPECT_TRUE(f.selects("rxe0", 1));
  EXPECT_FALSE(f.selects("rxe", 1));
  EXPECT_EQ(f.describe(), "only names equal to mlx5_1, rxe0");
}

TEST(HcaFilter, CaretExcludes) {
  HcaFilter f = HcaFilter::parse("^mlx5_1");
  EXPECT_TRUE(f.exclude);
  EXPECT_FALSE(f.exact);
  EXPECT_TRUE(f.selects("mlx5_0", 1));
  EXPECT_FALSE(f.selects("mlx5_1", 1));
  EXPECT_FALSE(f.selects("mlx5_12", 1));
  EXPECT_EQ(f.describe(), "every HCA except names starting with mlx5_1");
}

TEST(HcaFilter, CaretEqualsExcludesExactNames) {
  HcaFilter f = HcaFilter::parse("^=mlx5_1");
  EXPECT_TRUE(f.exclude);
  EXPECT_TRUE(f.exact);
  EXPECT_FALSE(f.selects("mlx5_1", 1));
  EXPECT_TRUE(f.selects("mlx5_12", 1));
  EXPECT_TRUE(f.selects("mlx5_0", 2));
}

TEST(HcaFilter, PortsNarrowAnEntry) {
  HcaFilter f = HcaFilter::parse("mlx5_0:1,mlx5_1");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].device, "mlx5_0");
  EXPECT_EQ(f.entries[0].port, 1);
  EXPECT_EQ(f.entries[1].port, -1);
  EXPECT_TRUE(f.selects("mlx5_0", 1));
  EXPECT_FALSE(f.selects("mlx5_0", 2));
  EXPECT_TRUE(f.selects("mlx5_1", 2));
  EXPECT_FALSE(f.selects("mlx5_2", 1));
  EXPECT_EQ(f.describe(), "only names starting with mlx5_0 (port 1), mlx5_1");
  HcaFilter g = HcaFilter::parse("^=mlx5_0:2");
  EXPECT_TRUE(g.selects("mlx5_0", 1));
  EXPECT_FALSE(g.selects("mlx5_0", 2));
  EXPECT_TRUE(g.selects("mlx5_1", 2));
}

TEST(HcaFilter, MalformedTextNamesTheSettingAndEntry) {
  struct Case {
    const char* text;
    const char* entry;
  };
  for (Case c : {Case{"mlx5_0,,x", "\"\""}, Case{"mlx5_0,", "\"\""}, Case{"^", "\"\""}, Case{"^=", "\"\""},
                 Case{"mlx5_0:", "\"mlx5_0:\""}, Case{"mlx5_0:0", "\"mlx5_0:0\""}, Case{"mlx5_0:-1", "\"mlx5_0:-1\""},
                 Case{"mlx5_0:1x", "\"mlx5_0:1x\""}, Case{"mlx5_0:1:2", "\"mlx5_0:1:2\""}, Case{":1", "\":1\""},
                 Case{"=mlx5_0:99999999999", "\"mlx5_0:99999999999\""}}) {
    Error e = error_of([&] { HcaFilter::parse(c.text); });
    std::string what = e.what();
    EXPECT_EQ(e.code(), Code::kInvalidArgument) << c.text;
    EXPECT_TRUE(contains(what, "COLL_IB_HCA")) << what;
    EXPECT_TRUE(contains(what, std::string("entry ") + c.entry)) << what;
    EXPECT_TRUE(contains(what, "device[:port]")) << what;
  }
}

// A GID table entry from its text form, as the tests write them.
GidEntry gid(int index, const char* text, GidType type, const char* netdev) {
  GidEntry e;
  e.index = index;
  EXPECT_EQ(inet_pton(AF_INET6, text, e.raw.data()), 1) << text;
  e.type = type;
  e.netdev = netdev;
  return e;
}

GidEntry unused(int index) { return GidEntry{index, {}, GidType::kUnknown, ""}; }

constexpr GidType kV1 = GidType::kIbRoceV1;
constexpr GidType kV2 = GidType::kRoceV2;

// What soft-RoCE (rxe) on a VM's eth0 shows: a link-local pair, then the IPv4 pair.
std::vector<GidEntry> rxe_table() {
  return {gid(0, "fe80::5054:ff:fe12:3456", kV1, "eth0"),
          gid(1, "fe80::5054:ff:fe12:3456", kV2, "eth0"),
          gid(2, "::ffff:10.0.2.15", kV1, "eth0"),
          gid(3, "::ffff:10.0.2.15", kV2, "eth0"),
          unused(4),
          unused(5)};
}

TEST(GidChoice, RxeTableGivesTheRoceV2Ipv4Entry) {
  roce::GidChoice c = roce::choose_gid(rxe_table(), GidPolicy{}, "rxe0 port 1");
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.entry.netdev, "eth0");
  EXPECT_EQ(c.reason, "index 3 ::ffff:10.0.2.15 (RoCE v2, IPv4, eth0): the first RoCE v2 IPv4 entry");
}

TEST(GidChoice, OnlyLinkLocalIsAClearError) {
  std::vector<GidEntry> table = {gid(0, "fe80::5054:ff:fe12:3456", kV1, "eth0"),
                                 gid(1, "fe80::5054:ff:fe12:3456", kV2, "eth0"), unused(2), unused(3)};
  EXPECT_EQ(roce::describe_table(table),
            "  index 0 fe80::5054:ff:fe12:3456 (IB/RoCE v1, IPv6 link-local, eth0)\n"
            "  index 1 fe80::5054:ff:fe12:3456 (RoCE v2, IPv6 link-local, eth0)\n"
            "  and 2 unused (all-zero) entries\n");
  Error e = error_of([&] { roce::choose_gid(table, GidPolicy{}, "rxe0 port 1"); });
  std::string what = e.what();
  EXPECT_EQ(e.code(), Code::kSystem);
  EXPECT_TRUE(contains(what, "no usable RoCE GID on rxe0 port 1 for COLL_IB_ADDR_FAMILY=AF_INET")) << what;
  EXPECT_TRUE(contains(what, "  index 0: IB/RoCE v1, not RoCE v2\n  index 1: link-local (fe80::/10)\n")) << what;
  EXPECT_TRUE(contains(what, roce::describe_table(table))) << what;
  EXPECT_TRUE(contains(what,
                       "give the interface an IPv4 address, or set COLL_IB_ADDR_FAMILY=AF_INET6, or "
                       "COLL_IB_GID_INDEX"))
      << what;
  // IPv6 wanted: link-local is still not enough.
  Error e6 = error_of([&] { roce::choose_gid(table, GidPolicy{.family = AF_INET6}, "rxe0 port 1"); });
  EXPECT_EQ(e6.code(), Code::kSystem);
  EXPECT_TRUE(contains(e6.what(), "or set COLL_IB_ADDR_FAMILY=AF_INET, or COLL_IB_GID_INDEX")) << e6.what();
}

TEST(GidChoice, FamilyPicksBetweenIpv4AndIpv6) {
  std::vector<GidEntry> table = rxe_table();
  table[4] = gid(4, "fd00::15", kV1, "eth0");
  table[5] = gid(5, "fd00::15", kV2, "eth0");
  roce::GidChoice v6 = roce::choose_gid(table, GidPolicy{.family = AF_INET6}, "rxe0 port 1");
  EXPECT_EQ(v6.index, 5);
  EXPECT_EQ(v6.reason, "index 5 fd00::15 (RoCE v2, IPv6, eth0): the first RoCE v2 IPv6 entry");
  EXPECT_EQ(roce::choose_gid(table, GidPolicy{.family = AF_INET}, "rxe0 port 1").index, 3);
}

TEST(GidChoice, RangeChoosesTheSubnet) {
  std::vector<GidEntry> table = {gid(0, "fe80::1", kV1, "eth0"),         gid(1, "fe80::1", kV2, "eth0"),
                                 gid(2, "::ffff:10.1.0.5", kV1, "eth0"), gid(3, "::ffff:10.1.0.5", kV2, "eth0"),
                                 gid(4, "::ffff:10.2.0.5", kV1, "eth1"), gid(5, "::ffff:10.2.0.5", kV2, "eth1")};
  EXPECT_EQ(roce::choose_gid(table, GidPolicy{}, "mlx5_0 port 1").index, 3);
  roce::GidChoice c = roce::choose_gid(table, GidPolicy{.range = "10.2.0.0/16"}, "mlx5_0 port 1");
  EXPECT_EQ(c.index, 5);
  EXPECT_EQ(c.reason, "index 5 ::ffff:10.2.0.5 (RoCE v2, IPv4, eth1): the first RoCE v2 IPv4 entry in 10.2.0.0/16");
  EXPECT_EQ(roce::choose_gid(table, GidPolicy{.range = "10.0.0.0/8"}, "mlx5_0 port 1").index, 3);

  Error none = error_of([&] { roce::choose_gid(table, GidPolicy{.range = "10.3.0.0/16"}, "mlx5_0 port 1"); });
  EXPECT_EQ(none.code(), Code::kSystem);
  EXPECT_TRUE(contains(none.what(), "COLL_IB_ADDR_RANGE=10.3.0.0/16")) << none.what();
  EXPECT_TRUE(contains(none.what(), "  index 5: outside 10.3.0.0/16\n")) << none.what();

  Error mismatch = error_of([&] { roce::choose_gid(table, GidPolicy{.range = "fd00::/8"}, "mlx5_0 port 1"); });
  EXPECT_EQ(mismatch.code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(mismatch.what(), "COLL_IB_ADDR_RANGE")) << mismatch.what();
  EXPECT_TRUE(contains(mismatch.what(), "COLL_IB_ADDR_FAMILY")) << mismatch.what();
}

TEST(GidChoice, OverrideIndex) {
  roce::GidChoice c = roce::choose_gid(rxe_table(), GidPolicy{.override_index = 2}, "rxe0 port 1");
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.reason, "index 2 ::ffff:10.0.2.15 (IB/RoCE v1, IPv4, eth0): set by COLL_IB_GID_INDEX");
  Error zero = error_of([] { roce::choose_gid(rxe_table(), GidPolicy{.override_index = 4}, "rxe0 port 1"); });
  EXPECT_EQ(zero.code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(zero.what(), "COLL_IB_GID_INDEX=4 on rxe0 port 1: the entry is unused")) << zero.what();
  EXPECT_TRUE(contains(zero.what(), roce::describe_table(rxe_table()))) << zero.what();
  Error missing = error_of([] { roce::choose_gid(rxe_table(), GidPolicy{.override_index = 99}, "rxe0 port 1"); });
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(missing.what(), "COLL_IB_GID_INDEX=99 on rxe0 port 1: no such entry")) << missing.what();
}

TEST(GidChoice, UnknownTypesAreAcceptedOnlyWhenNoneCouldBeRead) {
  std::vector<GidEntry> unreadable = {gid(0, "fe80::1", GidType::kUnknown, "eth0"),
                                      gid(1, "::ffff:10.0.2.15", GidType::kUnknown, "eth0"), unused(2)};
  roce::GidChoice c = roce::choose_gid(unreadable, GidPolicy{}, "rxe0 port 1");
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.reason,
            "index 1 ::ffff:10.0.2.15 (type unknown, IPv4, eth0): the first IPv4 entry (no GID type could be "
            "read, so it may be RoCE v1)");
  // One readable type: the unknown ones are rejected, not guessed at.
  std::vector<GidEntry> mixed = {gid(0, "::ffff:10.0.0.1", GidType::kUnknown, "eth0"),
                                 gid(1, "::ffff:10.0.0.2", kV2, "eth0")};
  EXPECT_EQ(roce::choose_gid(mixed, GidPolicy{}, "rxe0 port 1").index, 1);
}

TEST(GidPolicyText, FamilyAndRange) {
  EXPECT_EQ(roce::parse_family("AF_INET"), AF_INET);
  EXPECT_EQ(roce::parse_family("af_inet6"), AF_INET6);
  EXPECT_EQ(roce::parse_family("IPv4"), AF_INET);
  EXPECT_EQ(roce::parse_family("ipv6"), AF_INET6);
  EXPECT_EQ(roce::parse_family("4"), AF_INET);
  EXPECT_EQ(roce::parse_family("6"), AF_INET6);
  Error bad_family = error_of([] { roce::parse_family("inet5"); });
  EXPECT_EQ(bad_family.code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(bad_family.what(), "COLL_IB_ADDR_FAMILY")) << bad_family.what();

  roce::AddrRange r = roce::parse_range("10.0.0.0/9");
  EXPECT_EQ(r.family, AF_INET);
  EXPECT_EQ(r.bits, 105);
  EXPECT_TRUE(r.contains(gid(0, "::ffff:10.127.1.1", kV2, "").raw));
  EXPECT_FALSE(r.contains(gid(0, "::ffff:10.128.1.1", kV2, "").raw));
  EXPECT_FALSE(r.contains(gid(0, "fd00::a7f:101", kV2, "").raw));
  roce::AddrRange r6 = roce::parse_range("fd00::/8");
  EXPECT_EQ(r6.family, AF_INET6);
  EXPECT_TRUE(r6.contains(gid(0, "fd12::1", kV2, "").raw));
  EXPECT_FALSE(r6.contains(gid(0, "fe80::1", kV2, "").raw));
  EXPECT_TRUE(roce::parse_range("0.0.0.0/0").contains(gid(0, "::ffff:1.2.3.4", kV2, "").raw));
  for (const char* text : {"10.1.0.0", "10.1.0.0/33", "10.1.0.0/", "10.1.0.0/x", "fd00::/129", "10.1.0/16", "/8"}) {
    Error e = error_of([&] { roce::parse_range(text); });
    EXPECT_EQ(e.code(), Code::kInvalidArgument) << text;
    EXPECT_TRUE(contains(e.what(), "COLL_IB_ADDR_RANGE")) << e.what();
  }
}

TEST(GidPolicyText, GidText) {
  EXPECT_EQ(roce::gid_text(gid(0, "::ffff:10.0.2.15", kV2, "").raw), "::ffff:10.0.2.15");
  EXPECT_EQ(roce::gid_text(gid(0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", kV2, "").raw), "fe80::5054:ff:fe12:3456");
  EXPECT_EQ(roce::gid_text(gid(0, "fd00::15", kV2, "").raw), "fd00::15");
  EXPECT_EQ(roce::gid_text(unused(0).raw), "::");
}

// A fake /sys in a temporary folder, removed at the end.
class RoceSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coll_gid_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    port_ = root_ / "class/infiniband/rxe0/ports/1";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    std::filesystem::path path = port_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  // One slot as the kernel shows it; an empty type or netdev writes no file.
  void slot(int index, const std::string& gid, const std::string& type, const std::string& netdev) {
    std::string name = std::to_string(index);
    write("gids/" + name, gid + "\n");
    if (!type.empty()) write("gid_attrs/types/" + name, type + "\n");
    if (!netdev.empty()) write("gid_attrs/ndevs/" + name, netdev + "\n");
  }

  std::filesystem::path root_;
  std::filesystem::path port_;
};

TEST_F(RoceSysfs, ReadsTheTableSortedWithZeroAndUntypedEntries) {
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  slot(0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1", "eth0");
  slot(1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2", "eth0");
  slot(2, "0000:0000:0000:0000:0000:ffff:0a00:020f", "IB/RoCE v1", "eth0");
  slot(3, "0000:0000:0000:0000:0000:ffff:0a00:020f", "RoCE v2", "eth0");
  slot(4, zero, "", "");
  slot(5, "fd00:0000:0000:0000:0000:0000:0000:0015", "", "eth0");  // types file missing
  slot(10, zero, "", "");                                          // sorts after 5, not after 1 as the names would

  std::vector<GidEntry> table = roce::read_gid_table(root_.string(), "rxe0", 1);
  ASSERT_EQ(table.size(), 7u);
  std::vector<int> indices;
  for (const GidEntry& e : table) indices.push_back(e.index);
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 3, 4, 5, 10}));
  EXPECT_EQ(roce::describe_entry(table[0]), "index 0 fe80::5054:ff:fe12:3456 (IB/RoCE v1, IPv6 link-local, eth0)");
  EXPECT_EQ(roce::describe_entry(table[3]), "index 3 ::ffff:10.0.2.15 (RoCE v2, IPv4, eth0)");
  EXPECT_TRUE(roce::is_zero(table[4].raw));
  EXPECT_EQ(table[4].type, GidType::kUnknown);
  EXPECT_EQ(table[4].netdev, "");
  EXPECT_EQ(roce::describe_entry(table[5]), "index 5 fd00::15 (type unknown, IPv6, eth0)");
  EXPECT_TRUE(roce::is_zero(table[6].raw));

  EXPECT_EQ(roce::choose_gid(table, GidPolicy{}, "rxe0 port 1").index, 3);
  // Index 5's type is unknown while others are known: not taken for IPv6.
  Error e = error_of([&] { roce::choose_gid(table, GidPolicy{.family = AF_INET6}, "rxe0 port 1"); });
  EXPECT_EQ(e.code(), Code::kSystem);
  EXPECT_TRUE(contains(e.what(), "  index 5: type unknown, not RoCE v2\n")) << e.what();
}

TEST_F(RoceSysfs, MissingFolderGivesAnEmptyTable) {
  EXPECT_TRUE(roce::read_gid_table(root_.string(), "rxe0", 1).empty());
  EXPECT_TRUE(roce::read_gid_table(root_.string(), "mlx5_0", 2).empty());
}

}  // namespace
}  // namespace coll::transport
