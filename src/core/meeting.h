// What shrink.cc and agree.cc share of their meetings (meeting.cc).
#pragma once

#include <string>
#include <vector>

namespace coll::meeting {

constexpr char kLostHost[] = "lost;";  // opens a guest's "in" when a host it had met at died

std::string join(const std::vector<int>& ranks);
// Ranks in [0, nranks) from "3,5,7"; others are dropped.
std::vector<int> parse_ranks(const std::string& text, int nranks);
// Whether the listener at `address` refuses a connection: its process, or
// its communicator, is gone.
bool refuses(const std::string& address);

}  // namespace coll::meeting
