#include "base/fork_release.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace coll::fork_release {
namespace {

// Held across fork (prepare to parent or child), so that the child finds
// the list whole, as the forking thread left it. Neither is ever
// destroyed: a store's thread may close its descriptors while the process
// runs its exit handlers.
std::mutex& list_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<int>& list() {
  static auto* fds = new std::vector<int>;
  return *fds;
}

void before_fork() { list_mutex().lock(); }
void in_parent() { list_mutex().unlock(); }

// Only async-signal-safe calls: the child of a threaded process.
void in_child() {
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd : list()) dup3(null, fd, O_CLOEXEC);
    ::close(null);
  }
  list().clear();  // they are the child's own now, which it may close and reuse; frees nothing
  list_mutex().unlock();
}

// Under the lock.
void take_off(int fd) {
  auto& fds = list();
  if (auto it = std::find(fds.begin(), fds.end(), fd); it != fds.end()) {
    *it = fds.back();
    fds.pop_back();
  }
}

}  // namespace

void add(int fd) {
  static std::once_flag installed;
  std::call_once(installed, [] { pthread_atfork(before_fork, in_parent, in_child); });
  std::lock_guard<std::mutex> lock(list_mutex());
  list().push_back(fd);
}

void forget(int fd) {
  std::lock_guard<std::mutex> lock(list_mutex());
  take_off(fd);
}

void keep_mappings(const char* prefix) {
  std::ifstream maps("/proc/self/maps");
  const std::string wanted(prefix);
  for (std::string line; std::getline(maps, line);) {
    const size_t path = line.find('/');
    if (path == std::string::npos || line.compare(path, wanted.size(), wanted) != 0) continue;
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &start, &end) != 2) continue;
    madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTFORK);
  }
}

void close(int fd) {
  std::lock_guard<std::mutex> lock(list_mutex());
  take_off(fd);
  ::close(fd);
}

}  // namespace coll::fork_release
