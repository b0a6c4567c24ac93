// What this process holds, counted from /proc/self: its open descriptors and
// its threads, for tests that check that nothing is left behind.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

namespace coll::testing {

// `f(name)` for each entry of `dir` but . and ..
template <typename F>
void each_entry(const char* dir, F f) {
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') f(e->d_name);
    closedir(d);
  }
}
inline int entries(const char* dir) {
  int n = 0;
  each_entry(dir, [&n](const char*) { ++n; });
  return n;
}
inline int open_fds() { return entries("/proc/self/fd") - 1; }  // less the one opendir holds
inline int threads() { return entries("/proc/self/task"); }
inline int highest_fd() {
  int highest = -1;
  each_entry("/proc/self/fd", [&highest](const char* name) { highest = std::max(highest, std::atoi(name)); });
  return highest;
}

}  // namespace coll::testing
