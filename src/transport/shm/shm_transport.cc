#include "transport/shm/shm_transport.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/shm/process.h"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace coll::transport {

std::unique_ptr<Transport> make_shm_transport(int rank, int nranks, const std::string& job_tag,
                                              const std::string& host_id) {
  return std::make_unique<shm::ShmTransport>(rank, nranks, job_tag, host_id);
}

namespace shm {
namespace {

struct Address {
  std::string host, segment;
  int pid = 0;
};

// "shm|<host id>|<segment name>|<pid>"
bool parse(const std::string& text, Address* out) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, '|')) parts.push_back(part);
  if (parts.size() != 4 || parts[0] != "shm") return false;
  out->host = parts[1];
  out->segment = parts[2];
  out->pid = std::atoi(parts[3].c_str());
  return true;
}

// Reads `bytes` of process `pid` at `address` into `into`; false if the kernel refuses.
bool read_remote(int pid, uint64_t address, void* into, size_t bytes, int* err) {
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min(bytes - done, size_t{1} << 30);
    iovec local{static_cast<char*>(into) + done, n};
    iovec remote{reinterpret_cast<void*>(address + done), n};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) {
      *err = got < 0 ? errno : EIO;
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

ShmTransport::ShmTransport(int rank, int nranks, const std::string& job_tag, const std::string& host_id)
    : rank_(rank),
      nranks_(nranks),
      host_id_(host_id),
      name_(str_cat("/coll-", job_tag, "-r", rank, segment_maker(getpid()))) {
  caps_.name = "shm";
  caps_.same_host_only = true;
  caps_.delivers_pieces = true;
  caps_.one_sided = true;  // mapped regions and cross-memory attach, where the init-time probe allowed them
  // The model's defaults for shared memory (docs/PERFORMANCE.md, "The cost model's defaults").
  caps_.link = LinkParameters{2.7, 0.29, 128 << 10};
  probe_word_ = 0x5ca1ab1e00000000ull | static_cast<uint64_t>(getpid());
}

// A peer killed between making its segment and every local rank mapping it
// never unlinked it: whoever outlives it does (a second unlink finds nothing).
ShmTransport::~ShmTransport() {
  for (const Peer& p : peers_)
    if (!p.segment_name.empty() && exited(p)) shm_unlink(p.segment_name.c_str());
}

std::string ShmTransport::local_address() const { return str_cat("shm|", host_id_, "|", name_, "|", getpid()); }

bool ShmTransport::reaches(const std::string& peer_address) const {
  Address a;
  return parse(peer_address, &a) && a.host == host_id_;
}

// All ranks of this node map each other's segments at once; then each
// unlinks its own, so /dev/shm holds nothing from here on.
void ShmTransport::setup(const std::vector<std::string>& addresses, PairExchange& pairs, const Deadline& deadline) {
  std::vector<int> local;
  std::vector<Address> parsed(addresses.size());
  for (int r = 0; r < nranks_; ++r)
    if (parse(addresses[static_cast<size_t>(r)], &parsed[static_cast<size_t>(r)]) &&
        parsed[static_cast<size_t>(r)].host == host_id_)
      local.push_back(r);
  auto index_of = [&](int r) {
    return static_cast<uint32_t>(std::find(local.begin(), local.end(), r) - local.begin());
  };
  const bool single_copy_allowed = config::get_bool("COLL_SHM_SINGLE_COPY");
  // Mapping the peers' regions serves the core's one-sided access (the
  // staged allreduce's staging, coll_mem_alloc buffers) and, with
  // COLL_SHM_MAPPED=1, messages that travel as references. No probe where
  // neither is wanted, or where the kernel would refuse it (and log that).
  const bool references_allowed = config::get_bool("COLL_SHM_MAPPED");
  std::string no_mapping = references_allowed || config::get_bool("COLL_SHM_STAGED")
                               ? descriptor_taking_refused()
                               : "COLL_SHM_MAPPED=0 and COLL_SHM_STAGED=0";
  Segment::Probes probes{reinterpret_cast<uint64_t>(&probe_word_), probe_word_};
  if (no_mapping.empty()) {
    try {
      region_probe_ = net::Fd(make_probe(&probes.inode));
      probes.fd = region_probe_.get();
    } catch (const Error& e) {  // a sandbox without memfd: only what mapping would give is lost
      no_mapping = e.what();
    }
  }
  own_ = Segment::create(name_, static_cast<uint32_t>(local.size()), kSlots, kSlotBytes, probes);
  Looks looks;
  size_t turn = 0;

  peer_index_.assign(static_cast<size_t>(nranks_), -1);
  peers_.reserve(local.size());
  for (int r : local) {
    if (r == rank_) continue;
    peer_index_[static_cast<size_t>(r)] = static_cast<int>(peers_.size());
    Peer& p = peers_.emplace_back();
    p.rank = r;
    p.pid = parsed[static_cast<size_t>(r)].pid;
    p.pidfd = net::Fd(static_cast<int>(syscall(SYS_pidfd_open, p.pid, 0)));  // -1 on kernels before 5.3
    p.segment_name = parsed[static_cast<size_t>(r)].segment;
    p.index_here = index_of(r);
    p.index_there = index_of(rank_);
    while (!Segment::try_open(p.segment_name, &p.segment)) {
      if (deadline.expired())
        fail(Code::kTimeout, "shm: rank ", rank_, " timed out after ", deadline.budget_ms(), " ms (",
             deadline.setting(), ") waiting for rank ", r, "'s segment ", p.segment_name);
      check_coming(p, pairs, looks.due(), "making its segment");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    p.out_ring = &p.segment.ring(p.index_there);
    p.out_slots = p.segment.slots(p.index_there);
    p.in_ring = &own_.ring(p.index_here);
    p.in_slots = own_.slots(p.index_here);
    // Can we map this peer's coll_mem_alloc buffers? Probed before we count
    // as attached: the peer closes its probe once every rank has.
    std::string why = no_mapping.empty() ? "it published no probe" : no_mapping;
    const SegmentHeader& theirs = p.segment.header();
    const bool can_map = no_mapping.empty() && theirs.probe_fd >= 0 &&
                         can_take_descriptor(p.pidfd.get(), theirs.probe_fd, theirs.probe_inode, &why);
    p.in_ring->map_ok.store(can_map && references_allowed ? 1 : 0, std::memory_order_release);
    p.can_map = can_map;
    if (!can_map)
      log::info(log::kNet, "shm: rank ", rank_, " cannot map rank ", r, "'s buffers (", why,
                "): its messages go through the slots, and allreduces on one node run their schedules");
    p.segment.header().attached.fetch_add(1, std::memory_order_acq_rel);
    // Single copy: can we read this peer's memory? Its ring in our segment says so to it.
    uint64_t seen = 0;
    int err = EPERM;
    bool ok = single_copy_allowed && read_remote(p.pid, p.segment.header().probe_address, &seen, sizeof(seen), &err) &&
              seen == p.segment.header().probe_value;
    p.in_ring->cma_ok.store(ok ? 1 : 0, std::memory_order_release);
    if (ok)
      log::info(log::kNet, "shm: rank ", rank_, " reads rank ", r, " directly (process_vm_readv)");
    else
      log::info(log::kNet, "shm: rank ", rank_, " cannot read rank ", r, " directly (",
                single_copy_allowed ? std::strerror(err) : "COLL_SHM_SINGLE_COPY=0",
                "): messages from it go through the slots");
  }
  while (own_.header().attached.load(std::memory_order_acquire) < static_cast<int32_t>(local.size()) - 1) {
    if (deadline.expired())
      fail(Code::kTimeout, "shm: rank ", rank_, " timed out after ", deadline.budget_ms(), " ms (", deadline.setting(),
           ") waiting for the ranks of this node to map its segment");
    // Each look asks one peer's standby socket, in turn: the listen queues
    // of peers that do not serve yet keep every probe.
    const size_t asked = looks.due() ? turn++ % peers_.size() : peers_.size();
    for (size_t k = 0; k < peers_.size(); ++k)
      check_coming(peers_[k], pairs, k == asked, "mapping this rank's segment");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  own_.unlink();
  region_probe_.reset();
  set_up_ = true;
  const int cpus = cpus_of_local_ranks();
  yield_ = static_cast<int>(local.size()) > cpus;
  spin_ = yield_ ? kYield : kSpin;
  log::info(log::kNet, "shm: rank ", rank_, " attached to ", local.size() - 1, " local peer(s); ", name_, " unlinked; ",
            local.size(), " rank(s) on ", cpus,
            " CPU(s): ", yield_ ? "more ranks than cores, yielding before sleeping" : "spinning before sleeping");
}

// The CPUs that this node's ranks may run on, all together (each segment
// holds its owner's): ranks bound by a launcher, or held by a taskset or a
// cgroup's cpuset, share fewer cores than the machine has online. Where no
// rank could read its own: those online.
int ShmTransport::cpus_of_local_ranks() const {
  cpu_set_t all = own_.header().cpus;
  for (const Peer& p : peers_) CPU_OR(&all, &all, &p.segment.header().cpus);
  const int n = CPU_COUNT(&all);
  return n > 0 ? n : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

void ShmTransport::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                           PairExchange& pairs, const Deadline& deadline) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": shm transport was closed (abort)");
  if (!set_up_) setup(addresses, pairs, deadline);
  for (int p : peers)
    if (local_index(p) < 0) fail(Code::kInternal, "shm: rank ", p, " is not on this node (", host_id_, ")");
}

int ShmTransport::local_index(int rank) const {
  return rank < 0 || rank >= nranks_ || !set_up_ ? -1 : peer_index_[static_cast<size_t>(rank)];
}

ShmTransport::Peer& ShmTransport::peer(int rank, const char* doing) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": shm transport was closed (abort)");
  const int i = local_index(rank);
  if (i < 0) fail(Code::kInternal, "shm: rank ", rank_, " ", doing, " rank ", rank, ", not on this node");
  return peers_[static_cast<size_t>(i)];
}

// An op that is first in its queue starts at once: a small message leaves
// (or is taken) as it is posted, not at the next poll, which is the latency
// the peer waits for. What completes here is reported by the next poll.
RequestId ShmTransport::post_send(int rank, const Buffer& buffer, uint64_t tag) {
  RequestId id = next_request_++;
  Peer& p = peer(rank, "sends to");
  p.sends.push_back(Op{id, static_cast<char*>(buffer.data), buffer.bytes, tag});
  if (p.sends.size() == 1) progress_sends(p, completed_early_);
  return id;
}

RequestId ShmTransport::post_recv(int rank, const Buffer& buffer, uint64_t tag) {
  Op op{next_request_++, static_cast<char*>(buffer.data), buffer.bytes, tag};
  return post_recv_op(peer(rank, "receives from"), op);
}

RequestId ShmTransport::post_recv_sink(int rank, size_t bytes, uint64_t tag, const Sink& sink) {
  if (sink.take == nullptr) fail(Code::kInternal, "shm: post_recv_sink from rank ", rank, " without a sink");
  Op op{next_request_++, nullptr, bytes, tag};
  op.sink = sink;
  return post_recv_op(peer(rank, "receives from"), op);
}

RequestId ShmTransport::post_standing_recv(int rank, const Buffer& buffer, uint64_t tag) {
  Op op{next_request_++, static_cast<char*>(buffer.data), buffer.bytes, tag};
  op.standing = true;
  Peer& p = peer(rank, "receives from");
  ++p.standing_recvs;
  return post_recv_op(p, op);
}

void ShmTransport::check_peer(int rank) const {
  const int i = local_index(rank);
  if (i >= 0) check_alive(peers_[static_cast<size_t>(i)]);
}

bool ShmTransport::awaits(const Peer& p) {
  return !p.sends.empty() || !p.awaiting_ack.empty() || !p.notify_waits.empty() || p.recvs.size() > p.standing_recvs;
}

RequestId ShmTransport::post_recv_op(Peer& p, const Op& op) {
  p.recvs.push_back(op);
  if (p.recvs.size() == 1) progress_recvs(p, completed_early_);
  return op.id;
}

void ShmTransport::deliver(const Op& op, size_t offset, const void* data, size_t bytes) {
  if (bytes == 0) return;  // a 0-byte buffer may be null
  if (op.sink.take != nullptr)
    op.sink.take(op.sink, offset, data, bytes);
  else
    std::memcpy(op.data + offset, data, bytes);
}

void ShmTransport::ring_bell(SegmentHeader& h) {
  h.doorbell.fetch_add(1, std::memory_order_acq_rel);
  if (h.sleepers.load(std::memory_order_acquire) > 0) futex_wake(h.doorbell);
}

// Producer side: fill free slots of our ring in the peer's segment.
bool ShmTransport::progress_sends(Peer& p, std::vector<RequestId>& done) {
  bool moved = false;
  RingHeader& ring = *p.out_ring;
  const uint32_t nslots = p.segment.header().nslots, slot_bytes = p.segment.header().slot_bytes;
  uint64_t head = ring.head.load(std::memory_order_relaxed);
  auto room = [&] {
    if (head - p.tail_seen < nslots) return true;
    p.tail_seen = ring.tail.load(std::memory_order_acquire);
    return head - p.tail_seen < nslots;
  };
  while (!p.sends.empty() && room()) {
    Op& op = p.sends.front();
    SlotHeader& slot = p.out_slots[head];
    // How the message goes is decided at its first slot: a reference into a
    // coll_mem_alloc buffer, a descriptor for process_vm_readv, or the slots.
    const bool first = op.done_bytes == 0;
    RegionRef ref{};
    const bool mapped = first && op.bytes >= kMappedBytes && ring.map_ok.load(std::memory_order_acquire) == 1 &&
                        find_region(op.data, op.bytes, &ref);
    const bool single_copy =
        first && !mapped && op.bytes >= kSingleCopyBytes && ring.cma_ok.load(std::memory_order_acquire) == 1;
    slot.tag = op.tag;
    slot.total = op.bytes;
    if (op.notify) {
      slot.kind = SlotKind::kNotify;
      slot.length = 0;
    } else if (op.bytes <= kInlineBytes) {
      slot.kind = SlotKind::kInline;
      slot.length = static_cast<uint32_t>(op.bytes);
      if (op.bytes > 0) std::memcpy(slot.inline_data, op.data, op.bytes);  // a 0-byte buffer may be null
      op.done_bytes = op.bytes;
    } else if (mapped) {
      slot.kind = SlotKind::kMapped;
      slot.length = 0;
      slot.mapped = ref;
      op.done_bytes = op.bytes;
      op.ack_target = ++p.single_copies_sent;
    } else if (single_copy) {
      slot.kind = SlotKind::kCma;
      slot.length = 0;
      slot.part.offset = 0;
      slot.part.cma_address = reinterpret_cast<uint64_t>(op.data);
      slot.part.cma_pid = getpid();
      op.done_bytes = op.bytes;
      op.ack_target = ++p.single_copies_sent;
    } else {
      slot.part.offset = op.done_bytes;
      slot.kind = SlotKind::kData;
      slot.length = static_cast<uint32_t>(std::min<size_t>(slot_bytes, op.bytes - op.done_bytes));
      std::memcpy(p.segment.payload(slot), op.data + op.done_bytes, slot.length);
      op.done_bytes += slot.length;
    }
    slot.seq.store(head + 1, std::memory_order_release);
    ring.head.store(++head, std::memory_order_relaxed);
    moved = true;
    if (op.done_bytes == op.bytes) {
      if (single_copy || mapped)
        p.awaiting_ack.push_back(op);  // the peer reads our buffer: not done until it says so
      else
        done.push_back(op.id);
      p.sends.pop_front();
    }
  }
  while (!p.awaiting_ack.empty() &&
         ring.cma_acked.load(std::memory_order_acquire) >= p.awaiting_ack.front().ack_target) {
    done.push_back(p.awaiting_ack.front().id);
    p.awaiting_ack.pop_front();
    moved = true;
  }
  if (moved) ring_bell(p.segment.header());
  return moved;
}

// Consumer side: drain our ring for this peer into the posted receives.
bool ShmTransport::progress_recvs(Peer& p, std::vector<RequestId>& done) {
  bool moved = false;
  RingHeader& ring = *p.in_ring;
  uint64_t tail = ring.tail.load(std::memory_order_relaxed);
  while (receiving(p)) {
    SlotHeader& slot = p.in_slots[tail];
    if (slot.seq.load(std::memory_order_acquire) != tail + 1) break;  // not yet published
    // Notifications and messages are taken in the order the peer sent them.
    if (slot.kind == SlotKind::kNotify) {
      if (p.notify_waits.empty()) break;
      *p.notify_waits.front().value = slot.tag;
      done.push_back(p.notify_waits.front().id);
      p.notify_waits.pop_front();
      ring.tail.store(++tail, std::memory_order_release);
      moved = true;
      continue;
    }
    if (p.recvs.empty()) break;
    Op& op = p.recvs.front();
    if (!op.started) {
      if (slot.tag != op.tag || slot.total != op.bytes)  // naming the peer builds a string: only on a mismatch
        check_match_or_fail(rank_, p.rank, name(p), slot.tag, slot.total, op.tag, op.bytes);
      op.started = true;
    }
    if (slot.kind == SlotKind::kInline) {
      deliver(op, 0, slot.inline_data, slot.length);
      op.done_bytes = op.bytes;
    } else if (slot.kind == SlotKind::kMapped) {
      deliver(op, 0, map_region(p, slot.mapped, op.bytes), op.bytes);
      op.done_bytes = op.bytes;
      ring.cma_acked.fetch_add(1, std::memory_order_acq_rel);
    } else if (slot.kind == SlotKind::kCma) {
      int err = 0;
      char* into = op.data;
      if (op.sink.take != nullptr) cma_staging_.resize(op.bytes), into = cma_staging_.data();
      if (!read_remote(slot.part.cma_pid, slot.part.cma_address, into, op.bytes, &err))
        fail_errno(Code::kSystem, err, str_cat("shm: rank ", rank_, " reading ", op.bytes, " bytes from rank ", p.rank),
                   "process_vm_readv");
      if (op.sink.take != nullptr) deliver(op, 0, into, op.bytes);
      op.done_bytes = op.bytes;
      ring.cma_acked.fetch_add(1, std::memory_order_acq_rel);
    } else {
      deliver(op, slot.part.offset, own_.payload(slot), slot.length);
      op.done_bytes += slot.length;
    }
    ring.tail.store(++tail, std::memory_order_release);
    moved = true;
    if (op.done_bytes == op.bytes) {
      done.push_back(op.id);
      if (op.standing) --p.standing_recvs;
      p.recvs.pop_front();
    }
  }
  if (moved) ring_bell(p.segment.header());  // slots freed, or a single copy acknowledged
  return moved;
}

// The peer's bytes at `ref`. Its name is built only when mapping fails: a
// string per message would cost more than the message's bookkeeping.
char* ShmTransport::map_region(Peer& p, const RegionRef& ref, size_t bytes, bool writable) {
  try {
    return p.regions.map(p.pidfd.get(), ref, bytes, writable);
  } catch (const Error& e) {
    fail(e.code(), "shm: rank ", rank_, writable ? " accessing " : " reading ", name(p), "'s buffer: ", e.what());
  }
}

static_assert(sizeof(RegionRef) <= sizeof(MemoryHandle::bytes), "a region reference fits a memory handle");

bool ShmTransport::handle_for(const void* data, size_t bytes, MemoryHandle* handle) const {
  RegionRef ref{};
  if (!find_region(data, bytes, &ref)) return false;
  *handle = MemoryHandle{};
  std::memcpy(handle->bytes.data(), &ref, sizeof(ref));
  return true;
}

bool ShmTransport::can_access(int rank) const {
  const int i = local_index(rank);
  return !closed_ && i >= 0 && peers_[static_cast<size_t>(i)].can_map;
}

char* ShmTransport::access(int rank, const MemoryHandle& handle, size_t bytes, Access how) {
  Peer& p = peer(rank, "accesses the memory of");
  if (!p.can_map) fail(Code::kInternal, "shm: rank ", rank_, " may not map ", name(p), "'s buffers");
  RegionRef ref{};
  std::memcpy(&ref, handle.bytes.data(), sizeof(ref));
  return map_region(p, ref, bytes, how == Access::kReadWrite);
}

bool ShmTransport::progress(std::vector<RequestId>& done) {
  bool moved = !completed_early_.empty();
  done.insert(done.end(), completed_early_.begin(), completed_early_.end());
  completed_early_.clear();
  for (Peer& p : peers_) {
    // What a peer sent before it closed is still delivered (as over TCP): it
    // wrote its messages before its flag, so a flag seen before this look
    // leaves nothing of it unseen by the look.
    const bool closed = p.segment.header().aborted.load(std::memory_order_acquire) != 0;
    if (!p.sends.empty() || !p.awaiting_ack.empty()) moved = progress_sends(p, done) || moved;
    if (receiving(p)) moved = progress_recvs(p, done) || moved;
    if (closed && awaits(p)) check_alive(p);
  }
  return moved;
}

std::string ShmTransport::name(const Peer& p) const {
  return str_cat("rank ", p.rank, " (host ", host_id_, ", pid ", p.pid, ", shm)");
}

bool ShmTransport::sharing_a_cpu() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return false;  // unknown; -1 is also "never waited"
  std::atomic<int32_t>& mine = own_.header().waiting_cpu;
  if (mine.load(std::memory_order_relaxed) != cpu) mine.store(cpu, std::memory_order_relaxed);
  for (const Peer& p : peers_)
    if (p.segment.header().waiting_cpu.load(std::memory_order_relaxed) == cpu) return true;
  return false;
}

bool ShmTransport::alive(const Peer& p) const {
  return p.segment.header().aborted.load(std::memory_order_acquire) == 0 && !exited(p);
}

void ShmTransport::check_coming(const Peer& p, PairExchange& pairs, bool look, const char* before) const {
  if (exited(p))
    fail(Code::kRemote, "shm: rank ", rank_, ": rank ", p.rank, " (pid ", p.pid,
         ") exited (killed or crashed?) before ", before);
  if (look && pairs.gone(p.rank))
    fail(Code::kRemote, "shm: rank ", rank_, ": rank ", p.rank, "'s communicator is gone (its standby socket refuses ",
         "connections) before ", before);
}

bool ShmTransport::exited(const Peer& p) {
  if (p.pidfd.valid()) {
    pollfd gone{p.pidfd.get(), POLLIN, 0};
    return ::poll(&gone, 1, 0) == 1;
  }
  return process_ended(p.pid);
}

void ShmTransport::check_alive(const Peer& p) const {
  if (alive(p)) return;
  const SegmentHeader& h = p.segment.header();
  if (h.aborted.load(std::memory_order_acquire) != 0) {
    const std::string notice(h.notice, strnlen(h.notice, sizeof(h.notice)));
    if (!notice.empty()) fail_with_notice(rank_, name(p), h.notice_code, notice);
    fail(Code::kRemote, "rank ", rank_, ": ", name(p), " aborted its communicator");
  }
  const std::string pending = pending_with(p.rank);
  fail(Code::kRemote, "rank ", rank_, ": ", name(p), " has exited (killed or crashed?)",
       pending.empty() ? "" : str_cat(" with ", pending, " pending"));
}

void ShmTransport::poll(std::vector<RequestId>& done, int timeout_ms) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": shm transport was closed (abort)");
  if (progress(done)) return;
  if (timeout_ms == 0) {  // a look: with more ranks than cores, the core goes to a peer that can run
    if (yield_) sched_yield();
    return;
  }
  if (spin_until(timeout_ms, [&] { return progress(done); })) return;
  for (Peer& p : peers_)
    if (!p.recvs.empty()) board_mismatch(p);
  // Sleep on our doorbell. Announce it first, then look once more, so that a
  // peer's ring between our last look and the wait is not lost.
  SegmentHeader& h = own_.header();
  uint32_t seen = h.doorbell.load(std::memory_order_acquire);
  h.sleepers.fetch_add(1, std::memory_order_acq_rel);
  if (!progress(done)) futex_wait(h.doorbell, seen, std::min(timeout_ms, kMaxSleepMs));
  h.sleepers.fetch_sub(1, std::memory_order_acq_rel);
  if (progress(done)) return;
  // A peer found gone may have written its last messages since that look:
  // one more look, then whatever is still pending with it fails.
  bool gone = false;
  for (const Peer& p : peers_) gone = gone || (awaits(p) && !alive(p));
  if (!gone || progress(done)) return;
  for (const Peer& p : peers_)
    if (awaits(p) && !alive(p)) check_alive(p);
}

std::string ShmTransport::pending_with(int rank) const {
  const int i = local_index(rank);
  if (i < 0) return "";
  const Peer& p = peers_[static_cast<size_t>(i)];
  std::string out;
  if (!p.sends.empty() || !p.awaiting_ack.empty())
    out += str_cat(p.sends.size() + p.awaiting_ack.size(), " send(s) to rank ", rank, " (shm)");
  if (p.recvs.size() > p.standing_recvs)
    out += str_cat(out.empty() ? "" : "; ", p.recvs.size() - p.standing_recvs, " receive(s) from rank ", rank,
                   " (shm), first ", p.recvs.front().done_bytes, "/", p.recvs.front().bytes, " bytes");
  if (!p.notify_waits.empty())
    out += str_cat(out.empty() ? "" : "; ", p.notify_waits.size(), " notification(s) from rank ", rank, " (shm)");
  return out;
}

// Peers blocked on us see the flag, and why, at their next look (they are
// woken for it).
void ShmTransport::close(const Error* why) {
  closed_ = true;
  if (!own_.mapped()) return;
  SegmentHeader& h = own_.header();
  if (why != nullptr) {
    h.notice_code = static_cast<int32_t>(why->code());
    std::strncpy(h.notice, why->what(), sizeof(h.notice) - 1);
    h.notice[sizeof(h.notice) - 1] = '\0';
  }
  h.aborted.store(1, std::memory_order_release);
  for (Peer& p : peers_) ring_bell(p.segment.header());
  for (BoardCell& cell : own_.board().cells) futex_wake(cell.round);  // peers asleep on our board
  own_.unlink();
}

}  // namespace shm
}  // namespace coll::transport
