#include "bootstrap/launch_env.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

#include <cstdlib>

namespace coll::bootstrap {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int parse_int(const char* name, const char* text) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > (1 << 30))
    fail(Code::kInvalidUsage, name, "='", text, "' is not a non-negative integer");
  return static_cast<int>(v);
}

void set_rank_size(Launch& l, const char* rank_var, const char* size_var) {
  l.rank = parse_int(rank_var, env(rank_var));
  l.nranks = parse_int(size_var, env(size_var));
  if (l.nranks < 1 || l.rank >= l.nranks)
    fail(Code::kInvalidUsage, "launcher variables are inconsistent: ", rank_var, "=", l.rank, " but ", size_var, "=",
         l.nranks, " (rank must be in [0, size))");
}

// Open MPI and Slurm carry no rendezvous of ours: MPI_Bcast it when we can,
// else the user must give COLL_ROOT_ADDR and COLL_JOB_SECRET.
void mpi_or_explicit_root(Launch& l) {
  if (env("COLL_ROOT_ADDR") != nullptr) {
    if (env("COLL_JOB_SECRET") == nullptr)
      fail(Code::kInvalidUsage, "COLL_ROOT_ADDR is set but COLL_JOB_SECRET is not (32 hex digits)");
    l.root_addr = env("COLL_ROOT_ADDR");
    l.secret = auth::secret_from_hex(env("COLL_JOB_SECRET"), "COLL_JOB_SECRET");
    return;
  }
#ifdef COLL_WITH_MPI
  l.use_mpi = true;
#else
  fail(Code::kInvalidUsage, "launched by ", l.launcher,
       " but coll was built without MPI, so the unique id cannot be broadcast: rebuild with "
       "COLL_WITH_MPI=ON, or set COLL_ROOT_ADDR=host:port and COLL_JOB_SECRET on every rank");
#endif
}

}  // namespace

Launch discover_launch() {
  Launch l;
  if (env("COLL_RANK") != nullptr) {
    l.launcher = "collrun";
    set_rank_size(l, "COLL_RANK", "COLL_NRANKS");
    if (env("COLL_ROOT_ADDR") == nullptr || env("COLL_JOB_SECRET") == nullptr)
      fail(Code::kInvalidUsage, "COLL_RANK is set but COLL_ROOT_ADDR or COLL_JOB_SECRET is not");
    l.root_addr = env("COLL_ROOT_ADDR");
    l.secret = auth::secret_from_hex(env("COLL_JOB_SECRET"), "COLL_JOB_SECRET");
  } else if (env("RANK") != nullptr && env("WORLD_SIZE") != nullptr && env("MASTER_ADDR") != nullptr &&
             env("MASTER_PORT") != nullptr) {
    l.launcher = "torchrun";
    set_rank_size(l, "RANK", "WORLD_SIZE");
    std::string host = env("MASTER_ADDR");
    // An IPv6 literal needs brackets in host:port form.
    if (host.find(':') != std::string::npos && host[0] != '[') host = "[" + host + "]";
    l.root_addr = host + ":" + env("MASTER_PORT");
    if (env("COLL_JOB_SECRET") != nullptr) {
      l.secret = auth::secret_from_hex(env("COLL_JOB_SECRET"), "COLL_JOB_SECRET");
    } else {
      // torchrun carries no secret; derive one all ranks agree on, and say it is weak.
      const char* run_id = env("TORCHELASTIC_RUN_ID");
      l.secret = auth::secret_from_text(l.root_addr + "/" + (run_id ? run_id : ""));
      if (l.rank == 0)
        log::warn(log::kLaunch,
                  "torchrun variables carry no job secret: using one derived from "
                  "MASTER_ADDR:MASTER_PORT; set COLL_JOB_SECRET (32 hex digits) on every rank "
                  "to keep strangers out");
    }
  } else if (env("OMPI_COMM_WORLD_RANK") != nullptr && env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    l.launcher = "Open MPI";
    set_rank_size(l, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    mpi_or_explicit_root(l);
  } else if (env("SLURM_PROCID") != nullptr && env("SLURM_NTASKS") != nullptr) {
    l.launcher = "Slurm";
    set_rank_size(l, "SLURM_PROCID", "SLURM_NTASKS");
    mpi_or_explicit_root(l);
  } else {
    fail(Code::kInvalidUsage,
         "no launcher found in the environment: looked for COLL_RANK/COLL_NRANKS (collrun), "
         "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun), OMPI_COMM_WORLD_RANK/SIZE (mpirun), "
         "SLURM_PROCID/SLURM_NTASKS (srun)");
  }
  if (env("COLL_ROOT_LISTEN_FD") != nullptr) l.listen_fd = parse_int("COLL_ROOT_LISTEN_FD", env("COLL_ROOT_LISTEN_FD"));
  log::info(log::kLaunch, "launched by ", l.launcher, ": rank ", l.rank, " of ", l.nranks,
            l.use_mpi ? ", unique id by MPI_Bcast" : str_cat(", store at ", l.root_addr));
  return l;
}

}  // namespace coll::bootstrap
