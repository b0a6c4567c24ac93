#include "transport/shm/segment.h"

#include "base/error.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <utility>

namespace coll::transport::shm {
namespace {

constexpr uint64_t kMagic = 0x434f4c4c53484d35;  // "COLLSHM5": the header holds its owner's CPUs

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
size_t slot_stride(uint32_t slot_bytes) { return round_up(sizeof(SlotHeader) + slot_bytes, 64); }
size_t board_offset() { return round_up(sizeof(SegmentHeader), 64); }
size_t rings_offset() { return board_offset() + round_up(sizeof(BoardArea), 64); }
size_t slots_offset(uint32_t nlocal) { return rings_offset() + round_up(sizeof(RingHeader) * nlocal, 64); }

}  // namespace

size_t Segment::bytes_for(uint32_t nlocal, uint32_t nslots, uint32_t slot_bytes) {
  return slots_offset(nlocal) + static_cast<size_t>(nlocal) * nslots * slot_stride(slot_bytes);
}

Segment::Segment(Segment&& other) noexcept { *this = std::move(other); }

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    this->~Segment();
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    name_ = std::move(other.name_);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
  base_ = nullptr;
  unlink();
}

void Segment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

Segment Segment::create(const std::string& name, uint32_t nlocal, uint32_t nslots, uint32_t slot_bytes,
                        const Probes& probes) {
  if (nslots == 0 || (nslots & (nslots - 1)) != 0)
    fail(Code::kInternal, "shm: ", nslots, " slots per ring is not a power of two");
  const size_t bytes = bytes_for(nlocal, nslots, slot_bytes);
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0) {
    size_t free_bytes = static_cast<size_t>(fs.f_bavail) * fs.f_frsize;
    if (free_bytes < bytes)
      fail(Code::kSystem, "shm: /dev/shm has ", free_bytes, " bytes free but segment ", name, " needs ", bytes, " (",
           nlocal, " local ranks x ", nslots, " slots x ", slot_bytes,
           " bytes): enlarge /dev/shm (docker: --shm-size) or set COLL_TRANSPORTS=tcp");
  }
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail_errno(Code::kSystem, errno, "shm: creating " + name, "shm_open");
  Segment s;
  s.name_ = name;
  s.linked_ = true;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    fail_errno(Code::kSystem, err, str_cat("shm: sizing ", name, " to ", bytes, " bytes (is /dev/shm full?)"),
               "ftruncate");
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) fail_errno(Code::kSystem, err, "shm: mapping " + name, "mmap");
  s.base_ = base;
  s.bytes_ = bytes;
  auto* h = new (base) SegmentHeader();
  h->nlocal = nlocal;
  h->nslots = nslots;
  h->slot_bytes = slot_bytes;
  h->pid = getpid();
  h->probe_address = probes.address;
  h->probe_value = probes.value;
  h->probe_fd = probes.fd;
  h->probe_inode = probes.inode;
  if (sched_getaffinity(0, sizeof(h->cpus), &h->cpus) != 0) CPU_ZERO(&h->cpus);
  h->waiting_cpu.store(-1, std::memory_order_relaxed);
  new (&s.board()) BoardArea();
  for (uint32_t i = 0; i < nlocal; ++i) new (&s.ring(i)) RingHeader();
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;  // last: a peer that sees it sees the rest
  return s;
}

bool Segment::try_open(const std::string& name, Segment* out) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    fail_errno(Code::kSystem, errno, "shm: opening " + name, "shm_open");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(SegmentHeader))) {
    close(fd);
    return false;  // still being sized by its owner
  }
  void* base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) fail_errno(Code::kSystem, err, "shm: mapping " + name, "mmap");
  Segment s;
  s.base_ = base;
  s.bytes_ = static_cast<size_t>(st.st_size);
  s.name_ = name;
  if (reinterpret_cast<volatile SegmentHeader*>(base)->magic != kMagic) return false;  // not initialised yet
  std::atomic_thread_fence(std::memory_order_acquire);
  *out = std::move(s);
  return true;
}

BoardArea& Segment::board() const { return *reinterpret_cast<BoardArea*>(static_cast<char*>(base_) + board_offset()); }

RingHeader& Segment::ring(uint32_t i) const {
  return reinterpret_cast<RingHeader*>(static_cast<char*>(base_) + rings_offset())[i];
}

Segment::Slots Segment::slots(uint32_t ring) const {
  const SegmentHeader& h = header();
  const size_t stride = slot_stride(h.slot_bytes);
  char* first = static_cast<char*>(base_) + slots_offset(h.nlocal) + static_cast<size_t>(ring) * h.nslots * stride;
  return Slots(first, stride, h.nslots - 1);
}

void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, int timeout_ms) {
  timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace coll::transport::shm
