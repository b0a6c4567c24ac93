#include "bootstrap/bootstrap.h"

#include "bootstrap/launch_env.h"
#include "bootstrap/mpi_bootstrap.h"
#include "bootstrap/store_server.h"
#include "core/log.h"
#include "core/socket.h"

namespace coll::bootstrap {

UniqueId create_unique_id() {
  std::string ifname;
  net::SockAddr addr = net::choose_interface(&ifname);
  UniqueId id;
  id.secret = auth::random_secret();
  StoreServer* server = StoreServer::start(addr, id.secret);
  id.store_address = server->address().to_string();
  log::info(log::kBoot, "new unique id: store on ", id.store_address, " (", ifname, ")");
  return id;
}

EnvJob join_from_env() {
  Launch launch = discover_launch();
  EnvJob job{launch.rank, launch.nranks, {}};
  if (launch.use_mpi) {
    job.id = mpi_share_unique_id(launch.rank, launch.nranks);
    return job;
  }
  job.id.store_address = launch.root_addr;
  job.id.secret = launch.secret;
  if (launch.rank == 0) {
    // Listen on every address at the launcher's port: MASTER_ADDR may name
    // this host by any of its addresses.
    net::SockAddr root = net::SockAddr::parse(launch.root_addr, "root address");
    StoreServer::start(net::SockAddr::any(root.family(), root.port()), launch.secret);
  }
  return job;
}

}  // namespace coll::bootstrap
