// collrun — starts N ranks of a program on this machine.
//
//   collrun -n N [--spares K] [--nodes K [--placement block|cyclic]]
//           [--bind-to core|none] [--tag-output] [--grace SECONDS] [--] prog [args...]
//
// With --nodes K, under scripts/emulate-cluster.sh, the ranks go to K
// emulated nodes (network namespaces, COLL_NETNS_NODES): in blocks (ranks
// 0..N/K-1 on the first) or cyclic (rank r on node r mod K, an
// interleaved launcher). Each node is a host of its own to coll: shared
// memory inside it, TCP between nodes.
//
// With --bind-to core, rank r runs on the (r mod C)-th of the C logical CPUs
// collrun may use (emulated nodes share them too), wrapping around when
// ranks outnumber them; spares are not bound. Where the kernel places
// unbound ranks that share cores changes from run to run, and so does
// their speed (docs/PERFORMANCE.md, "Ranks sharing cores"). coll's own
// NUMA binding (COLL_BIND) keeps the CPU.
//
// Each rank gets the variables coll_comm_init_from_env() reads (COLL_RANK,
// COLL_NRANKS, COLL_LOCAL_RANK, COLL_LOCAL_SIZE, COLL_ROOT_ADDR,
// COLL_JOB_SECRET); rank 0 hosts the bootstrap store at COLL_ROOT_ADDR.
// It also sets the variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so that a PyTorch program's
// init_process_group(init_method="env://") runs under collrun unchanged;
// MASTER_PORT is a port found free on rank 0's host, which torch's store
// binds afresh (torch cannot inherit a bound socket, as coll's store does).
// With --spares K, K more processes start as hot spares (COLL_SPARE=k, no
// rank): their coll_comm_init_from_env waits until a communicator grows
// (coll_comm_grow) and takes a seat it offers in COLL_SPARES_DIR, a
// directory collrun makes for the job. Spares still waiting when every
// rank has ended are ended too, which is no failure.
// collrun returns the first non-zero exit status (128+signal for a rank
// killed by a signal). When a rank fails, the others get a grace period to
// finish (they will usually see the failure themselves), then SIGTERM, then
// SIGKILL, so nothing is left running, and removes any shared-memory
// segment that a rank ended that way left in /dev/shm. When a rank cannot be
// started (no fork, no pipe), those started are ended at once (SIGTERM, then
// SIGKILL 2 s later), and collrun returns 1.
#include "base/auth.h"
#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/emulated_node.h"
#include "bootstrap/spares.h"
#include "transport/registry.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace {

struct Options {
  int nranks = 0;
  int spares = 0;  // --spares
  int nodes = 0;   // emulated nodes (--nodes); 0: this machine only
  bool cyclic = false;
  bool tag_output = false;
  bool bind_core = false;  // --bind-to core
  double grace_s = 5.0;
  std::vector<char*> argv;
};

// A port no one listens on now: torch's store (MASTER_PORT) will bind it.
int free_port() {
  coll::net::SockAddr bound;
  coll::net::Fd probe =
      coll::net::listen_on(coll::net::SockAddr::parse("127.0.0.1:0", "loopback"), &bound, "collrun MASTER_PORT");
  return bound.port();
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: collrun -n N [--spares K] [--nodes K [--placement block|cyclic]] [--bind-to core|none]\n"
               "               [--tag-output] [--grace SECONDS] [--] prog [args...]\n"
               "  -n, --np N        number of ranks to start on this machine\n"
               "  --spares K        start K hot spares too, which join when a communicator grows\n"
               "  --nodes K         spread them over K emulated nodes (under scripts/emulate-cluster.sh)\n"
               "  --placement P     block (default: ranks 0..N/K-1 on node 0, ...) or cyclic (rank r on node r mod K)\n"
               "  --bind-to B       core: rank r on the (r mod C)-th of the C logical CPUs allowed; none (default)\n"
               "  --tag-output      prefix every output line with [rank]\n"
               "  --grace SECONDS   after a rank fails, wait this long before ending the others (5)\n");
}

// An option's value, which must be one of two words; else exits with code 2.
std::string one_of(const char* option, const std::string& value, const char* a, const char* b) {
  if (value != a && value != b) {
    std::fprintf(stderr, "collrun: %s %s: %s or %s\n", option, value.c_str(), a, b);
    std::exit(2);
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-n" || a == "-np" || a == "--np") && i + 1 < argc) {
      o.nranks = std::atoi(argv[++i]);
    } else if (a == "--spares" && i + 1 < argc) {
      o.spares = std::atoi(argv[++i]);
      if (o.spares < 0) {
        std::fprintf(stderr, "collrun: --spares %s: must be at least 0\n", argv[i]);
        std::exit(2);
      }
    } else if (a == "--nodes" && i + 1 < argc) {
      o.nodes = std::atoi(argv[++i]);
      if (o.nodes < 1) {
        std::fprintf(stderr, "collrun: --nodes %s: must be at least 1\n", argv[i]);
        std::exit(2);
      }
    } else if (a == "--placement" && i + 1 < argc) {
      o.cyclic = one_of("--placement", argv[++i], "block", "cyclic") == "cyclic";
    } else if (a == "--bind-to" && i + 1 < argc) {
      o.bind_core = one_of("--bind-to", argv[++i], "core", "none") == "core";
    } else if (a == "--tag-output") {
      o.tag_output = true;
    } else if (a == "--grace" && i + 1 < argc) {
      o.grace_s = std::atof(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "collrun: unknown option %s\n", a.c_str());
      usage(stderr);
      std::exit(2);
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.argv.push_back(argv[i]);
  o.argv.push_back(nullptr);
  if (o.nranks < 1 || o.argv.size() < 2) {
    std::fprintf(stderr, "collrun: need -n N (N >= 1) and a program to run\n");
    usage(stderr);
    std::exit(2);
  }
  return o;
}

// The CPUs this process may use, in order: --bind-to core's cores. Exits
// (2) where they cannot be read, before any rank starts.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    std::fprintf(stderr, "collrun: --bind-to core: cannot read the CPUs allowed (sched_getaffinity: %s)\n",
                 std::strerror(errno));
    std::exit(2);
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

struct Rank {
  pid_t pid = -1;
  int out_fd = -1;  // with --tag-output: the rank's stdout+stderr
  std::string partial;
  bool running = false;
  bool spare = false;
  bool spare_ended = false;  // still waiting when the ranks were done: ended, no failure
  int status = 0;
};

void emit(int rank, const std::string& line) {
  char tag[32];
  int n = std::snprintf(tag, sizeof(tag), "[%d] ", rank);
  std::string tagged(tag, static_cast<size_t>(n));
  tagged.append(line).push_back('\n');
  ssize_t ignored = ::write(STDOUT_FILENO, tagged.data(), tagged.size());
  (void)ignored;
}

// Reads what a rank wrote and prints complete lines with its tag.
void drain(int rank, Rank& r, bool final) {
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(r.out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    r.partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = r.partial.find('\n')) != std::string::npos) {
      emit(rank, r.partial.substr(0, nl));
      r.partial.erase(0, nl + 1);
    }
  }
  if (final && !r.partial.empty()) {
    emit(rank, r.partial);
    r.partial.clear();
  }
}

// A rank ended by a signal (ours, after another failed) before its local peers
// mapped its shared-memory segment leaves it in /dev/shm. A segment's name
// ends with its maker's pid: what an ended rank made, for any communicator,
// is removed while the rank is still a zombie, so that no other process has
// its pid yet. A rank run through a wrapper made its segments in a child of
// it: those of the job's secret (the first communicator and its splits) are
// removed once every rank has ended.
class Leftovers {
 public:
  void remove_by(pid_t pid) { remove(coll::transport::segments_left_by({static_cast<int>(pid)})); }
  void remove_of(const std::string& secret_hex) {
    remove(coll::transport::segments_left(coll::auth::secret_from_hex(secret_hex, "the job secret")));
  }
  void report() const {
    if (removed_ > 0)
      std::fprintf(stderr, "collrun: removed %zu shared-memory segment(s) that ended ranks left in /dev/shm (%s)\n",
                   removed_, first_.c_str());
  }

 private:
  void remove(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      std::error_code ec;
      if (!std::filesystem::remove("/dev/shm/" + name, ec)) continue;
      if (removed_++ == 0) first_ = name;
    }
  }
  size_t removed_ = 0;
  std::string first_;
};

// A child that has exited, not reaped (WNOWAIT): its pid stays reserved until
// waitpid. `which`: that child only; 0: any. 0 when none has, -1 when there
// is no such child.
pid_t exited_child(pid_t which = 0) {
  siginfo_t info{};
  if (waitid(which > 0 ? P_PID : P_ALL, static_cast<id_t>(which), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
  return info.si_pid;
}

// A rank that could not be started (no pipe, no fork): the ones that were
// would wait for it until their timeout, so they are ended now, without a
// grace period: SIGTERM, and SIGKILL two seconds later.
void end_started(std::vector<Rank>& ranks, Leftovers& leftovers) {
  for (const Rank& rk : ranks)
    if (rk.running) kill(-rk.pid, SIGTERM);
  const auto kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    Rank& rk = ranks[static_cast<size_t>(r)];
    while (rk.running && exited_child(rk.pid) == 0) {
      if (std::chrono::steady_clock::now() >= kill_at) kill(-rk.pid, SIGKILL);
      usleep(10000);
    }
    if (rk.running) {
      leftovers.remove_by(rk.pid);
      waitpid(rk.pid, nullptr, 0);
      rk.running = false;
    }
    if (rk.out_fd >= 0) {
      drain(r, rk, true);
      close(rk.out_fd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  const std::vector<int> cpus = opt.bind_core ? allowed_cpus() : std::vector<int>{};
  // Emulated nodes: which node each rank goes to, and its rank among them.
  std::vector<coll::bootstrap::EmulatedNode> nodes;
  std::vector<int> node_of(static_cast<size_t>(opt.nranks), 0), local_rank(static_cast<size_t>(opt.nranks), 0);
  std::vector<int> local_size(static_cast<size_t>(std::max(opt.nodes, 1)), 0);
  if (opt.nodes > 0) {
    try {
      nodes = coll::bootstrap::emulated_nodes();
    } catch (const coll::Error& e) {
      std::fprintf(stderr, "collrun: %s\n", e.what());
      return 2;
    }
    if (static_cast<int>(nodes.size()) < opt.nodes) {
      std::fprintf(stderr,
                   "collrun: --nodes %d, but COLL_NETNS_NODES lists %zu emulated node(s): run under "
                   "scripts/emulate-cluster.sh -k %d\n",
                   opt.nodes, nodes.size(), opt.nodes);
      return 2;
    }
    const int per_node = (opt.nranks + opt.nodes - 1) / opt.nodes;
    for (int r = 0; r < opt.nranks; ++r) {
      int node = opt.cyclic ? r % opt.nodes : r / per_node;
      node_of[static_cast<size_t>(r)] = node;
      local_rank[static_cast<size_t>(r)] = local_size[static_cast<size_t>(node)]++;
    }
  } else {
    for (int r = 0; r < opt.nranks; ++r) local_rank[static_cast<size_t>(r)] = r;
    local_size[0] = opt.nranks;
  }
  // Rank 0 hosts the store: on loopback, or on its emulated node's address.
  // On loopback collrun binds the port and rank 0 inherits the socket, so no
  // other process (another job's launcher, say) can take it in between. An
  // emulated node only takes the port number: nothing else lives in its
  // network namespace.
  coll::net::SockAddr bound;
  coll::net::Fd store_listener =
      coll::net::listen_on(coll::net::SockAddr::parse("127.0.0.1:0", "loopback"), &bound, "collrun store port");
  std::string root = bound.to_string();
  if (!nodes.empty()) {
    root = nodes[static_cast<size_t>(node_of[0])].ip + ":" + std::to_string(bound.port());
    store_listener.reset();
  }
  const std::string secret = coll::auth::to_hex(coll::auth::random_secret());
  std::string master_addr = nodes.empty() ? "127.0.0.1" : nodes[static_cast<size_t>(node_of[0])].ip;
  std::string master_port = std::to_string(free_port());
  const char* ifname = std::getenv("COLL_SOCKET_IFNAME");

  std::string spares_dir;
  if (opt.spares > 0) {
    char tmpl[] = "/tmp/collrun-spares-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("collrun: mkdtemp for --spares");
      return 1;
    }
    spares_dir = tmpl;
  }

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);

  const int nprocs = opt.nranks + opt.spares;
  std::vector<Rank> ranks(static_cast<size_t>(nprocs));
  Leftovers leftovers;
  for (int r = 0; r < nprocs; ++r) {
    const bool spare = r >= opt.nranks;
    int pipe_fds[2] = {-1, -1};
    const bool piped = !opt.tag_output || pipe2(pipe_fds, O_CLOEXEC) == 0;  // the next ranks inherit none
    const pid_t pid = piped ? fork() : -1;
    if (pid < 0) {
      std::fprintf(stderr, "collrun: cannot start %s %d (%s: %s); ending the %d started before it\n",
                   spare ? "spare" : "rank", spare ? r - opt.nranks : r, piped ? "fork" : "pipe", std::strerror(errno),
                   r);
      if (piped && opt.tag_output) close(pipe_fds[0]), close(pipe_fds[1]);
      end_started(ranks, leftovers);
      if (!spares_dir.empty()) std::filesystem::remove_all(spares_dir);
      leftovers.remove_of(secret);
      leftovers.report();
      return 1;
    }
    if (pid == 0) {
      setpgid(0, 0);  // its own group, so that ending it ends its children too
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      if (opt.tag_output) {
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
      }
      if (!spares_dir.empty()) setenv("COLL_SPARES_DIR", spares_dir.c_str(), 1);
      if (spare) {  // no rank: it waits for a communicator to grow
        setenv("COLL_SPARE", std::to_string(r - opt.nranks).c_str(), 1);
        if (ifname == nullptr && nodes.empty()) setenv("COLL_SOCKET_IFNAME", "lo", 1);
        if (!nodes.empty()) {
          try {
            coll::bootstrap::enter_emulated_node(nodes[static_cast<size_t>((r - opt.nranks) % opt.nodes)]);
          } catch (const coll::Error& e) {
            std::fprintf(stderr, "collrun: spare %d: %s\n", r - opt.nranks, e.what());
            _exit(127);
          }
        }
        execvp(opt.argv[0], opt.argv.data());
        std::fprintf(stderr, "collrun: cannot run %s: %s\n", opt.argv[0], std::strerror(errno));
        _exit(127);
      }
      setenv("COLL_RANK", std::to_string(r).c_str(), 1);
      setenv("COLL_NRANKS", std::to_string(opt.nranks).c_str(), 1);
      const int node = node_of[static_cast<size_t>(r)];
      setenv("COLL_LOCAL_RANK", std::to_string(local_rank[static_cast<size_t>(r)]).c_str(), 1);
      setenv("COLL_LOCAL_SIZE", std::to_string(local_size[static_cast<size_t>(node)]).c_str(), 1);
      setenv("COLL_ROOT_ADDR", root.c_str(), 1);
      if (r == 0 && store_listener.valid()) {
        int kept = dup(store_listener.get());  // a dup loses close-on-exec; the others' copies close at exec
        setenv("COLL_ROOT_LISTEN_FD", std::to_string(kept).c_str(), 1);
      }
      setenv("COLL_JOB_SECRET", secret.c_str(), 1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(opt.nranks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(local_rank[static_cast<size_t>(r)]).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(local_size[static_cast<size_t>(node)]).c_str(), 1);
      setenv("MASTER_ADDR", master_addr.c_str(), 1);
      setenv("MASTER_PORT", master_port.c_str(), 1);
      if (!cpus.empty()) {
        cpu_set_t one;
        CPU_ZERO(&one);
        const int cpu = cpus[static_cast<size_t>(r) % cpus.size()];
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0) {
          std::fprintf(stderr, "collrun: rank %d: --bind-to core: cannot bind to CPU %d: %s\n", r, cpu,
                       std::strerror(errno));
          _exit(127);
        }
      }
      if (!nodes.empty()) {
        try {
          coll::bootstrap::enter_emulated_node(nodes[static_cast<size_t>(node)]);
        } catch (const coll::Error& e) {
          std::fprintf(stderr, "collrun: rank %d: %s\n", r, e.what());
          _exit(127);
        }
      } else if (ifname == nullptr) {
        setenv("COLL_SOCKET_IFNAME", "lo", 1);  // all ranks share this host, so loopback is the right interface
      }
      execvp(opt.argv[0], opt.argv.data());
      std::fprintf(stderr, "collrun: cannot run %s: %s\n", opt.argv[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    Rank& rk = ranks[static_cast<size_t>(r)];
    rk.pid = pid;
    rk.running = true;
    rk.spare = spare;
    if (opt.tag_output) {
      close(pipe_fds[1]);
      rk.out_fd = pipe_fds[0];
      coll::net::set_nonblocking(rk.out_fd);
    }
  }

  store_listener.reset();  // rank 0 has it now; a rank 0 that dies must leave no one listening

  using Clock = std::chrono::steady_clock;
  int first_failure = 0;
  int first_failed_rank = -1;
  Clock::time_point failed_at{};
  bool terminated = false, killed = false;
  int running = nprocs;
  int members_running = opt.nranks;

  while (running > 0) {
    // Output, or a 50 ms tick.
    std::vector<pollfd> fds;
    for (auto& rk : ranks)
      if (rk.out_fd >= 0) fds.push_back({rk.out_fd, POLLIN, 0});
    if (fds.empty())
      usleep(50000);
    else
      poll(fds.data(), fds.size(), 50);
    for (int r = 0; r < nprocs; ++r)
      if (ranks[static_cast<size_t>(r)].out_fd >= 0) drain(r, ranks[static_cast<size_t>(r)], false);

    int status = 0;
    pid_t pid;
    while ((pid = exited_child()) > 0) {
      leftovers.remove_by(pid);
      waitpid(pid, &status, 0);
      for (int r = 0; r < nprocs; ++r) {
        Rank& rk = ranks[static_cast<size_t>(r)];
        if (rk.pid != pid || !rk.running) continue;
        rk.running = false;
        --running;
        if (!rk.spare) --members_running;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (rk.spare_ended) code = 0;  // ended by us, unneeded
        if (code != 0 && first_failure == 0) {
          first_failure = code;
          first_failed_rank = r;
          failed_at = Clock::now();
          if (WIFSIGNALED(status))
            std::fprintf(stderr, "collrun: %s %d was killed by signal %d (%s)\n", rk.spare ? "spare" : "rank",
                         rk.spare ? r - opt.nranks : r, WTERMSIG(status), strsignal(WTERMSIG(status)));
          else
            std::fprintf(stderr, "collrun: %s %d exited with status %d\n", rk.spare ? "spare" : "rank",
                         rk.spare ? r - opt.nranks : r, code);
        }
      }
    }

    // The spares left waiting, now or later (one whose growth failed waits again).
    if (members_running == 0 && running > 0) {
      const std::set<int> seated = coll::bootstrap::seated_spares(spares_dir);
      for (int r = opt.nranks; r < nprocs; ++r) {
        Rank& rk = ranks[static_cast<size_t>(r)];
        if (!rk.running || rk.spare_ended || seated.count(r - opt.nranks) > 0) continue;
        kill(-rk.pid, SIGTERM);
        rk.spare_ended = true;
      }
    }
    if (g_signal != 0 && first_failure == 0) {
      first_failure = 128 + g_signal;
      failed_at = Clock::now() - std::chrono::hours(1);  // no grace when the user interrupts
    }
    if (first_failure != 0 && running > 0) {
      double waited = std::chrono::duration<double>(Clock::now() - failed_at).count();
      if (!terminated && waited >= opt.grace_s) {
        if (first_failed_rank >= 0)
          std::fprintf(stderr, "collrun: ending the %d remaining rank(s) after rank %d failed\n", running,
                       first_failed_rank);
        for (auto& rk : ranks)
          if (rk.running) kill(-rk.pid, SIGTERM);
        terminated = true;
      } else if (terminated && !killed && waited >= opt.grace_s + 2.0) {
        for (auto& rk : ranks)
          if (rk.running) kill(-rk.pid, SIGKILL);
        killed = true;
      }
    }
  }
  for (int r = 0; r < nprocs; ++r)
    if (ranks[static_cast<size_t>(r)].out_fd >= 0) drain(r, ranks[static_cast<size_t>(r)], true);
  if (!spares_dir.empty()) std::filesystem::remove_all(spares_dir);
  leftovers.remove_of(secret);
  leftovers.report();
  return first_failure;
}
