#include "transport/shm/region.h"

#include "base/error.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace coll::transport::shm {
namespace {

struct Region {
  size_t bytes;  // mapped (whole pages)
  uint64_t id;
  uint64_t inode;
  int fd;
};

// By start address, so that a pointer finds its region with one upper_bound.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Region> regions;
  uint64_t next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: regions may be freed during static destruction
  return *r;
}

size_t whole_pages(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

uint64_t inode_of(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int take_descriptor(int pidfd, int fd) { return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0)); }

}  // namespace

void* allocate_region(size_t bytes, const char* name) {
  const size_t size = whole_pages(bytes);
  int fd = memfd_create(name, MFD_CLOEXEC);
  auto failed = [&](const char* call) {  // errno is the call's
    int err = errno;
    if (fd >= 0) close(fd);
    fail_errno(Code::kSystem, err, str_cat("allocating ", bytes, " bytes of shared memory (", name, ")"), call);
  };
  if (fd < 0) failed("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) failed("ftruncate");
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) failed("mmap");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.regions[reinterpret_cast<uintptr_t>(base)] = Region{size, r.next_id++, inode_of(fd), fd};
  return base;
}

bool free_region(void* ptr) {
  Registry& r = registry();
  Region region{};
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.regions.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.regions.end()) return false;
    region = it->second;
    r.regions.erase(it);
  }
  munmap(ptr, region.bytes);
  close(region.fd);
  return true;
}

bool find_region(const void* data, size_t bytes, RegionRef* ref) {
  const auto at = reinterpret_cast<uintptr_t>(data);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.regions.upper_bound(at);
  if (it == r.regions.begin()) return false;
  --it;
  const size_t offset = at - it->first;
  if (offset > it->second.bytes || bytes > it->second.bytes - offset) return false;
  *ref = RegionRef{offset, it->second.id, it->second.inode, it->second.fd};
  return true;
}

PeerRegions::~PeerRegions() {
  for (const Mapping& m : maps_) munmap(m.base, m.bytes);
}

char* PeerRegions::map(int pidfd, const RegionRef& ref, size_t bytes, bool writable) {
  auto it = std::find_if(maps_.begin(), maps_.end(), [&](const Mapping& m) { return m.id == ref.id; });
  if (it == maps_.end()) {
    int fd = take_descriptor(pidfd, ref.fd);
    if (fd < 0) fail_errno(Code::kRemote, errno, str_cat("taking descriptor ", ref.fd), "pidfd_getfd");
    struct stat st {};
    const bool same = fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_ino) == ref.inode;
    void* base = same ? mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    int err = errno;
    close(fd);
    if (!same) fail(Code::kRemote, "descriptor ", ref.fd, " is no longer the buffer announced");
    if (base == MAP_FAILED) fail_errno(Code::kSystem, err, "mapping it", "mmap");
    if (maps_.size() == kMaxMappings) {
      munmap(maps_.front().base, maps_.front().bytes);
      maps_.erase(maps_.begin());
    }
    maps_.push_back(Mapping{ref.id, static_cast<char*>(base), static_cast<size_t>(st.st_size), false});
    it = std::prev(maps_.end());
  } else if (std::next(it) != maps_.end()) {
    std::rotate(it, std::next(it), maps_.end());  // now the most recently used
    it = std::prev(maps_.end());
  }
  if (ref.offset > it->bytes || bytes > it->bytes - ref.offset)
    fail(Code::kRemote, bytes, " bytes announced at offset ", ref.offset, " of a ", it->bytes, "-byte buffer");
  // The descriptor was the owner's, opened for writing (memfd_create), so the
  // shared mapping may be made writable in place.
  if (writable && !it->writable) {
    if (mprotect(it->base, it->bytes, PROT_READ | PROT_WRITE) != 0)
      fail_errno(Code::kSystem, errno, "making a mapped buffer writable", "mprotect");
    it->writable = true;
  }
  return it->base + ref.offset;
}

bool can_take_descriptor(int pidfd, int fd, uint64_t inode, std::string* why) {
  if (pidfd < 0) {
    *why = "no pidfd (kernel before 5.3)";
    return false;
  }
  int taken = take_descriptor(pidfd, fd);
  if (taken < 0) {
    *why = str_cat("pidfd_getfd: ", std::strerror(errno));
    return false;
  }
  const bool same = inode_of(taken) == inode;
  close(taken);
  if (!same) *why = "pidfd_getfd gave another file than the probe";
  return same;
}

std::string descriptor_taking_refused() {
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (!(yama >> scope) || scope == 0) return "";
  // CAP_SYS_PTRACE (bit 19 of the effective set) lets scopes 1 and 2 through.
  std::ifstream status("/proc/self/status");
  uint64_t effective = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) effective = std::stoull(line.substr(7), nullptr, 16);
  if (scope < 3 && (effective >> 19 & 1) != 0) return "";
  return str_cat("kernel.yama.ptrace_scope=", scope, scope < 3 ? " without CAP_SYS_PTRACE" : "");
}

int make_probe(uint64_t* inode) {
  int fd = memfd_create("coll-probe", MFD_CLOEXEC);
  if (fd < 0) fail_errno(Code::kSystem, errno, "shm: the buffer-sharing probe", "memfd_create");
  *inode = inode_of(fd);
  return fd;
}

}  // namespace coll::transport::shm
