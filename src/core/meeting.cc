// Where the survivors of a failure meet: coll_comm_shrink (shrink.cc) and
// coll_comm_agree (agree.cc). Every communicator listens on a standby
// socket from init, because rank 0's store may have died with rank 0. The
// host of a meeting is the lowest rank not gone; it serves a store on its
// standby socket from its first meeting to the end of the communicator
// (later meetings keep their keys apart), under a secret of the
// communicator and the host, so that no other communicator's ranks meet
// there. A guest writes what it brings under "in/<rank>" and counts itself
// in under "arrived/<rank>"; the host gathers the arrivals, looking at
// them without blocking on any one rank and probing the ranks it still
// waits for, so that one found gone is left out at once.
#include "core/meeting.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/store_client.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_server.h"
#include "core/comm.h"

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace coll {
namespace meeting {

constexpr int kProbeWaitMs = 200;  // a listener on a host that answers replies well within this
constexpr auto kProbeEvery = std::chrono::milliseconds(100);
constexpr auto kLookEvery = std::chrono::milliseconds(5);

std::string join(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += str_cat(out.empty() ? "" : ",", r);
  return out;
}

std::vector<int> parse_ranks(const std::string& text, int nranks) {
  std::vector<int> out;
  std::stringstream list(text);
  for (std::string x; std::getline(list, x, ',');) {
    if (x.empty()) continue;
    const int r = std::stoi(x);
    if (r >= 0 && r < nranks) out.push_back(r);
  }
  return out;
}

bool refuses(const std::string& address) {
  return net::refuses_connections(net::SockAddr::parse(address, "standby address"), kProbeWaitMs);
}

}  // namespace meeting

using meeting::refuses;

// A rank found gone stays gone (its communicator or process ended): later
// meetings leave it out without probing it again.
bool Communicator::standby_gone(int r) const {
  if (found_gone_.empty()) found_gone_.assign(static_cast<size_t>(nranks_), 0);
  if (found_gone_[static_cast<size_t>(r)]) return true;
  const bool gone = refuses(standby_addresses_[static_cast<size_t>(r)]);
  if (gone) log::warn(log::kInit, "rank ", r, " is gone (its standby socket refuses connections): left out");
  found_gone_[static_cast<size_t>(r)] = gone;
  return gone;
}

// After an error from the host's store. A process being torn down closes
// its connections before its listener, so a host that is dying may still
// accept the first look: look again for a second.
bool Communicator::host_gone(int host) const {
  for (int look = 0; look < 10; ++look) {
    if (standby_gone(host)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bootstrap::UniqueId Communicator::standby_id(int host) const {
  bootstrap::UniqueId id;
  id.secret = auth::secret_from_text(str_cat(auth::to_hex(id_.secret), "/", prefix_, "standby/host", host));
  id.store_address = standby_addresses_[static_cast<size_t>(host)];
  return id;
}

// Every standby socket listens from init: a refusal means its rank is
// gone, whether it comes at once or while we wait for the rank to serve.
std::unique_ptr<bootstrap::StoreClient> Communicator::standby_store(int r, const Deadline& deadline) const {
  const bootstrap::UniqueId id = standby_id(r);
  const std::string address = id.store_address;
  return std::make_unique<bootstrap::StoreClient>(
      id, deadline, bootstrap::kStoreClientIdentity, net::Refused::kFail,
      r == rank_ ? std::function<bool()>() : [address] { return refuses(address); });
}

// A guest waits for a live host to serve for two timeouts and a second:
// the host may first have to fail the operation that met the failure,
// which takes up to one timeout, while the guest failed its own at once.
// A host that dies meanwhile is found by the probe (standby_store).
std::unique_ptr<bootstrap::StoreClient> Communicator::arrive(Meeting& meeting, const std::string& keys,
                                                             const std::vector<int>& mine, const std::string& brought) {
  const int host = meeting.host;
  const Deadline deadline = Deadline::after_ms(host == rank_ ? timeout_ms_ : 2 * timeout_ms_ + 1000);
  if (host == rank_ && standby_.valid())  // serves from the first meeting it hosts on
    standby_server_ = bootstrap::StoreServer::start_on(std::move(standby_), standby_bound_, standby_id(host).secret);
  auto store = standby_store(host, deadline);
  store->set(str_cat(keys, "in/", rank_),
             str_cat(meeting.replacement ? meeting::kLostHost : "", meeting::join(mine), "|", brought), deadline);
  store->add(str_cat(keys, "arrived/", rank_), 1, deadline);
  meeting.arrived = true;
  return store;
}

std::vector<std::optional<std::string>> Communicator::gather(bootstrap::StoreClient& store, const std::string& keys,
                                                             bool& replacement, std::vector<bool>& out,
                                                             const Deadline& deadline) {
  const size_t n = static_cast<size_t>(nranks_);
  std::vector<std::optional<std::string>> brought(n);
  for (size_t r = 0; r < found_gone_.size(); ++r)
    if (found_gone_[r]) out[r] = true;  // known gone: not waited for
  std::vector<bool> waiting(n);
  for (size_t r = 0; r < n; ++r) waiting[r] = !out[r];
  const std::vector<bool> gone = await_marks(store, keys + "arrived/", waiting, deadline, [&](size_t r) {
    std::string theirs = store.get(str_cat(keys, "in/", r), Deadline::after_ms(timeout_ms_), "");
    if (theirs.rfind(meeting::kLostHost, 0) == 0) {  // it too had met at a host that died: we replace it
      replacement = true;
      theirs.erase(0, std::strlen(meeting::kLostHost));
    }
    const size_t bar = theirs.find('|');
    // Its exclusions count at once: a rank it names is not waited for.
    for (int x : meeting::parse_ranks(theirs.substr(0, bar), nranks_)) {
      out[static_cast<size_t>(x)] = true;
      waiting[static_cast<size_t>(x)] = false;
    }
    brought[r] = bar == std::string::npos ? "" : theirs.substr(bar + 1);
  });
  for (size_t r = 0; r < n; ++r)
    if (gone[r]) out[r] = true;
  return brought;
}

std::vector<bool> Communicator::await_marks(bootstrap::StoreClient& store, const std::string& prefix,
                                            std::vector<bool>& waiting, const Deadline& deadline,
                                            const std::function<void(size_t)>& on_mark) {
  const size_t n = waiting.size();
  std::vector<bool> gone(n, false);
  auto next_probe = std::chrono::steady_clock::now() + meeting::kProbeEvery;
  for (;;) {
    for (size_t r = 0; r < n; ++r) {
      if (!waiting[r] || store.add(str_cat(prefix, r), 0, Deadline::after_ms(timeout_ms_)) == 0) continue;
      waiting[r] = false;
      on_mark(r);
    }
    bool any = false;
    for (size_t r = 0; r < n; ++r) any = any || waiting[r];
    if (!any || deadline.expired()) break;
    if (std::chrono::steady_clock::now() >= next_probe) {
      for (size_t r = 0; r < n; ++r)
        if (waiting[r] && standby_gone(static_cast<int>(r))) waiting[r] = false, gone[r] = true;
      next_probe = std::chrono::steady_clock::now() + meeting::kProbeEvery;
    }
    std::this_thread::sleep_for(meeting::kLookEvery);
  }
  return gone;
}

}  // namespace coll
