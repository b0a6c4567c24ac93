#include "bootstrap/store_client.h"

#include "base/auth.h"
#include "base/error.h"
#include "bootstrap/store_protocol.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

namespace coll::bootstrap {

StoreClient::StoreClient(const UniqueId& id, const Deadline& deadline, uint32_t rank, net::Refused refused,
                         const std::function<bool()>& gone)
    : address_(id.store_address) {
  std::string what = str_cat("bootstrap store at ", address_);
  net::SockAddr addr = net::SockAddr::parse(address_, "bootstrap store address");
  fd_ = net::connect_to(addr, deadline, what, refused);
  fd_.parents_only();
  if (gone) await_greeting(gone, deadline, what);
  auth::client_handshake(fd_.get(), id.secret, kStorePurpose, rank, deadline, what);
}

// Until the greeting (or a reset or close) can be read, asking `gone`
// between looks. The looks start short, so that a lost connection costs
// little, and grow, so that a host that comes late is not asked hundreds of
// times. At the deadline the handshake's own receive reports the timeout.
void StoreClient::await_greeting(const std::function<bool()>& gone, const Deadline& deadline, const std::string& what) {
  for (int look_ms = 250;; look_ms = std::min(2 * look_ms, 2000)) {
    pollfd p{fd_.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms(look_ms));
    if (rc > 0 || deadline.expired()) return;
    if (rc < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, str_cat("waiting for ", what), "poll");
    if (gone()) fail(Code::kRemote, what, " is gone (it accepted us, never greeted us, and now refuses connections)");
  }
}

// A request whose reply did not come whole (a timeout, an abort) leaves
// that reply on its way: the connection is closed, so that no later
// request takes it for its own.
std::string StoreClient::request(uint32_t op, const std::string& key, const std::string& value,
                                 const Deadline& deadline, const std::string& waiting_for, bool* absent) {
  std::string what = str_cat("bootstrap store at ", address_);
  if (!fd_.valid())
    fail(Code::kRemote, what, ": this connection was closed after an earlier request got no answer in time");
  StoreRequestHeader h{op, static_cast<uint32_t>(key.size()), value.size()};
  std::string bad = validate_request(h);
  if (!bad.empty()) fail(Code::kInternal, "store request for '", key, "': ", bad);
  std::string frame(reinterpret_cast<const char*>(&h), sizeof(h));
  frame += key;
  frame += value;
  try {
    net::send_all(fd_.get(), frame.data(), frame.size(), deadline, what);
    StoreReplyHeader r{};
    try {
      net::recv_all(fd_.get(), &r, sizeof(r), deadline, what);
    } catch (const Error& e) {
      if (e.code() == Code::kTimeout && !waiting_for.empty())
        fail(Code::kTimeout, "timed out after ", deadline.budget_ms(), " ms (", deadline.setting(), ") waiting for ",
             waiting_for, " (store key '", key, "')");
      throw;
    }
    if (absent != nullptr) *absent = r.status == kAbsent && r.value_len == 0;
    if ((r.status != 0 && (absent == nullptr || !*absent)) || r.value_len > kMaxValueBytes)
      fail(Code::kRemote, what, " answered '", key, "' with status ", r.status, ", length ", r.value_len);
    std::string out(r.value_len, '\0');
    if (r.value_len > 0) net::recv_all(fd_.get(), out.data(), out.size(), deadline, what);
    return out;
  } catch (const Error&) {
    fd_.reset();
    throw;
  }
}

void StoreClient::set(const std::string& key, const std::string& value, const Deadline& deadline) {
  request(static_cast<uint32_t>(StoreOp::kSet), key, value, deadline, "");
}

std::string StoreClient::get(const std::string& key, const Deadline& deadline, const std::string& waiting_for) {
  return request(static_cast<uint32_t>(StoreOp::kGet), key, "", deadline, waiting_for);
}

// One WAIT per look, so that a key that comes is read at once, and a
// writer found gone ends the wait within a look.
std::string StoreClient::get(const std::string& key, const Deadline& deadline, const std::string& waiting_for,
                             const std::function<bool()>& writer_gone) {
  Looks looks;
  for (;;) {
    bool absent = false;
    std::string value =
        wait(key, deadline.remaining_ms(looks.until_due_ms(1 << 30)), deadline, waiting_for, &absent);
    if (!absent) return value;
    if (deadline.expired())
      fail(Code::kTimeout, "timed out after ", deadline.budget_ms(), " ms (", deadline.setting(), ") waiting for ",
           waiting_for, " (store key '", key, "')");
    if (looks.due() && writer_gone())
      fail(Code::kRemote, "stopped waiting for ", waiting_for, " (store key '", key, "'): its writer is gone");
  }
}

bool StoreClient::has(const std::string& key, const Deadline& deadline) {
  bool absent = false;
  wait(key, 0, deadline, "", &absent);
  return !absent;
}

// A WAIT's value is how long the store may hold it for the key to come.
std::string StoreClient::wait(const std::string& key, int64_t hold_ms, const Deadline& deadline,
                              const std::string& waiting_for, bool* absent) {
  return request(static_cast<uint32_t>(StoreOp::kWait), key,
                 std::string(reinterpret_cast<const char*>(&hold_ms), sizeof(hold_ms)), deadline, waiting_for, absent);
}

int64_t StoreClient::add(const std::string& key, int64_t delta, const Deadline& deadline) {
  std::string value(reinterpret_cast<const char*>(&delta), sizeof(delta));
  std::string sum = request(static_cast<uint32_t>(StoreOp::kAdd), key, value, deadline, "");
  int64_t out = 0;
  if (sum.size() != sizeof(out)) fail(Code::kRemote, "bootstrap store: bad ADD reply for '", key, "'");
  std::memcpy(&out, sum.data(), sizeof(out));
  return out;
}

void StoreClient::bye(int nranks) noexcept {
  try {
    int32_t n = nranks;
    request(static_cast<uint32_t>(StoreOp::kBye), "bye", std::string(reinterpret_cast<const char*>(&n), sizeof(n)),
            Deadline::after_ms(1000), "");
  } catch (...) {
  }
}

}  // namespace coll::bootstrap
