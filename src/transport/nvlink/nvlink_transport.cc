#include "transport/nvlink/nvlink_transport.h"

#include "base/error.h"

#include <cstring>

namespace coll::transport::nvlink {

// Every frame is one shm message of this size and tag.
enum class FrameKind : uint32_t { kSend = 1, kDone = 2, kPut = 3, kGet = 4 };
struct Frame {
  FrameKind kind{};
  int32_t code = 0;      // kDone: 0, or the Code the request fails with
  uint64_t request = 0;  // the origin's request (kDone: the one it answers)
  uint64_t tag = 0;      // kSend
  uint64_t bytes = 0;
  uint64_t region = 0;  // kPut, kGet: the target's registration
  uint64_t offset = 0;  // into it
  uint64_t value = 0;   // kPut: its notification, when `notify`
  uint32_t notify = 0;
  uint32_t unused = 0;
  Shared where{};      // the origin's buffer
  char why[112] = {};  // kDone with a code: the target's message, cut
};
static_assert(sizeof(Frame) == 256, "a frame is 256 bytes");
// kDone without a failure.
constexpr Code kOk = static_cast<Code>(COLL_SUCCESS);
constexpr uint64_t kFrameTag = 0x6e766c696e6bULL;  // "nvlink"

namespace {
std::pair<std::string, std::string> split_address(const std::string& address) {
  const size_t at = address.find('@');
  if (at == std::string::npos) return {"", ""};
  return {address.substr(0, at), address.substr(at + 1)};
}
}  // namespace

NvlinkTransport::NvlinkTransport(const Context& context, std::unique_ptr<Transport> frames)
    : context_(context), frames_(std::move(frames)) {
  mover_ = make_mover(context.rank);
  caps_.name = "nvlink";
  caps_.same_host_only = true;
  caps_.gpu_memory = true;
  // Emulated, host memory plays device memory: every message may go this way.
  caps_.device_only = mover_->moves(MemoryKind::kCuda);
  caps_.one_sided = true;
  caps_.link = {.alpha_us = 10, .beta_ns_per_byte = 0.003, .chunk_bytes = 4 << 20};
  peers_.resize(static_cast<size_t>(context.nranks));
}

NvlinkTransport::~NvlinkTransport() = default;

std::string NvlinkTransport::local_address() const { return mover_->address() + "@" + frames_->local_address(); }

bool NvlinkTransport::reaches(const std::string& peer_address) const {
  auto [mover, shm] = split_address(peer_address);
  return !mover.empty() && frames_->reaches(shm) && mover_->reaches(mover);
}

void NvlinkTransport::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                              PairExchange& pairs, const Deadline& deadline) {
  std::vector<std::string> shm(addresses.size());
  for (size_t r = 0; r < addresses.size(); ++r) shm[r] = split_address(addresses[r]).second;
  for (int p : peers)
    if (!peer(p, "connect").connected) mover_->connect(p, split_address(addresses.at(static_cast<size_t>(p))).first);
  frames_->connect(peers, shm, pairs, deadline);
  for (int p : peers) {
    Peer& q = peers_[static_cast<size_t>(p)];
    if (q.connected) continue;
    q.connected = true;
    listen(p);
  }
}

NvlinkTransport::Peer& NvlinkTransport::peer(int rank, const char* what) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", context_.rank, ": nvlink transport was closed (abort)");
  if (rank < 0 || rank >= context_.nranks || rank == context_.rank)
    fail(Code::kInvalidArgument, "nvlink ", what, " on rank ", context_.rank, ": no peer rank ", rank);
  return peers_[static_cast<size_t>(rank)];
}

void NvlinkTransport::listen(int p) {
  Peer& q = peers_[static_cast<size_t>(p)];
  q.inbound = std::make_unique<Frame>();
  inbound_[frames_->post_standing_recv(p, Buffer{q.inbound.get(), sizeof(Frame)}, kFrameTag)] = p;
}

// Throws unless the mover moves buffers of that kind (a zero-byte buffer
// moves nothing: any kind).
void NvlinkTransport::check_kind(int p, const Buffer& buffer, const char* what) const {
  if (buffer.bytes > 0 && !mover_->moves(buffer.kind))
    fail(Code::kInvalidUsage, "nvlink ", what, " on rank ", context_.rank, " with rank ", p, ": a ",
         memory_kind_name(buffer.kind), " buffer; nvlink moves device buffers only (", mover_->name(), ")");
}

void NvlinkTransport::send_frame(int p, const Frame& frame, RequestId then) {
  auto owned = std::make_unique<Frame>(frame);
  const RequestId inner = frames_->post_send(p, owned.get(), sizeof(Frame), kFrameTag);
  sending_[inner] = Sending{std::move(owned), then};
}

// A send, put or get: the frame names `local`, and the request completes
// when the peer answers.
RequestId NvlinkTransport::request(int p, Frame frame, const Buffer& local, const char* what) {
  Peer& q = peer(p, what);
  check_kind(p, local, what);
  frame.request = ++next_;
  frame.bytes = local.bytes;
  if (local.bytes > 0) frame.where = mover_->share(local.data, local.bytes);
  send_frame(p, frame);
  ++q.awaiting;
  return frame.request;
}

RequestId NvlinkTransport::post_send(int p, const Buffer& buffer, uint64_t tag) {
  return request(p, Frame{.kind = FrameKind::kSend, .tag = tag}, buffer, "send");
}

RequestId NvlinkTransport::post_recv(int p, const Buffer& buffer, uint64_t tag) {
  Peer& q = peer(p, "receive");
  check_kind(p, buffer, "receive");
  Recv r{++next_, buffer, tag};
  if (q.arrived.empty()) {
    q.recvs.push_back(r);
  } else {
    std::unique_ptr<Frame> f = std::move(q.arrived.front());
    q.arrived.pop_front();
    match(p, r, *f);
  }
  return r.id;
}

// A put or a get of `remote`'s bytes at `offset` (the handle names the
// peer's registration).
RequestId NvlinkTransport::one_sided(int p, FrameKind kind, const Buffer& local, const RemoteMemory& remote,
                                     size_t offset, const uint64_t* notify) {
  const bool put = kind == FrameKind::kPut;
  peer(p, put ? "put" : "get");
  check_remote_range(caps_, context_.rank, p, put, local.bytes, offset, remote);
  Frame f{.kind = kind, .offset = offset};
  std::memcpy(&f.region, remote.handle.bytes.data(), sizeof f.region);
  if (notify != nullptr) f.notify = 1, f.value = *notify;
  return request(p, f, local, put ? "put" : "get");
}

RequestId NvlinkTransport::post_put(int p, const Buffer& local, const RemoteMemory& remote, size_t offset,
                                    const uint64_t* notify) {
  return one_sided(p, FrameKind::kPut, local, remote, offset, notify);
}

RequestId NvlinkTransport::post_get(int p, const Buffer& local, const RemoteMemory& remote, size_t offset) {
  return one_sided(p, FrameKind::kGet, local, remote, offset, nullptr);
}

RequestId NvlinkTransport::post_notification(int p, uint64_t* value) {
  Peer& q = peer(p, "notification");
  const RequestId id = ++next_;
  if (q.notifications.empty()) {
    q.notify_waits.emplace_back(id, value);
  } else {
    *value = q.notifications.front();
    q.notifications.pop_front();
    ready_.push_back(id);
  }
  return id;
}

const Registration* NvlinkTransport::register_memory(const void* data, size_t bytes, MemoryKind kind) {
  if (!mover_->moves(kind)) return nullptr;
  for (auto& [id, r] : regions_)
    if (r.registration.base == data && r.registration.bytes == bytes && r.registration.kind == kind) {
      ++r.count;
      return &r.registration;
    }
  const uint64_t id = ++next_region_;
  Region& r = regions_[id];
  r.registration = {data, bytes, kind, {}};
  std::memcpy(r.registration.handle.bytes.data(), &id, sizeof id);
  return &r.registration;
}

void NvlinkTransport::deregister(const Registration* registration) {
  for (auto it = regions_.begin(); it != regions_.end(); ++it)
    if (&it->second.registration == registration) {
      if (--it->second.count == 0) regions_.erase(it);
      return;
    }
  fail(Code::kInvalidArgument, "nvlink on rank ", context_.rank, ": deregister of a registration that is not one (",
       "released already?)");
}

// A send frame meets the receive posted for it: the receiver pulls the
// bytes, and answers once they are in.
void NvlinkTransport::match(int p, const Recv& recv, const Frame& frame) {
  const std::string bad = check_match(frame.tag, frame.bytes, recv.tag, recv.buffer.bytes);
  if (!bad.empty()) {
    answer(p, frame.request, Code::kInvalidUsage, str_cat("rank ", context_.rank, "'s receive does not match: ", bad));
    check_match_or_fail(context_.rank, p, str_cat("rank ", p), frame.tag, frame.bytes, recv.tag, recv.buffer.bytes);
  }
  if (frame.bytes == 0) {
    answer(p, frame.request, kOk, "", recv.id);
    return;
  }
  const uint64_t copy = start_or_answer(p, frame.request, true, recv.buffer.data, frame.where, frame.bytes);
  copies_.push_back(Copy{copy, p, recv.id, frame.request});
}

// A peer's put or get of our registered memory.
void NvlinkTransport::serve(int p, const Frame& frame) {
  const bool put = frame.kind == FrameKind::kPut;
  auto it = regions_.find(frame.region);
  if (it == regions_.end() || frame.offset + frame.bytes > it->second.registration.bytes) {
    answer(p, frame.request, Code::kRemote,
           str_cat(put ? "put" : "get", " to rank ", context_.rank, ": the handle names no registered memory there",
                   it == regions_.end() ? "" : " of that size"));
    return;
  }
  char* at = static_cast<char*>(const_cast<void*>(it->second.registration.base)) + frame.offset;
  if (frame.bytes == 0) {
    answer(p, frame.request, kOk, "");
    if (frame.notify != 0) deliver(p, frame.value);
    return;
  }
  const uint64_t copy = start_or_answer(p, frame.request, put, at, frame.where, frame.bytes);
  copies_.push_back(Copy{copy, p, 0, frame.request, frame.notify != 0, frame.value});
}

void NvlinkTransport::answer(int p, uint64_t request, Code code, const std::string& why, RequestId then) {
  Frame f{.kind = FrameKind::kDone, .code = static_cast<int32_t>(code), .request = request};
  std::strncpy(f.why, why.c_str(), sizeof f.why - 1);
  send_frame(p, f, then);
}

void NvlinkTransport::deliver(int p, uint64_t value) {
  Peer& q = peers_[static_cast<size_t>(p)];
  if (q.notify_waits.empty()) {
    q.notifications.push_back(value);
    return;
  }
  *q.notify_waits.front().second = value;
  ready_.push_back(q.notify_waits.front().first);
  q.notify_waits.pop_front();
}

void NvlinkTransport::on_frame(int p, std::unique_ptr<Frame> frame) {
  Peer& q = peers_[static_cast<size_t>(p)];
  switch (frame->kind) {
    case FrameKind::kSend:
      if (q.recvs.empty()) {
        q.arrived.push_back(std::move(frame));
      } else {
        const Recv r = q.recvs.front();
        q.recvs.pop_front();
        match(p, r, *frame);
      }
      return;
    case FrameKind::kDone:
      --q.awaiting;
      if (frame->code != 0)
        fail(static_cast<Code>(frame->code), "rank ", context_.rank, ": rank ", p,
             " answered: ", std::string(frame->why, strnlen(frame->why, sizeof frame->why)));
      ready_.push_back(frame->request);
      return;
    case FrameKind::kPut:
    case FrameKind::kGet:
      serve(p, *frame);
      return;
  }
  fail(Code::kRemote, "rank ", context_.rank, ": rank ", p, " sent an nvlink frame of unknown kind ",
       static_cast<uint32_t>(frame->kind));
}

// A copy that cannot start fails here and, by its answer, at the peer that
// waits for it (else that one would wait out its timeout).
uint64_t NvlinkTransport::start_or_answer(int p, uint64_t request, bool pull, void* local, const Shared& remote,
                                          size_t bytes) {
  try {
    return mover_->start(p, pull, local, remote, bytes);
  } catch (const Error& e) {
    answer(p, request, Code::kRemote, e.what());
    throw;
  }
}

// Copies run in order on one stream: the oldest finishes first. A failed
// one is answered as failed, as above.
bool NvlinkTransport::copy_done(const Copy& c) {
  try {
    return mover_->done(c.copy);
  } catch (const Error& e) {
    answer(c.peer, c.answer, Code::kRemote, e.what());
    throw;
  }
}

void NvlinkTransport::finish_copies() {
  while (!copies_.empty() && copy_done(copies_.front())) {
    const Copy c = copies_.front();
    copies_.pop_front();
    answer(c.peer, c.answer, kOk, "", c.complete);
    if (c.notify) deliver(c.peer, c.value);
  }
}

void NvlinkTransport::poll(std::vector<RequestId>& done, int timeout_ms) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", context_.rank, ": nvlink transport was closed (abort)");
  finish_copies();
  inner_done_.clear();
  frames_->poll(inner_done_, ready_.empty() && copies_.empty() ? timeout_ms : 0);
  if (inner_done_.empty()) fail_what_waits_on_the_gone();
  for (RequestId inner : inner_done_) {
    if (auto s = sending_.find(inner); s != sending_.end()) {
      if (s->second.then != 0) ready_.push_back(s->second.then);
      sending_.erase(s);
      continue;
    }
    auto it = inbound_.find(inner);
    if (it == inbound_.end()) fail(Code::kInternal, "rank ", context_.rank, ": nvlink: unknown frame request");
    const int p = it->second;
    inbound_.erase(it);
    std::unique_ptr<Frame> frame = std::move(peers_[static_cast<size_t>(p)].inbound);
    listen(p);
    on_frame(p, std::move(frame));
  }
  finish_copies();
  done.insert(done.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

bool NvlinkTransport::awaits(int p) const {
  const Peer& q = peers_[static_cast<size_t>(p)];
  if (q.awaiting > 0 || !q.recvs.empty() || !q.notify_waits.empty()) return true;
  for (const Copy& c : copies_)
    if (c.peer == p) return true;
  return false;
}

// The frames' transport does not fail a standing receive when its peer
// leaves (a rank that finished and exited owes us nothing): here, what
// waits on a peer that left fails, with the frames' reason (an exit, or the
// peer's notice, such as a revoke), after a poll that brought no frame,
// every kCheckEvery whatever the poll's wait (the router gives a wait to
// one transport only). One more look first: the peer may have written its
// last frames since.
void NvlinkTransport::fail_what_waits_on_the_gone() {
  constexpr auto kCheckEvery = std::chrono::milliseconds(100);
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return;
  next_check_ = now + kCheckEvery;
  for (int p = 0; p < context_.nranks; ++p) {
    if (p == context_.rank || !peers_[static_cast<size_t>(p)].connected || !awaits(p)) continue;
    try {
      frames_->check_peer(p);
    } catch (const Error& e) {
      frames_->poll(inner_done_, 0);
      if (!inner_done_.empty()) return;
      throw Error(e.code(), str_cat(e.what(), "; over nvlink, ", pending_with(p), " pending"));
    }
  }
}

std::string NvlinkTransport::pending_with(int p) const {
  if (p < 0 || p >= context_.nranks) return "";
  const Peer& q = peers_[static_cast<size_t>(p)];
  size_t copying = 0;
  for (const Copy& c : copies_) copying += c.peer == p;
  std::string out;
  auto add = [&](size_t n, const char* what) {
    if (n > 0) out += str_cat(out.empty() ? "" : "; ", n, " ", what);
  };
  add(q.awaiting, "request(s) waiting for its answer (nvlink)");
  add(q.recvs.size(), "receive(s) waiting for a send (nvlink)");
  add(copying, "copy(ies) in flight (nvlink)");
  add(q.notify_waits.size(), "notification(s) awaited (nvlink)");
  return out;
}

void NvlinkTransport::close(const Error* why) {
  if (closed_) return;
  closed_ = true;
  frames_->close(why);
}

}  // namespace coll::transport::nvlink
