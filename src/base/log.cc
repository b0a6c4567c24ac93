#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

namespace coll::log {
namespace {

struct State {
  Level level = Level::kWarn;
  unsigned mask = kAll;
  std::atomic<int> rank{-1};
  char host[64] = "?";
};

struct SubsysName {
  Subsys bit;
  const char* name;
};
constexpr SubsysName kSubsysNames[] = {
    {kInit, "INIT"}, {kBoot, "BOOT"}, {kNet, "NET"}, {kColl, "COLL"}, {kLaunch, "LAUNCH"}};

Level parse_level(const char* text) {
  if (text == nullptr || *text == '\0') return Level::kWarn;
  std::string v(text);
  for (auto& c : v) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (v == "NONE" || v == "OFF") return Level::kNone;
  if (v == "WARN") return Level::kWarn;
  if (v == "INFO") return Level::kInfo;
  if (v == "TRACE") return Level::kTrace;
  std::fprintf(stderr, "coll: COLL_DEBUG=%s is not one of NONE, WARN, INFO, TRACE; using WARN\n", text);
  return Level::kWarn;
}

// "INIT,NET" enables those; "^NET" enables all but those.
unsigned parse_mask(const char* text) {
  if (text == nullptr || *text == '\0') return kAll;
  bool exclude = text[0] == '^';
  unsigned mask = 0;
  std::stringstream list(exclude ? text + 1 : text);
  std::string item;
  while (std::getline(list, item, ',')) {
    bool found = false;
    for (const auto& s : kSubsysNames) {
      if (strcasecmp(item.c_str(), s.name) == 0 || strcasecmp(item.c_str(), "ALL") == 0) {
        mask |= strcasecmp(item.c_str(), "ALL") == 0 ? kAll : s.bit;
        found = true;
      }
    }
    if (!found) std::fprintf(stderr, "coll: COLL_DEBUG_SUBSYS: unknown subsystem '%s'\n", item.c_str());
  }
  return exclude ? ~mask : mask;
}

State& state() {
  static State* s = [] {
    auto* st = new State();  // never freed: logging must work during static destruction
    st->level = parse_level(std::getenv("COLL_DEBUG"));
    st->mask = parse_mask(std::getenv("COLL_DEBUG_SUBSYS"));
    gethostname(st->host, sizeof(st->host) - 1);
    return st;
  }();
  return *s;
}

const char* level_name(Level level) {
  switch (level) {
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

const char* subsys_name(Subsys subsys) {
  for (const auto& s : kSubsysNames)
    if (s.bit == subsys) return s.name;
  return "ALL";
}

}  // namespace

bool enabled(Level level, Subsys subsys) {
  const State& s = state();
  return level <= s.level && (s.mask & subsys) != 0;
}

void write(Level level, Subsys subsys, const std::string& message) {
  State& s = state();
  char line[4096];
  int n = std::snprintf(line, sizeof(line), "%s:%d:%d coll %s/%s %s\n", s.host, static_cast<int>(getpid()),
                        s.rank.load(), level_name(level), subsys_name(subsys), message.c_str());
  if (n < 0) return;
  size_t len = static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1;
  if (line[len - 1] != '\n') line[len - 1] = '\n';
  // One write() per line so that lines of concurrent ranks do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

void set_rank(int rank) { state().rank = rank; }

}  // namespace coll::log
