// Two ranks' TCP transports connected through the job's bootstrap store,
// for transport-level tests below any collective.
#pragma once

#include "bootstrap/store_client.h"
#include "bootstrap/unique_id.h"
#include "core/error.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace coll::testing {

struct Link {
  std::unique_ptr<bootstrap::StoreClient> store;
  std::unique_ptr<transport::Transport> transport;
  std::vector<std::string> addresses;
};

// Two ranks, their transports connected through the job's store.
inline Link connect_pair(int rank, const coll_unique_id_t& raw) {
  auto id = bootstrap::UniqueId::decode(raw);
  auto deadline = Deadline::after_ms(20000);
  Link link;
  link.store = std::make_unique<bootstrap::StoreClient>(id, deadline);
  link.transport = transport::make_tcp_transport(rank, 2, id.secret);
  link.store->set("addr/" + std::to_string(rank), link.transport->local_address(), deadline);
  link.addresses = {link.store->get("addr/0", deadline, "rank 0"), link.store->get("addr/1", deadline, "rank 1")};
  link.transport->connect({1 - rank}, link.addresses, deadline);
  return link;
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
