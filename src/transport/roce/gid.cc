#include "transport/roce/gid.h"

#include "base/error.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>

namespace coll::transport::roce {

namespace {

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A non-empty run of digits, at most `max`; -1 otherwise.
int parse_small_number(const std::string& s, int max) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
  int n = std::stoi(s);
  return n <= max ? n : -1;
}

const char* address_kind(const GidBytes& gid) {
  if (is_ipv4_mapped(gid)) return "IPv4";
  return is_link_local(gid) ? "IPv6 link-local" : "IPv6";
}

const char* family_label(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

// Why the entry cannot be chosen under the policy; empty when it can.
std::string rejection(const GidEntry& e, int family, const std::optional<AddrRange>& range, bool accept_unknown) {
  if (is_zero(e.raw)) return "unused";
  if (e.type == GidType::kIbRoceV1) return "IB/RoCE v1, not RoCE v2";
  if (e.type == GidType::kUnknown && !accept_unknown) return "type unknown, not RoCE v2";
  if (is_link_local(e.raw)) return "link-local (fe80::/10)";
  int entry_family = is_ipv4_mapped(e.raw) ? AF_INET : AF_INET6;
  if (entry_family != family) return str_cat(family_label(entry_family), ", not ", family_label(family));
  if (range && !range->contains(e.raw)) return str_cat("outside ", range->text);
  return "";
}

// When no entry's type could be read (old kernels, odd drivers), RoCE v2
// cannot be told from v1; taking an unknown one beats failing outright.
bool no_type_readable(const std::vector<GidEntry>& table) {
  return std::all_of(table.begin(), table.end(),
                     [](const GidEntry& e) { return is_zero(e.raw) || e.type == GidType::kUnknown; });
}

GidChoice choose_by_override(const std::vector<GidEntry>& table, int index, const std::string& where) {
  auto it = std::find_if(table.begin(), table.end(), [&](const GidEntry& e) { return e.index == index; });
  if (it == table.end() || is_zero(it->raw)) {
    fail(Code::kInvalidArgument, "COLL_IB_GID_INDEX=", index, " on ", where, ": ",
         it == table.end() ? "no such entry" : "the entry is unused (all zero)", "; the GID table:\n",
         describe_table(table));
  }
  return GidChoice{index, *it, describe_entry(*it) + ": set by COLL_IB_GID_INDEX"};
}

std::string no_candidate_hint(int family, bool has_range) {
  std::string hint = family == AF_INET ? "give the interface an IPv4 address, or set COLL_IB_ADDR_FAMILY=AF_INET6"
                                       : "give the interface a global or unique-local IPv6 address, or set "
                                         "COLL_IB_ADDR_FAMILY=AF_INET";
  if (has_range) hint += ", or widen or unset COLL_IB_ADDR_RANGE";
  return hint + ", or COLL_IB_GID_INDEX=<index>";
}

// The first line of a sysfs file, trimmed; empty when it cannot be read
// (the types file of an unused entry fails with EINVAL).
std::string read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "";
  return trim(line);
}

GidType parse_type(const std::string& text) {
  if (text == "RoCE v2") return GidType::kRoceV2;
  if (text == "IB/RoCE v1") return GidType::kIbRoceV1;
  return GidType::kUnknown;
}

// An unparsable GID reads as all zero: unusable, like an unused slot.
GidBytes parse_gid(const std::string& text) {
  GidBytes raw{};
  if (inet_pton(AF_INET6, text.c_str(), raw.data()) != 1) raw.fill(0);
  return raw;
}

}  // namespace

GidChoice choose_gid(const std::vector<GidEntry>& table, const GidPolicy& policy, const std::string& where) {
  if (policy.family != AF_INET && policy.family != AF_INET6)
    fail(Code::kInvalidArgument, "COLL_IB_ADDR_FAMILY: address family ", policy.family,
         " is neither AF_INET nor AF_INET6");
  if (policy.override_index >= 0) return choose_by_override(table, policy.override_index, where);
  std::optional<AddrRange> range;
  if (!trim(policy.range).empty()) range = parse_range(policy.range);
  if (range && range->family != policy.family) {
    fail(Code::kInvalidArgument, "COLL_IB_ADDR_RANGE=", range->text, " is an ", family_label(range->family),
         " range but COLL_IB_ADDR_FAMILY is ", family_name(policy.family), "; make them agree");
  }
  bool accept_unknown = no_type_readable(table);
  std::vector<GidEntry> sorted = table;
  std::sort(sorted.begin(), sorted.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });

  // The lowest index among the candidates: stable from run to run, and the
  // first entry the kernel added for the address.
  std::string rejected;
  for (const GidEntry& e : sorted) {
    std::string why = rejection(e, policy.family, range, accept_unknown);
    if (why.empty()) {
      std::string what = accept_unknown ? str_cat("the first ", family_label(policy.family), " entry")
                                        : str_cat("the first RoCE v2 ", family_label(policy.family), " entry");
      if (range) what += " in " + range->text;
      if (accept_unknown) what += " (no GID type could be read, so it may be RoCE v1)";
      return GidChoice{e.index, e, describe_entry(e) + ": " + what};
    }
    if (!is_zero(e.raw)) rejected += str_cat("  index ", e.index, ": ", why, "\n");
  }
  fail(Code::kSystem, "no usable RoCE GID on ", where, " for COLL_IB_ADDR_FAMILY=", family_name(policy.family),
       range ? ", COLL_IB_ADDR_RANGE=" + range->text : std::string(), ": coll wants a RoCE v2, non-link-local ",
       family_label(policy.family), " entry", range ? " in " + range->text : std::string(), ".\nRejected:\n",
       rejected.empty() ? "  (no used entries)\n" : rejected, "GID table:\n", describe_table(table),
       "Hint: ", no_candidate_hint(policy.family, range.has_value()));
}

int parse_family(const std::string& text) {
  std::string t = lower(trim(text));
  if (t == "af_inet" || t == "ipv4" || t == "4") return AF_INET;
  if (t == "af_inet6" || t == "ipv6" || t == "6") return AF_INET6;
  fail(Code::kInvalidArgument, "COLL_IB_ADDR_FAMILY=\"", text,
       "\": expected AF_INET or AF_INET6 (also ipv4, ipv6, 4 or 6, in any case)");
}

const char* family_name(int family) { return family == AF_INET ? "AF_INET" : family == AF_INET6 ? "AF_INET6" : "?"; }

AddrRange parse_range(const std::string& raw) {
  AddrRange r;
  r.text = trim(raw);
  auto bad = [&](const char* why) {
    fail(Code::kInvalidArgument, "COLL_IB_ADDR_RANGE=\"", raw, "\": ", why,
         "; expected CIDR such as 10.1.0.0/16 or fd00::/8");
  };
  size_t slash = r.text.find('/');
  if (slash == std::string::npos) bad("no /prefix-length");
  std::string addr = r.text.substr(0, slash);
  in_addr v4{};
  int max_bits = 0;
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) {
    r.family = AF_INET;
    max_bits = 32;
    r.base[10] = r.base[11] = 0xff;  // IPv4-mapped, as the GID table has it
    std::copy_n(reinterpret_cast<const uint8_t*>(&v4.s_addr), 4, r.base.begin() + 12);
  } else if (inet_pton(AF_INET6, addr.c_str(), r.base.data()) == 1) {
    r.family = AF_INET6;
    max_bits = 128;
  } else {
    bad("not an IPv4 or IPv6 address before the '/'");
  }
  int bits = parse_small_number(r.text.substr(slash + 1), max_bits);
  if (bits < 0) bad(r.family == AF_INET ? "the prefix length is not 0 to 32" : "the prefix length is not 0 to 128");
  r.bits = (r.family == AF_INET ? 96 : 0) + bits;
  return r;
}

bool AddrRange::contains(const GidBytes& gid) const {
  int whole = bits / 8;
  if (!std::equal(base.begin(), base.begin() + whole, gid.begin())) return false;
  if (bits % 8 == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - bits % 8));
  return (base[whole] & mask) == (gid[whole] & mask);
}

bool is_zero(const GidBytes& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

bool is_ipv4_mapped(const GidBytes& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](uint8_t b) { return b == 0; }) && gid[10] == 0xff &&
         gid[11] == 0xff;
}

bool is_link_local(const GidBytes& gid) { return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80; }

std::string gid_text(const GidBytes& gid) {
  // Spelled out: inet_ntop's form for mapped addresses differs between libcs.
  if (is_ipv4_mapped(gid)) return str_cat("::ffff:", +gid[12], ".", +gid[13], ".", +gid[14], ".", +gid[15]);
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.data(), buf, sizeof(buf));
  return buf;
}

const char* gid_type_name(GidType type) {
  switch (type) {
    case GidType::kIbRoceV1:
      return "IB/RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
    case GidType::kUnknown:
      break;
  }
  return "type unknown";
}

std::string describe_entry(const GidEntry& e) {
  return str_cat("index ", e.index, " ", gid_text(e.raw), " (", gid_type_name(e.type), ", ", address_kind(e.raw), ", ",
                 e.netdev.empty() ? "no netdev" : e.netdev, ")");
}

std::string describe_table(const std::vector<GidEntry>& table) {
  std::string out;
  int unused = 0;
  for (const GidEntry& e : table) {
    if (is_zero(e.raw)) {
      ++unused;
      continue;
    }
    out += "  " + describe_entry(e) + "\n";
  }
  if (table.empty()) return "  (empty)\n";
  if (unused > 0) out += str_cat("  and ", unused, " unused (all-zero) entries\n");
  return out;
}

std::vector<GidEntry> read_gid_table(const std::string& sysfs_root, const std::string& device, int port) {
  namespace fs = std::filesystem;
  fs::path port_dir = fs::path(sysfs_root) / "class/infiniband" / device / "ports" / std::to_string(port);
  std::error_code ec;
  fs::directory_iterator it(port_dir / "gids", ec);
  if (ec) return {};
  std::vector<GidEntry> table;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return {};  // a folder that fails halfway is no table to trust
    std::string name = it->path().filename().string();
    int index = parse_small_number(name, 1 << 20);
    if (index < 0) continue;
    GidEntry e;
    e.index = index;
    e.raw = parse_gid(read_line(it->path()));
    e.type = parse_type(read_line(port_dir / "gid_attrs/types" / name));
    e.netdev = read_line(port_dir / "gid_attrs/ndevs" / name);
    table.push_back(std::move(e));
  }
  std::sort(table.begin(), table.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return table;
}

}  // namespace coll::transport::roce
