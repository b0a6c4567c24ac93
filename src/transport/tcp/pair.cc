#include "transport/tcp/pair.h"

#include "base/error.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace coll::transport::tcp {
namespace {
// One syscall moves at most this much, so sizes past 4 GiB need no special path.
constexpr size_t kMaxPerSyscall = size_t{1} << 30;
}  // namespace

std::string check_frame(const FrameHeader& got) {
  if (got.magic != kFrameMagic) return str_cat("bad frame magic 0x", std::hex, got.magic);
  if (got.kind != kFrameData && got.kind != kFramePut && got.kind != kFrameGetRequest && got.kind != kFrameGetReply)
    return str_cat("unknown frame kind ", got.kind);
  return {};
}

Pair::Pair(int self, int peer, net::Fd fd, std::string peer_address, int64_t silence_ms)
    : self_(self), peer_(peer), fd_(std::move(fd)), peer_address_(std::move(peer_address)) {
  net::set_keepalive(fd_.get(), silence_ms > 0 ? silence_ms : 20000);
  static_assert(offsetof(Incoming, one_sided) == sizeof(FrameHeader), "a frame's block is read with its header");
}

std::string Pair::name() const { return str_cat("rank ", peer_, " (", peer_address_, ")"); }

void Pair::post_send(RequestId id, const void* data, size_t bytes, uint64_t tag) {
  Op op{id, const_cast<char*>(static_cast<const char*>(data)), bytes, tag, {kFrameMagic, kFrameData, tag, bytes}};
  sends_.push_back(op);
}

void Pair::post_recv(RequestId id, void* data, size_t bytes, uint64_t tag) {
  recvs_.push_back(Op{id, static_cast<char*>(data), bytes, tag, {}});
}

void Pair::post_put(RequestId id, const void* data, size_t bytes, uint64_t remote, uint64_t offset,
                    const uint64_t* notify) {
  Op op{id,
        const_cast<char*>(static_cast<const char*>(data)),
        bytes,
        0,
        {kFrameMagic, kFramePut, notify ? *notify : 0, bytes}};
  op.one_sided = OneSided{remote, offset, bytes, notify ? kNotifies : 0};
  sends_.push_back(op);
}

void Pair::post_get(RequestId id, void* data, size_t bytes, uint64_t remote, uint64_t offset) {
  Op request{0, nullptr, 0, 0, {kFrameMagic, kFrameGetRequest, 0, 0}};
  request.one_sided = OneSided{remote, offset, bytes, 0};
  sends_.push_back(request);  // id 0: nothing completes when it is sent
  gets_.push_back(Op{id, static_cast<char*>(data), bytes, 0, {}});
}

void Pair::post_notification(RequestId id, uint64_t* value) { notify_waits_.push_back(NotifyWait{id, value}); }

void Pair::lost(const char* doing, int err) {
  if (!fd_.valid()) fail(Code::kRemote, "rank ", self_, ": connection to ", name(), " was closed by abort");
  look_for_notice();
  if (err == 0)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " closed the connection while we were ", doing,
         " (did it exit, crash or abort?)");
  if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " stopped answering while we were ", doing, " (",
         std::strerror(err), ": is its node or link down?)");
  if (err == ECONNRESET || err == EPIPE)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " reset the connection while we were ", doing, " (",
         std::strerror(err), ")");
  fail_errno(Code::kSystem, err, str_cat("rank ", self_, ": ", name(), ": while ", doing),
             std::string(doing).rfind("send", 0) == 0 ? "sendmsg" : "recv");
}

void Pair::check_acknowledged(std::chrono::steady_clock::time_point now, int64_t silence_ms) {
  // Samples further apart than this were not watching in between (nothing
  // waited, e.g. compute between two operations): the watch starts again.
  if (now - last_sample_ > std::chrono::milliseconds(1500)) in_flight_since_ = {};
  last_sample_ = now;
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (!fd_.valid() || getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
    in_flight_since_ = {};
    return;
  }
  // A peer whose receive window is closed holds our data unsent: nothing is
  // in flight, and no keep-alive goes out while data waits. The kernel
  // probes the window, at a growing interval, and a live peer's kernel
  // answers each probe within a round trip, whether or not the process
  // reads. Two probes in a row unanswered (tcpi_probes counts them, and any
  // answer resets it), and nothing heard for the silence: the node is gone.
  if (info.tcpi_probes >= 2 && info.tcpi_last_ack_recv >= silence_ms)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " answered none of the last ", unsigned{info.tcpi_probes},
         " probes of its closed receive window and nothing for ", info.tcpi_last_ack_recv,
         " ms (COLL_TCP_SILENCE_MS): is its node or link down?");
  if (info.tcpi_unacked == 0) {
    in_flight_since_ = {};
    return;
  }
  if (in_flight_since_ == std::chrono::steady_clock::time_point{}) in_flight_since_ = now;
  const auto watched = std::chrono::duration_cast<std::chrono::milliseconds>(now - in_flight_since_).count();
  // Both: in flight all along, and no acknowledgement of any of it since.
  if (watched >= silence_ms && info.tcpi_last_ack_recv >= silence_ms)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " acknowledged nothing for ", info.tcpi_last_ack_recv,
         " ms with ", info.tcpi_unacked, " segment(s) in flight (COLL_TCP_SILENCE_MS): is its node or link down?");
}

bool Pair::progress(std::vector<RequestId>& done) {
  bool moved = progress_sends(done);
  moved = progress_recvs(done) || moved;
  return moved;
}

bool Pair::progress_sends(std::vector<RequestId>& done) {
  bool moved = false;
  while (!sends_.empty()) {
    Op& op = sends_.front();
    const bool block = op.header.kind == kFramePut || op.header.kind == kFrameGetRequest;
    const size_t head = sizeof(FrameHeader) + (block ? sizeof(OneSided) : 0);
    iovec iov[3];
    int n_iov = 0;
    if (op.header_done < sizeof(FrameHeader))
      iov[n_iov++] = {reinterpret_cast<char*>(&op.header) + op.header_done, sizeof(FrameHeader) - op.header_done};
    if (op.header_done < head) {
      const size_t from = op.header_done > sizeof(FrameHeader) ? op.header_done - sizeof(FrameHeader) : 0;
      iov[n_iov++] = {reinterpret_cast<char*>(&op.one_sided) + from, head - sizeof(FrameHeader) - from};
    }
    size_t left = op.bytes - op.payload_done;
    if (left > 0) iov[n_iov++] = {op.data + op.payload_done, std::min(left, kMaxPerSyscall)};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return moved;
      lost("sending to it", errno);
    }
    moved = moved || n > 0;
    size_t sent = static_cast<size_t>(n);
    size_t to_header = std::min(sent, head - op.header_done);
    op.header_done += to_header;
    op.payload_done += sent - to_header;
    if (op.header_done == head && op.payload_done == op.bytes) {
      if (op.id != 0) done.push_back(op.id);  // a get's request or reply completes nothing here
      sends_.pop_front();
    } else if (n == 0) {
      return moved;
    }
  }
  return moved;
}

bool Pair::read_some(char* into, size_t want, size_t* got) {
  ssize_t n = ::recv(fd_.get(), into, want, MSG_DONTWAIT);
  // The peer's end, between frames, while we only serve its puts and gets:
  // no error of ours yet, but of whatever waits on it later.
  if (n == 0 && in_.head_done == 0 && !awaits_frames()) {
    peer_ended_ = true;
    return false;
  }
  if (n == 0) lost("receiving from it", 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    lost("receiving from it", errno);
  }
  *got = static_cast<size_t>(n);
  return true;
}

// Frames are read as they come while anything waits for one; a data
// frame's payload waits in the socket until its receive is posted.
bool Pair::progress_recvs(std::vector<RequestId>& done) {
  bool moved = false;
  if (peer_ended_ && awaits_frames()) lost("receiving from it", 0);
  while (wants_frames()) {
    if (in_.head_done < in_.head_bytes) {
      size_t got = 0;
      if (!read_some(reinterpret_cast<char*>(&in_.header) + in_.head_done, in_.head_bytes - in_.head_done, &got)) break;
      moved = true;
      in_.head_done += got;
      if (in_.head_done == sizeof(FrameHeader) && in_.head_bytes == sizeof(FrameHeader)) {
        if (in_.header.magic == kFrameMagic && in_.header.kind == kFrameNotice) take_notice(in_.header);
        std::string bad = check_frame(in_.header);
        if (!bad.empty())
          fail(Code::kRemote, "rank ", self_, ": from ", name(), ", message #", received_messages_, ": ", bad,
               " (not coll's framing: the stream is corrupt)");
        if (in_.header.kind == kFramePut || in_.header.kind == kFrameGetRequest)
          in_.head_bytes += sizeof(OneSided);  // the block follows the header in memory: both are packed
      }
      continue;
    }
    if (!in_.placed && !place(done)) break;
    const size_t bytes = in_.header.kind == kFrameGetRequest ? 0 : in_.header.bytes;
    if (in_.payload_done < bytes) {
      size_t got = 0;
      if (!read_some(in_.into + in_.payload_done, std::min(bytes - in_.payload_done, kMaxPerSyscall), &got)) break;
      moved = true;
      in_.payload_done += got;
      if (in_.header.kind == kFrameData) recvs_.front().payload_done = in_.payload_done;
      if (in_.payload_done < bytes) continue;
    }
    finish(done);
    moved = true;
  }
  while (!notify_waits_.empty() && !notifications_.empty()) {
    *notify_waits_.front().value = notifications_.front();
    done.push_back(notify_waits_.front().id);
    notify_waits_.pop_front();
    notifications_.pop_front();
    moved = true;
  }
  return moved;
}

bool Pair::place(std::vector<RequestId>&) {
  const FrameHeader& h = in_.header;
  if (h.kind == kFrameData) {
    if (recvs_.empty()) return false;  // held until a receive is posted
    Op& op = recvs_.front();
    if (h.tag != op.tag || h.bytes != op.bytes)  // name() builds a string: only on a mismatch
      check_match_or_fail(self_, peer_, name(), h.tag, h.bytes, op.tag, op.bytes);
    in_.into = op.data;
  } else if (h.kind == kFrameGetReply) {
    if (gets_.empty() || gets_.front().bytes != h.bytes)
      fail(Code::kRemote, "rank ", self_, ": ", name(), " answered a get that was not asked (", h.bytes,
           " bytes): the stream is corrupt");
    in_.into = gets_.front().data;
  } else {
    const OneSided& o = in_.one_sided;
    std::string why = "this rank registered no memory";
    char* at = resolve_ == nullptr ? nullptr : resolve_(resolve_context_, o.registration, o.offset, o.bytes, &why);
    if (at == nullptr)
      fail(Code::kRemote, "rank ", self_, ": ", name(), h.kind == kFramePut ? " put " : " asked for ", o.bytes,
           " bytes at offset ", o.offset, " of registration ", o.registration, ": ", why);
    if (h.kind == kFramePut && h.bytes != o.bytes)
      fail(Code::kRemote, "rank ", self_, ": from ", name(),
           ": a put frame that disagrees with itself: the stream is corrupt");
    in_.into = at;
  }
  in_.placed = true;
  return true;
}

void Pair::finish(std::vector<RequestId>& done) {
  const FrameHeader h = in_.header;
  if (h.kind == kFrameData) {
    done.push_back(recvs_.front().id);
    recvs_.pop_front();
    ++received_messages_;
  } else if (h.kind == kFrameGetReply) {
    done.push_back(gets_.front().id);
    gets_.pop_front();
  } else if (h.kind == kFramePut) {
    if (in_.one_sided.flags & kNotifies) notifications_.push_back(h.tag);
  } else {  // a get request: the bytes go back, in order with our other sends
    sends_.push_back(Op{0, in_.into, in_.one_sided.bytes, 0, {kFrameMagic, kFrameGetReply, 0, in_.one_sided.bytes}});
  }
  in_ = Incoming{};
}

// A notice goes out only between frames (it cannot interrupt one), and
// only if the socket takes it at once: the connection ends anyway.
// Then the connection is reset (linger 0: close sends RST), so that a peer
// blocked sending to us fails at once; a mere close would leave it waiting
// while our unread data sat in the socket. With a notice sent, the unread
// data is drained and the close is orderly, so that the RST (which would
// make the peer drop what it has not read) comes only if it sends again.
void Pair::shutdown(const Error* why) {
  if (!fd_.valid()) return;
  bool told = false;
  if (why != nullptr && (sends_.empty() || sends_.front().header_done == 0)) {
    const std::string text = std::string(why->what()).substr(0, kMaxNoticeBytes);
    FrameHeader h{kFrameMagic, kFrameNotice, static_cast<uint64_t>(why->code()), text.size()};
    iovec iov[2] = {{&h, sizeof(h)}, {const_cast<char*>(text.data()), text.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    told = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof(h) + text.size());
  }
  if (told) {
    char sink[4096];
    for (int i = 0; i < 256 && ::recv(fd_.get(), sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
    }
    ::shutdown(fd_.get(), SHUT_WR);
  } else {
    linger reset{1, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  }
  fd_.reset();
}

void Pair::take_notice(const FrameHeader& notice) {
  if (notice.bytes > kMaxNoticeBytes)
    fail(Code::kRemote, "rank ", self_, ": ", name(), " sent a notice of ", notice.bytes, " bytes (at most ",
         kMaxNoticeBytes, "): the stream is corrupt");
  std::string text(notice.bytes, '\0');
  size_t got = 0;
  // The notice was sent in one piece right after its header: it is here or
  // about to be. Wait a little for it, not for a peer that is gone.
  for (int tries = 0; got < text.size() && tries < 100;) {
    ssize_t n = ::recv(fd_.get(), text.data() + got, text.size() - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    } else {
      pollfd p{fd_.get(), POLLIN, 0};
      ::poll(&p, 1, 10);
      ++tries;
    }
  }
  text.resize(got);
  fail_with_notice(self_, name(), static_cast<int>(notice.tag), text);
}

void Pair::look_for_notice() {
  if (in_.head_done > 0) return;  // mid-frame: what follows is not a header
  FrameHeader h{};
  if (::recv(fd_.get(), &h, sizeof(h), MSG_DONTWAIT | MSG_PEEK) != static_cast<ssize_t>(sizeof(h))) return;
  if (h.magic != kFrameMagic || h.kind != kFrameNotice) return;
  ::recv(fd_.get(), &h, sizeof(h), MSG_DONTWAIT);
  take_notice(h);
}

std::string Pair::describe_pending() const {
  std::string out;
  if (!sends_.empty())
    out += str_cat(sends_.size(), " send(s) to ", name(), ", first ", sends_.front().payload_done, "/",
                   sends_.front().bytes, " bytes sent");
  if (!recvs_.empty())
    out += str_cat(out.empty() ? "" : "; ", recvs_.size(), " receive(s) from ", name(), ", first ",
                   recvs_.front().payload_done, "/", recvs_.front().bytes, " bytes received");
  if (!gets_.empty()) out += str_cat(out.empty() ? "" : "; ", gets_.size(), " get(s) from ", name());
  if (!notify_waits_.empty())
    out += str_cat(out.empty() ? "" : "; ", notify_waits_.size(), " notification(s) from ", name());
  return out;
}

}  // namespace coll::transport::tcp
