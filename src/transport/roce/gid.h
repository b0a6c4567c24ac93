// Choosing the RoCE GID of a port without the user's help. NCCL makes users
// find NCCL_IB_GID_INDEX by hand; coll reads the port's GID table and takes the
// first RoCE v2 entry of the wanted address family (and range). Pure: strings,
// bytes and sysfs files, no libibverbs.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace coll::transport::roce {

using GidBytes = std::array<uint8_t, 16>;

enum class GidType { kUnknown, kIbRoceV1, kRoceV2 };

struct GidEntry {
  int index = 0;
  GidBytes raw{};  // all zero: an unused slot
  GidType type = GidType::kUnknown;
  std::string netdev;  // empty when unknown
};

struct GidPolicy {
  int family = AF_INET;     // or AF_INET6 (COLL_IB_ADDR_FAMILY)
  std::string range;        // CIDR, optional, e.g. 10.1.0.0/16 or fd00::/8 (COLL_IB_ADDR_RANGE)
  int override_index = -1;  // >= 0: COLL_IB_GID_INDEX, no choice made
};

struct GidChoice {
  int index = -1;
  GidEntry entry;
  std::string reason;  // for the log line
};

// A CIDR range over GIDs: an IPv4 range is kept as its IPv4-mapped form, so
// that containment is one prefix comparison over 128 bits.
struct AddrRange {
  int family = AF_UNSPEC;
  GidBytes base{};
  int bits = 0;  // prefix length over the 16 GID bytes (IPv4 /n is 96 + n)
  std::string text;

  bool contains(const GidBytes& gid) const;
};

// Throws Error(kSystem) naming `where`, the policy, why each entry was
// rejected, the table and a hint; Error(kInvalidArgument) for a bad policy.
GidChoice choose_gid(const std::vector<GidEntry>& table, const GidPolicy& policy, const std::string& where);

// "AF_INET", "AF_INET6", "ipv4", "ipv6", "4", "6" (any case); else kInvalidArgument.
int parse_family(const std::string& text);
const char* family_name(int family);

// "10.1.0.0/16" or "fd00::/8"; kInvalidArgument naming COLL_IB_ADDR_RANGE otherwise.
AddrRange parse_range(const std::string& text);

bool is_zero(const GidBytes& gid);
bool is_ipv4_mapped(const GidBytes& gid);
bool is_link_local(const GidBytes& gid);

// IPv4-mapped as "::ffff:10.0.2.15", else the inet_ntop IPv6 form.
std::string gid_text(const GidBytes& gid);
const char* gid_type_name(GidType type);
// "index 3 ::ffff:10.0.2.15 (RoCE v2, IPv4, eth0)"
std::string describe_entry(const GidEntry& entry);
// One line per used entry, then a count of the unused ones.
std::string describe_table(const std::vector<GidEntry>& table);

// <sysfs_root>/class/infiniband/<device>/ports/<port>/gids/* with their types
// and ndevs, sorted by index, unused (all-zero) entries included. Empty when
// the gids folder cannot be read (the caller then asks libibverbs).
std::vector<GidEntry> read_gid_table(const std::string& sysfs_root, const std::string& device, int port);

}  // namespace coll::transport::roce
