#include "base/config.h"

#include "base/error.h"
#include "base/log.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

extern char** environ;

namespace coll::config {

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"COLL_DEBUG", "string", "WARN", "", "log level: NONE, WARN, INFO, TRACE"},
      {"COLL_DEBUG_SUBSYS", "string", "ALL", "", "subsystems to log: INIT,BOOT,NET,COLL,LAUNCH; a leading ^ excludes"},
      {"COLL_TIMEOUT_MS", "int", "600000", "ms", "longest wait for a peer in any blocking call before COLL_TIMEOUT"},
      {"COLL_INIT_TIMEOUT_MS", "int", "", "ms",
       "longest wait for every rank to join in coll_comm_init_rank* (a large job's ranks start over minutes); "
       "unset: the larger of the communicator's timeout and 600000"},
      {"COLL_FLIGHT_RECORDER_DIR", "string", "", "",
       "where each rank writes its flight recorder (its last operations) when an operation fails, on "
       "coll_comm_abort and on SIGUSR1; tools/colldiag reads them"},
      {"COLL_SOCKET_IFNAME", "string", "", "",
       "network interfaces to use, by prefix (eth,ib); ^ excludes (^docker,lo); =name is exact"},
      {"COLL_ALGO", "string", "", "",
       "algorithm override: one name for all collectives ('ring') or 'allreduce:tree;broadcast:ring'"},
      {"COLL_TUNING_FILE", "string", "", "",
       "alpha-beta-gamma parameters per link class, named as its transport ('tcp.alpha_us = 25' lines), for the "
       "selector"},
      {"COLL_CHUNK_BYTES", "int", "", "bytes",
       "pipelining chunk: transfers and reductions overlap at this granularity; unset: the link class's "
       "(128K shm, 512K tcp; COLL_TUNING_FILE chunk_bytes)"},
      {"COLL_STAGING_CHUNK_BYTES", "int", "4M", "bytes",
       "device buffers over a transport that cannot read them (shm, tcp): each chunk of this size (at most; "
       "one block per rank where the buffer has one) is copied to pinned host memory, moved, and copied back, "
       "the copies of one chunk overlapping the transfer of the next (set it alike on every rank)"},
      {"COLL_STAGE_HOST_BUFFERS", "bool", "0", "",
       "1 runs host buffers through the device buffers' staging pipeline too (with memcpy for the copies): "
       "tests of that pipeline on machines without a GPU"},
      {"COLL_TRANSPORTS", "string", "", "",
       "transports in order of preference; each peer gets the first that reaches it (shm: same node); unset: every "
       "one built in, shm,ib,tcp, where ib is left out when it cannot run here (no verbs device)"},
      {"COLL_NVLINK_EMULATE", "bool", "0", "",
       "1: the nvlink transport runs on host memory, with process_vm_readv/writev for the GPU's copy engine, "
       "so that its protocol is tested on machines without a GPU (tests only)"},
      {"COLL_NVLINK_KERNEL_BYTES", "int", "0", "bytes",
       "the nvlink transport copies messages of up to this size with a kernel on the GPU's cores, which reads or "
       "writes the peer's memory, and larger ones with the copy engine (0: always the copy engine)"},
      {"COLL_DEVICE_HOST_SYNC", "int", "-1", "",
       "1: a call on device buffers returns once its operation is done; 0: it returns at once, holding the caller's "
       "stream until then (every kernel launched after it must be loaded already: CUDA_MODULE_LOADING=EAGER); "
       "-1 (auto): 0 only under CUDA_MODULE_LOADING=EAGER with CUDA_DEVICE_MAX_CONNECTIONS unset or 8 and up"},
      {"COLL_SHM_SINGLE_COPY", "bool", "0", "",
       "shm: 1 lets receivers read messages of 256 KiB and more straight from the sender (process_vm_readv); "
       "off by default, as it measured 2x slower than the slots here"},
      {"COLL_SHM_MAPPED", "bool", "0", "",
       "shm, for coll_mem_alloc buffers (set it alike on every rank): 1 turns on the direct-access allreduce "
       "and sends messages of 64 KiB and more from such buffers as references that the receiver maps "
       "(pidfd_getfd) and reads in place (docs/PERFORMANCE.md)"},
      {"COLL_SHM_DIRECT_BYTES", "int", "8K", "bytes",
       "with COLL_SHM_MAPPED=1 on one node: an allreduce of at least this size whose buffers on every rank "
       "come from coll_mem_alloc runs the direct-access allreduce (each rank reduces its slice from every "
       "input into every output); unless COLL_ALGO names an allreduce algorithm"},
      {"COLL_SHM_STAGED", "bool", "1", "",
       "on one node, 1: large allreduces on private buffers may run the direct-access allreduce through each "
       "rank's staging, which the others map (set it alike on every rank); 0: never, and with "
       "COLL_SHM_MAPPED=0 no rank probes whether it can map its peers' memory"},
      {"COLL_SHM_STAGED_BYTES", "int", "1M", "bytes",
       "with COLL_SHM_STAGED=1 on one node: an allreduce of at least this size whose buffers are private runs "
       "the direct-access allreduce through each rank's staging, unless COLL_ALGO names an allreduce "
       "algorithm (set it alike on every rank)"},
      {"COLL_SHM_ONESHOT_BYTES", "int", "4072", "bytes",
       "on one node: an allreduce of at most this size (4072 bytes at most: the board) runs one-shot, each "
       "rank reading every rank's input from its board, unless COLL_ALGO names an allreduce algorithm (set it alike "
       "on every rank); 0: never"},
      {"COLL_SHM_STREAM_BYTES", "int", "1M", "bytes",
       "the registered direct-access allreduce writes with non-temporal stores (past the caches) from this size"},
      {"COLL_SHM_STAGED_STREAM_BYTES", "int", "4M", "bytes",
       "the staged direct-access allreduce writes with non-temporal stores (past the caches) from this size; in "
       "place, as COLL_SHM_STAGED_STREAM_IN_PLACE says"},
      {"COLL_SHM_STAGED_STREAM_IN_PLACE", "string", "auto", "",
       "in place, the staged direct-access allreduce streams its results (from COLL_SHM_STAGED_STREAM_BYTES) "
       "where auto: a core's L2 cannot keep what the call read a window before (docs/PERFORMANCE.md); 1: always; "
       "0: never"},
      {"COLL_TCP_SILENCE_MS", "int", "20000", "ms",
       "tcp: a peer whose kernel acknowledges none of the data in flight to it for this long is gone (its "
       "node is down or cut off): COLL_REMOTE_ERROR without waiting for COLL_TIMEOUT_MS; 0: off"},
      {"COLL_IB_HCA", "string", "", "",
       "ib: the verbs devices and ports to use, in NCCL's syntax: mlx5_0:1,mlx5_1 (a name is a prefix unless the "
       "list starts with =; ^ excludes the listed ones); unset: every active port"},
      {"COLL_IB_QPS_PER_CONN", "int", "1", "",
       "ib: queue pairs per connection; messages of 128 KiB and more are split across them in 128-byte-aligned "
       "pieces"},
      {"COLL_IB_TIMEOUT", "int", "20", "",
       "ib: the queue pair's local ACK timeout exponent: each retry waits 4.096 us * 2^value (20: 4.3 s); with "
       "COLL_IB_RETRY_CNT a dead peer is found after about (retries + 1) such waits"},
      {"COLL_IB_RETRY_CNT", "int", "7", "",
       "ib: how often the queue pair retries a send that is not acknowledged (0-7)"},
      {"COLL_IB_GID_INDEX", "int", "-1", "",
       "roce: the GID table entry to use; unset (-1): chosen automatically (RoCE v2, COLL_IB_ADDR_FAMILY, "
       "COLL_IB_ADDR_RANGE, never link-local)"},
      {"COLL_IB_ADDR_FAMILY", "string", "AF_INET", "",
       "roce: the address family of the GID to choose: AF_INET (IPv4-mapped entries) or AF_INET6"},
      {"COLL_IB_ADDR_RANGE", "string", "", "", "roce: choose a GID inside this CIDR range only (e.g. 10.1.0.0/16)"},
      {"COLL_IB_TC", "int", "0", "", "roce: the traffic class (DSCP << 2) of the packets"},
      {"COLL_IB_SL", "int", "0", "", "ib and roce: the service level of the packets"},
      {"COLL_REDUCE_ISA", "string", "", "",
       "reduction kernels: portable, avx2 or avx512; unset picks the widest this CPU supports"},
      {"COLL_HOSTID", "string", "", "", "overrides this node's identity (emulated multi-node)"},
      {"COLL_NETNS_NODES", "string", "", "",
       "set by scripts/emulate-cluster.sh: the emulated nodes (netns:ip ...) that collrun --nodes places ranks on"},
      {"COLL_BIND", "bool", "1", "",
       "1: each rank's thread is pinned to its NUMA node's CPUs (its GPU's, or the node's NUMA nodes shared out), "
       "within what the launcher allowed; 0: left as launched"},
      {"COLL_TOPO_AWARE", "bool", "1", "",
       "1: algorithms see the nodes (rings and trees keep a node's ranks together, halving-doubling pairs "
       "them first, the hierarchical allreduce is possible); 0: one flat set of ranks in launcher order"},
      {"COLL_TOPO_FILE", "string", "", "",
       "the node's topology from a file instead of hwloc: an hwloc XML export or an NCCL topology file"},
      {"COLL_TOPO_DUMP_FILE", "string", "", "", "writes the topology coll found, in NCCL's topology format"},
      {"COLL_RANK", "int", "", "", "set by collrun: this process's rank"},
      {"COLL_NRANKS", "int", "", "", "set by collrun: number of ranks"},
      {"COLL_LOCAL_RANK", "int", "", "", "set by collrun: rank among the ranks on this node"},
      {"COLL_LOCAL_SIZE", "int", "", "", "set by collrun: number of ranks on this node"},
      {"COLL_ROOT_ADDR", "string", "", "", "set by collrun: host:port of rank 0's bootstrap store"},
      {"COLL_ROOT_LISTEN_FD", "int", "-1", "",
       "set by collrun in rank 0: the store's listening socket, already bound, inherited (no port race)"},
      {"COLL_JOB_SECRET", "string", "", "", "32 hex digits shared by all ranks; every connection proves it knows them"},
      {"COLL_SPARES_DIR", "string", "", "",
       "set by collrun --spares (or by hand, on a shared filesystem): where a growing communicator's rank 0 offers "
       "seats to the spares"},
      {"COLL_SPARE", "int", "", "",
       "set by collrun --spares on the spares: coll_comm_init_from_env waits for a communicator to grow and joins it, "
       "within the members' COLL_TIMEOUT_MS (the offer carries it), not COLL_INIT_TIMEOUT_MS; a spare whose growth "
       "fails waits for the next"},
      {"COLL_LIBRARY", "string", "", "",
       "read by the Python package (import coll): the path of the libcoll it loads (docs/PYTHON.md)"},
      {"COLL_INCLUDE", "string", "", "",
       "read by coll.torch: the folder holding coll/coll.h that its extension is compiled against"},
      {"COLL_TORCH_VERBOSE", "bool", "0", "",
       "read by coll.torch: 1 shows the compiler's output as its extension builds"},
      {"COLL_BUILD_DIR", "string", "", "", "read by the Python tests: the build folder whose tools they run"},
  };
  return table;
}

namespace {

const Setting& find(const char* name) {
  for (const auto& s : settings())
    if (std::strcmp(s.name, name) == 0) return s;
  fail(Code::kInternal, "setting ", name, " is not in the registry (src/base/config.cc)");
}

}  // namespace

std::string get_string(const char* name) {
  const Setting& s = find(name);
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(s.default_value);
}

int64_t get_int(const char* name) {
  std::string text = get_string(name);
  if (text.empty()) fail(Code::kInvalidUsage, name, " is not set");
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0) fail(Code::kInvalidArgument, name, "='", text, "' is not an integer");
  std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    value <<= 10;
  else if (suffix == "M" || suffix == "m")
    value <<= 20;
  else if (suffix == "G" || suffix == "g")
    value <<= 30;
  else if (!suffix.empty())
    fail(Code::kInvalidArgument, name, "='", text, "' has an unknown suffix '", suffix, "' (use K, M or G)");
  return value;
}

bool get_bool(const char* name) {
  std::string text = get_string(name);
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off" || text.empty()) return false;
  fail(Code::kInvalidArgument, name, "='", text, "' is not a boolean (0 or 1)");
}

void report_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, "COLL_", 5) != 0) continue;
      std::string name(*e, std::strchr(*e, '=') ? std::strchr(*e, '=') - *e : std::strlen(*e));
      bool known = false;
      for (const auto& s : settings()) known = known || name == s.name;
      if (!known) log::warn(log::kInit, "unknown variable ", name, " is ignored (misspelt?)");
    }
    for (const auto& s : settings()) {
      const char* v = std::getenv(s.name);
      bool from_env = v != nullptr && *v != '\0';
      if (std::strcmp(s.name, "COLL_JOB_SECRET") == 0 && from_env) v = "(hidden)";
      log::info(log::kInit, s.name, "=", from_env ? v : s.default_value, from_env ? " (env)" : " (default)");
    }
  });
}

}  // namespace coll::config
