#include "job.h"

#include "base/auth.h"
#include "base/error.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace collrun {
namespace {

// A port no one listens on now: torch's store (MASTER_PORT) will bind it.
int free_port() {
  coll::net::SockAddr bound;
  coll::net::Fd probe =
      coll::net::listen_on(coll::net::SockAddr::parse("127.0.0.1:0", "loopback"), &bound, "collrun MASTER_PORT");
  return bound.port();
}

// Which node each rank goes to, and its rank among that node's.
bool place(const Options& opt, Job& job) {
  const size_t n = static_cast<size_t>(opt.nranks);
  job.node_of.assign(n, 0);
  job.local_rank.assign(n, 0);
  job.local_size.assign(static_cast<size_t>(std::max(opt.nodes, 1)), 0);
  if (opt.nodes == 0) {
    for (int r = 0; r < opt.nranks; ++r) job.local_rank[static_cast<size_t>(r)] = r;
    job.local_size[0] = opt.nranks;
    return true;
  }
  try {
    job.nodes = coll::bootstrap::emulated_nodes();
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "collrun: %s\n", e.what());
    return false;
  }
  if (static_cast<int>(job.nodes.size()) < opt.nodes) {
    std::fprintf(stderr,
                 "collrun: --nodes %d, but COLL_NETNS_NODES lists %zu emulated node(s): run under "
                 "scripts/emulate-cluster.sh -k %d\n",
                 opt.nodes, job.nodes.size(), opt.nodes);
    return false;
  }
  const int per_node = (opt.nranks + opt.nodes - 1) / opt.nodes;
  for (int r = 0; r < opt.nranks; ++r) {
    const int node = opt.cyclic ? r % opt.nodes : r / per_node;
    job.node_of[static_cast<size_t>(r)] = node;
    job.local_rank[static_cast<size_t>(r)] = job.local_size[static_cast<size_t>(node)]++;
  }
  return true;
}

void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

[[noreturn]] void exec_program(const Options& opt) {
  execvp(opt.argv[0], opt.argv.data());
  std::fprintf(stderr, "collrun: cannot run %s: %s\n", opt.argv[0], std::strerror(errno));
  _exit(127);
}

void enter_node(const coll::bootstrap::EmulatedNode& node, const char* who, int r) {
  try {
    coll::bootstrap::enter_emulated_node(node);
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "collrun: %s %d: %s\n", who, r, e.what());
    _exit(127);
  }
}

// A spare has no rank: it waits for a communicator to grow.
[[noreturn]] void run_spare(const Options& opt, const Job& job, int k) {
  set("COLL_SPARE", std::to_string(k));
  if (std::getenv("COLL_SOCKET_IFNAME") == nullptr && job.nodes.empty()) set("COLL_SOCKET_IFNAME", "lo");
  if (!job.nodes.empty()) enter_node(job.nodes[static_cast<size_t>(k % opt.nodes)], "spare", k);
  exec_program(opt);
}

}  // namespace

bool plan_job(const Options& opt, Job& job, int& exit_code) {
  if (opt.bind_core) job.cpus = allowed_cpus();
  exit_code = 2;
  if (!place(opt, job)) return false;
  // Rank 0 hosts the store: on loopback, or on its emulated node's address.
  // On loopback collrun binds the port and rank 0 inherits the socket, so no
  // other process (another job's launcher, say) can take it in between. An
  // emulated node only takes the port number: nothing else lives in its
  // network namespace.
  coll::net::SockAddr bound;
  job.store_listener =
      coll::net::listen_on(coll::net::SockAddr::parse("127.0.0.1:0", "loopback"), &bound, "collrun store port");
  job.root = bound.to_string();
  job.master_addr = "127.0.0.1";
  if (!job.nodes.empty()) {
    job.master_addr = job.nodes[static_cast<size_t>(job.node_of[0])].ip;
    job.root = job.master_addr + ":" + std::to_string(bound.port());
    job.store_listener.reset();
  }
  job.secret = coll::auth::to_hex(coll::auth::random_secret());
  job.master_port = std::to_string(free_port());
  if (opt.spares > 0) {
    char tmpl[] = "/tmp/collrun-spares-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("collrun: mkdtemp for --spares");
      exit_code = 1;
      return false;
    }
    job.spares_dir = tmpl;
  }
  return true;
}

void run_rank(const Options& opt, const Job& job, int r, int out_fd) {
  setpgid(0, 0);  // its own group, so that ending it ends its children too
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  if (out_fd >= 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    close(out_fd);
  }
  if (!job.spares_dir.empty()) set("COLL_SPARES_DIR", job.spares_dir);
  if (r >= opt.nranks) run_spare(opt, job, r - opt.nranks);

  const size_t node = static_cast<size_t>(job.node_of[static_cast<size_t>(r)]);
  const std::string local_rank = std::to_string(job.local_rank[static_cast<size_t>(r)]);
  const std::string local_size = std::to_string(job.local_size[node]);
  set("COLL_RANK", std::to_string(r));
  set("COLL_NRANKS", std::to_string(opt.nranks));
  set("COLL_LOCAL_RANK", local_rank);
  set("COLL_LOCAL_SIZE", local_size);
  set("COLL_ROOT_ADDR", job.root);
  if (r == 0 && job.store_listener.valid()) {
    const int kept = dup(job.store_listener.get());  // a dup loses close-on-exec; the others' copies close at exec
    set("COLL_ROOT_LISTEN_FD", std::to_string(kept));
  }
  set("COLL_JOB_SECRET", job.secret);
  set("RANK", std::to_string(r));
  set("WORLD_SIZE", std::to_string(opt.nranks));
  set("LOCAL_RANK", local_rank);
  set("LOCAL_WORLD_SIZE", local_size);
  set("MASTER_ADDR", job.master_addr);
  set("MASTER_PORT", job.master_port);
  if (!job.cpus.empty()) {
    cpu_set_t one;
    CPU_ZERO(&one);
    const int cpu = job.cpus[static_cast<size_t>(r) % job.cpus.size()];
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
      std::fprintf(stderr, "collrun: rank %d: --bind-to core: cannot bind to CPU %d: %s\n", r, cpu,
                   std::strerror(errno));
      _exit(127);
    }
  }
  if (!job.nodes.empty())
    enter_node(job.nodes[node], "rank", r);
  else if (std::getenv("COLL_SOCKET_IFNAME") == nullptr)
    set("COLL_SOCKET_IFNAME", "lo");  // all ranks share this host, so loopback is the right interface
  exec_program(opt);
}

}  // namespace collrun
