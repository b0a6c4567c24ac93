// What this process holds, counted from /proc/self: its open descriptors and
// its threads, for tests that check that nothing is left behind.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

namespace coll::testing {

inline int entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}
inline int open_fds() { return entries("/proc/self/fd") - 1; }  // less the one opendir holds
inline int threads() { return entries("/proc/self/task"); }
inline int highest_fd() {
  int highest = -1;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') highest = std::max(highest, std::atoi(e->d_name));
    closedir(d);
  }
  return highest;
}

}  // namespace coll::testing
