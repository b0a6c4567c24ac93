#include "transport/tcp/pair.h"

#include "base/error.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace coll::transport::tcp {
namespace {
// One syscall moves at most this much, so sizes past 4 GiB need no special path.
constexpr size_t kMaxPerSyscall = size_t{1} << 30;
}  // namespace

std::string check_frame(const FrameHeader& got) {
  if (got.magic != kFrameMagic) return str_cat("bad frame magic 0x", std::hex, got.magic);
  if (got.kind != kFrameData) return str_cat("unknown frame kind ", got.kind);
  return {};
}

Pair::Pair(int self, int peer, net::Fd fd, std::string peer_address, int64_t silence_ms)
    : self_(self), peer_(peer), fd_(std::move(fd)), peer_address_(std::move(peer_address)) {
  net::set_keepalive(fd_.get(), silence_ms > 0 ? silence_ms : 20000);
}

std::string Pair::name() const { return str_cat("rank ", peer_, " (", peer_address_, ")"); }

void Pair::post_send(RequestId id, const void* data, size_t bytes, uint64_t tag) {
  Op op{id, const_cast<char*>(static_cast<const char*>(data)), bytes, tag, {kFrameMagic, kFrameData, tag, bytes}};
  sends_.push_back(op);
}

void Pair::post_recv(RequestId id, void* data, size_t bytes, uint64_t tag) {
  recvs_.push_back(Op{id, static_cast<char*>(data), bytes, tag, {}});
}

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
    iovec iov[2];
    int n_iov = 0;
    if (op.header_done < sizeof(FrameHeader)) {
      iov[n_iov++] = {reinterpret_cast<char*>(&op.header) + op.header_done, sizeof(FrameHeader) - op.header_done};
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
    size_t to_header = std::min(sent, sizeof(FrameHeader) - op.header_done);
    op.header_done += to_header;
    op.payload_done += sent - to_header;
    if (op.header_done == sizeof(FrameHeader) && op.payload_done == op.bytes) {
      done.push_back(op.id);
      sends_.pop_front();
    } else if (n == 0) {
      return moved;
    }
  }
  return moved;
}

bool Pair::progress_recvs(std::vector<RequestId>& done) {
  bool moved = false;
  while (!recvs_.empty()) {
    Op& op = recvs_.front();
    char* dst;
    size_t want;
    if (op.header_done < sizeof(FrameHeader)) {
      dst = reinterpret_cast<char*>(&op.header) + op.header_done;
      want = sizeof(FrameHeader) - op.header_done;
    } else {
      dst = op.data + op.payload_done;
      want = std::min(op.bytes - op.payload_done, kMaxPerSyscall);
    }
    if (want > 0) {
      ssize_t n = ::recv(fd_.get(), dst, want, MSG_DONTWAIT);
      if (n == 0) lost("receiving from it", 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return moved;
        lost("receiving from it", errno);
      }
      moved = true;
      if (op.header_done < sizeof(FrameHeader)) {
        op.header_done += static_cast<size_t>(n);
        if (op.header_done == sizeof(FrameHeader)) {
          if (op.header.magic == kFrameMagic && op.header.kind == kFrameNotice) take_notice(op.header);
          std::string bad = check_frame(op.header);
          if (!bad.empty())
            fail(Code::kRemote, "rank ", self_, ": from ", name(), ", message #", received_messages_, ": ", bad,
                 " (not coll's framing: the stream is corrupt)");
          if (op.header.tag != op.tag || op.header.bytes != op.bytes)  // name() builds a string: only on a mismatch
            check_match_or_fail(self_, peer_, name(), op.header.tag, op.header.bytes, op.tag, op.bytes);
        }
      } else {
        op.payload_done += static_cast<size_t>(n);
      }
    }
    if (op.header_done == sizeof(FrameHeader) && op.payload_done == op.bytes) {
      done.push_back(op.id);
      recvs_.pop_front();
      ++received_messages_;
    }
  }
  return moved;
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
  if (!recvs_.empty() && recvs_.front().header_done > 0) return;  // mid-frame: what follows is not a header
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
  return out;
}

}  // namespace coll::transport::tcp
