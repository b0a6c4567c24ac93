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
// SIGKILL 2 s later), and collrun returns 1. Interrupted (SIGINT, SIGTERM),
// it ends the ranks at once, the same way (a second signal: SIGKILL at
// once), and returns 128+signal.
#include "job.h"
#include "options.h"
#include "supervise.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace {

// What collrun removes when it returns, however the job went.
int finish(int status, const collrun::Job& job, collrun::Leftovers& leftovers) {
  if (!job.spares_dir.empty()) std::filesystem::remove_all(job.spares_dir);
  leftovers.remove_of(job.secret);
  leftovers.report();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // Started without stdin, stdout or stderr, collrun would hand those numbers
  // out (the store's socket, a rank's pipe), and dup2 onto a rank's stdio
  // would then replace them: /dev/null holds the places.
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0) return 2;
  const collrun::Options opt = collrun::parse(argc, argv);
  collrun::Job job;
  int exit_code = 0;
  if (!collrun::plan_job(opt, job, exit_code)) return exit_code;
  collrun::catch_signals();

  const int nprocs = opt.nranks + opt.spares;
  std::vector<collrun::Rank> ranks(static_cast<size_t>(nprocs));
  collrun::Leftovers leftovers;
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
      collrun::end_started(ranks, leftovers);
      return finish(1, job, leftovers);
    }
    if (pid == 0) collrun::run_rank(opt, job, r, pipe_fds[1]);  // the read end closes at exec
    setpgid(pid, pid);
    collrun::Rank& rk = ranks[static_cast<size_t>(r)];
    rk.pid = pid;
    rk.running = true;
    rk.spare = spare;
    if (opt.tag_output) {
      close(pipe_fds[1]);
      rk.out_fd = pipe_fds[0];
      coll::net::set_nonblocking(rk.out_fd);
    }
  }
  job.store_listener.reset();  // rank 0 has it now; a rank 0 that dies must leave no one listening
  return finish(collrun::supervise(opt, ranks, job.spares_dir, leftovers), job, leftovers);
}
