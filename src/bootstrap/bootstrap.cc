#include "bootstrap/bootstrap.h"

#include "base/log.h"
#include "base/socket.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/mpi_bootstrap.h"
#include "bootstrap/store_server.h"

#include <cstdlib>

namespace coll::bootstrap {

HostedId host_unique_id() {
  std::string ifname;
  net::SockAddr addr = net::choose_interface(&ifname);
  HostedId hosted;
  hosted.id.secret = auth::random_secret();
  hosted.server = StoreServer::start(addr, hosted.id.secret);
  hosted.id.store_address = hosted.server->address().to_string();
  log::info(log::kBoot, "new unique id: store on ", hosted.id.store_address, " (", ifname, ")");
  return hosted;
}

UniqueId create_unique_id() { return host_unique_id().id; }

void HostedId::stop() const {
  if (server != nullptr) server->stop();
}

namespace {

// Rank 0's store. collrun binds the port itself and hands the socket down
// (COLL_ROOT_LISTEN_FD), because a port it merely found free could be taken
// by another process before rank 0 binds it. Taken once: a later
// communicator of the same process binds the port again, as other launchers'
// ranks always do.
void start_root_store(const Launch& launch) {
  net::SockAddr root = net::SockAddr::parse(launch.root_addr, "root address");
  if (launch.listen_fd >= 0) {
    unsetenv("COLL_ROOT_LISTEN_FD");
    net::SockAddr bound;
    net::Fd listener = net::adopt_listener(launch.listen_fd, &bound, "COLL_ROOT_LISTEN_FD");
    if (bound.port() != root.port())
      fail(Code::kInvalidUsage, "COLL_ROOT_LISTEN_FD=", launch.listen_fd, " listens on port ", bound.port(),
           ", not on ", launch.root_addr, " (COLL_ROOT_ADDR)");
    StoreServer::start_on(std::move(listener), bound, launch.secret);
    return;
  }
  // Listen on every address at the launcher's port: MASTER_ADDR may name
  // this host by any of its addresses.
  StoreServer::start(net::SockAddr::any(root.family(), root.port()), launch.secret);
}

}  // namespace

EnvJob join_from_env() {
  Launch launch = discover_launch();
  EnvJob job{launch.rank, launch.nranks, {}};
  if (launch.use_mpi) {
    job.id = mpi_share_unique_id(launch.rank, launch.nranks);
    return job;
  }
  job.id.store_address = launch.root_addr;
  job.id.secret = launch.secret;
  if (launch.rank == 0) start_root_store(launch);
  return job;
}

}  // namespace coll::bootstrap
