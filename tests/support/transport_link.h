// Two ranks' transports of one kind ("tcp" or "shm") connected through the
// job's bootstrap store, for the transport conformance suite: tests below
// any collective, written once, run for every transport.
#pragma once

#include "base/error.h"
#include "bootstrap/store_client.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/unique_id.h"
#include "core/pair_exchange.h"
#include "support/transports.h"
#include "transport/registry.h"
#include "transport/router.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace coll::testing {

// The TCP listening socket inside a published address: a tcp transport's
// "ip:port|host", or a communicator's "...;tcp=ip:port|host;host=...".
inline net::SockAddr tcp_socket_of(std::string address) {
  if (size_t at = address.find("tcp="); at != std::string::npos) address = address.substr(at + 4);
  return net::SockAddr::parse(address.substr(0, address.find_first_of(";|")), "tcp address");
}

struct Link {
  std::unique_ptr<bootstrap::StoreClient> store;
  std::unique_ptr<StorePairExchange> pairs;
  std::unique_ptr<transport::Transport> transport;
  std::vector<std::string> addresses;
};

// A transport of the registry by name; "shm_cma" is shm with single copy on.
inline std::unique_ptr<transport::Transport> make_transport(const std::string& kind, int rank, int nranks,
                                                            const bootstrap::UniqueId& id) {
  if (kind == "shm_cma") setenv("COLL_SHM_SINGLE_COPY", "1", 1);
  if (kind == "nvlink_emulated") setenv("COLL_NVLINK_EMULATE", "1", 1);
  const std::string name = kind == "shm_cma" ? "shm" : kind == "nvlink_emulated" ? "nvlink" : kind;
  return transport::find(name).make(
      {rank, nranks, id.secret, transport::job_tag(id.secret, "test"), transport::host_id()});
}

// Ranks 0 and 1, connected to each other.
inline Link connect_pair(int rank, const coll_unique_id_t& raw, const std::string& kind = "tcp") {
  auto id = bootstrap::UniqueId::decode(raw);
  auto deadline = Deadline::after_ms(20000);
  Link link;
  link.store = std::make_unique<bootstrap::StoreClient>(id, deadline, bootstrap::kStoreClientIdentity);
  link.pairs = std::make_unique<StorePairExchange>(*link.store, "", rank, 20000);
  link.transport = make_transport(kind, rank, 2, id);
  link.store->set("addr/" + std::to_string(rank), link.transport->local_address(), deadline);
  link.addresses = {link.store->get("addr/0", deadline, "rank 0"), link.store->get("addr/1", deadline, "rank 1")};
  link.transport->connect({1 - rank}, link.addresses, *link.pairs, deadline);
  return link;
}

// Swaps registrations with the peer through the store: the peer's memory,
// as this rank's puts and gets name it.
inline transport::RemoteMemory swap_registrations(Link& link, int rank, const transport::Registration& mine) {
  auto deadline = Deadline::after_ms(20000);
  link.store->set("handle/" + std::to_string(rank),
                  std::string(reinterpret_cast<const char*>(mine.handle.bytes.data()), mine.handle.bytes.size()),
                  deadline);
  const std::string theirs = link.store->get("handle/" + std::to_string(1 - rank), deadline, "the peer's handle");
  transport::RemoteMemory remote{{}, mine.bytes};
  std::memcpy(remote.handle.bytes.data(), theirs.data(), remote.handle.bytes.size());
  return remote;
}

// Polls until every request in `ids` completed.
inline void wait_all(transport::Transport& t, std::vector<transport::RequestId> ids, int timeout_ms = 20000) {
  auto deadline = Deadline::after_ms(timeout_ms);
  std::vector<transport::RequestId> done;
  while (!ids.empty()) {
    done.clear();
    t.poll(done, 50);
    for (auto d : done) ids.erase(std::remove(ids.begin(), ids.end(), d), ids.end());
    if (deadline.expired()) fail(Code::kTimeout, "test: requests did not complete");
  }
}

}  // namespace coll::testing
