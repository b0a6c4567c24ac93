#include "transport/ib/hca.h"

#include "base/error.h"

#include <charconv>

namespace coll::transport::ib {

namespace {

constexpr const char* kSyntax =
    "expected a comma-separated list of device[:port] (port a positive integer), optionally after "
    "'=' (exact names), '^' (exclude) or '^=' (exclude exact names), e.g. mlx5_0:1,mlx5_1 or ^=mlx5_2";

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

[[noreturn]] void bad_entry(const std::string& text, const std::string& entry, const std::string& why) {
  fail(Code::kInvalidArgument, "COLL_IB_HCA=\"", text, "\": entry \"", entry, "\" ", why, "; ", kSyntax);
}

// Digits only: from_chars alone would accept "1x" (stopping early) and "-1".
int parse_port(const std::string& text, const std::string& entry, const std::string& digits) {
  int port = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, port);
  bool all_digits = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
  if (!all_digits || ec != std::errc() || ptr != end || port <= 0)
    bad_entry(text, entry, "has a port that is not a positive integer");
  return port;
}

HcaEntry parse_entry(const std::string& text, const std::string& entry) {
  if (entry.empty()) bad_entry(text, entry, "is empty");
  size_t colon = entry.find(':');
  if (colon == 0) bad_entry(text, entry, "has a port but no device");
  if (colon == std::string::npos) return HcaEntry{entry, -1};
  return HcaEntry{entry.substr(0, colon), parse_port(text, entry, entry.substr(colon + 1))};
}

}  // namespace

HcaFilter HcaFilter::parse(const std::string& raw) {
  HcaFilter filter;
  std::string text = trim(raw);
  if (text.empty()) return filter;
  std::string list = text;
  if (list[0] == '^') {
    filter.exclude = true;
    list.erase(0, 1);
  }
  if (!list.empty() && list[0] == '=') {
    filter.exact = true;
    list.erase(0, 1);
  }
  // Split on every comma, keeping empty pieces so that "a,,b" and "a," are caught.
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string piece = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    filter.entries.push_back(parse_entry(text, trim(piece)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return filter;
}

bool HcaFilter::selects(const std::string& device, int port) const {
  if (entries.empty()) return true;
  bool listed = false;
  for (const HcaEntry& e : entries) {
    bool name_matches = exact ? device == e.device : device.rfind(e.device, 0) == 0;
    bool port_matches = e.port < 0 || e.port == port;
    listed = listed || (name_matches && port_matches);
  }
  return exclude ? !listed : listed;
}

std::string HcaFilter::describe() const {
  if (entries.empty()) return "every HCA";
  std::string out = exclude ? "every HCA except " : "only ";
  out += exact ? "names equal to " : "names starting with ";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ", ";
    out += entries[i].device;
    if (entries[i].port >= 0) out += str_cat(" (port ", entries[i].port, ")");
  }
  return out;
}

}  // namespace coll::transport::ib
