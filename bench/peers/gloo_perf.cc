// gloo_perf — the coll_perf table for Gloo's allreduce and broadcast, with
// the same flags, the same inputs and the same exact check, so that the
// tables compare row by row.
//
//   collrun -n 2 gloo_perf -b 8 -e 64M -f 4 -a ring_chunked
//   mpirun -np 2 gloo_perf -b 8 -e 64M -f 4
//
// -a, for allreduce:
//   ring, ring_chunked, halving_doubling  the classic algorithm objects
//       (gloo/allreduce_ring.h ...): built once per buffer and count, then
//       run() again and again, as Gloo users do;
//   fn_ring, bcube  the function API (gloo/allreduce.h), what PyTorch's
//       ProcessGroupGloo calls; its options, built once per case, are reused.
// For broadcast: one_to_all (gloo/broadcast_one_to_all.h), the only one.
// The default for allreduce is bcube, the fastest in every quiet sweep on
// the 2-core development machine (fn_ring next, ring_chunked last).
//
// The classic algorithms reduce in place: out of place, the timed call
// copies send to recv and reduces recv, which is what a Gloo user does.
// The function API takes an input and an output and needs no copy.
//
// Rank and size come from collrun (COLL_RANK, COLL_NRANKS) or Open MPI
// (OMPI_COMM_WORLD_*). Ranks meet through a gloo::rendezvous::FileStore in
// the directory GLOO_PERF_STORE, else /tmp/gloo_perf.<hash of the job's id>,
// which every rank derives alone; its files are removed once connected. The
// transport is Gloo's TCP on 127.0.0.1 (GLOO_SOCKET_IFNAME names another
// interface). Gloo has no bfloat16 and no avg: those are refused.
#include "perf_common.h"
#include "perf_ops.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

namespace {

// Calls visit(T{}) with the Gloo element type of t.
template <typename Visit>
auto with_type(coll_datatype_t t, Visit&& visit) {
  switch (t) {
    case COLL_INT8:
      return visit(int8_t{});
    case COLL_UINT8:
      return visit(uint8_t{});
    case COLL_INT32:
      return visit(int32_t{});
    case COLL_UINT32:
      return visit(uint32_t{});
    case COLL_INT64:
      return visit(int64_t{});
    case COLL_UINT64:
      return visit(uint64_t{});
    case COLL_FLOAT16:
      return visit(gloo::float16{});
    case COLL_FLOAT32:
      return visit(float{});
    case COLL_FLOAT64:
      return visit(double{});
    default:
      perf::die(std::string(coll::reduce::datatype_name(t)) + " has no Gloo type");
  }
}

// Gloo's reduction for op: the classic API's object and the function API's function.
template <typename T>
std::pair<const gloo::ReductionFunction<T>*, gloo::AllreduceOptions::Func> gloo_op(coll_redop_t op) {
  using R = gloo::ReductionFunction<T>;
  using Fn = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case COLL_SUM:
      return {R::sum, static_cast<Fn>(&gloo::sum<T>)};
    case COLL_PROD:
      return {R::product, static_cast<Fn>(&gloo::product<T>)};
    case COLL_MIN:
      return {R::min, static_cast<Fn>(&gloo::min<T>)};
    case COLL_MAX:
      return {R::max, static_cast<Fn>(&gloo::max<T>)};
    default:
      perf::die("Gloo has no 'avg' reduction");
  }
}

// One rank's place in the job, and where the ranks meet.
struct Job {
  int rank = 0, size = 1;
  std::string store;
  bool own_store = false;  // derived here, so removed here
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}
std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

Job job_from_env() {
  Job j;
  std::string id;  // the same on every rank of this job, different across jobs
  if (std::getenv("COLL_RANK") != nullptr) {
    j.rank = env_int("COLL_RANK", 0);
    j.size = env_int("COLL_NRANKS", 1);
    id = env_str("COLL_ROOT_ADDR") + env_str("COLL_JOB_SECRET");  // ports are reused; the secret is not
  } else if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    j.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    j.size = env_int("OMPI_COMM_WORLD_SIZE", 1);
    id = env_str("OMPI_MCA_orte_hnp_uri") + env_str("PMIX_NAMESPACE") + env_str("OMPI_MCA_ess_base_jobid");
  }
  if (id.empty()) id = "pid" + std::to_string(getpid());  // alone
  if (std::getenv("GLOO_PERF_STORE") != nullptr) {
    j.store = env_str("GLOO_PERF_STORE");
  } else {
    uint64_t h = 1469598103934665603ull;  // FNV-1a: the same in every process, unlike a seeded hash
    for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
    char name[64];
    std::snprintf(name, sizeof(name), "/tmp/gloo_perf.%016llx", static_cast<unsigned long long>(h));
    j.store = name;
    j.own_store = true;
  }
  if (j.size < 1 || j.rank < 0 || j.rank >= j.size)
    perf::die("rank " + std::to_string(j.rank) + " of " + std::to_string(j.size) + " from the launcher");
  return j;
}

// Tags keep the function API's operations apart: each has its own slots.
constexpr uint32_t kBarrierTag = 1, kSumTag = 2, kMaxTag = 3, kFirstCaseTag = 16;

struct Gloo {
  using Call = std::function<void()>;
  using Key = std::tuple<char*, char*, size_t, bool>;  // send, recv, count, in place

  std::shared_ptr<gloo::Context> ctx;
  std::string collective, algorithm;
  std::map<Key, Call> calls;  // this size's prepared calls (out of place, in place)
  uint32_t next_tag = kFirstCaseTag;
  // The sweep's own barrier and reductions use the function API: a classic
  // algorithm's buffers set SO_SNDBUF to their size, and tiny ones here would
  // cap the sockets of fn_ring and bcube, which never set it.
  uint64_t u64 = 0;
  double f64 = 0;
  gloo::BarrierOptions barrier_opts;
  gloo::AllreduceOptions sum_opts, max_opts;

  Gloo(std::shared_ptr<gloo::Context> c, std::string coll, std::string algo)
      : ctx(c), collective(std::move(coll)), algorithm(std::move(algo)), barrier_opts(c), sum_opts(c), max_opts(c) {
    barrier_opts.setTag(kBarrierTag);
    sum_opts.setOutput(&u64, 1);
    sum_opts.setReduceFunction(gloo_op<uint64_t>(COLL_SUM).second);
    sum_opts.setTag(kSumTag);
    max_opts.setOutput(&f64, 1);
    max_opts.setReduceFunction(gloo_op<double>(COLL_MAX).second);
    max_opts.setTag(kMaxTag);
  }

  template <typename T>
  Call prepare_allreduce(const perf::Case& c) {
    T* out = reinterpret_cast<T*>(c.in_place ? c.send : c.recv);
    T* in = reinterpret_cast<T*>(c.send);
    if (algorithm == "fn_ring" || algorithm == "bcube") {
      auto opts = std::make_shared<gloo::AllreduceOptions>(ctx);
      opts->setAlgorithm(algorithm == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                              : gloo::AllreduceOptions::Algorithm::RING);
      if (!c.in_place) opts->setInput(in, c.count);
      opts->setOutput(out, c.count);
      opts->setReduceFunction(gloo_op<T>(c.op).second);
      opts->setTag(next_tag++);
      return [opts] { gloo::allreduce(*opts); };
    }
    if (c.count > static_cast<size_t>(INT32_MAX)) perf::die("the classic Gloo algorithms count in int");
    const int n = static_cast<int>(c.count);
    const auto* fn = gloo_op<T>(c.op).first;
    std::shared_ptr<gloo::Algorithm> algo;
    if (algorithm == "ring")
      algo = std::make_shared<gloo::AllreduceRing<T>>(ctx, std::vector<T*>{out}, n, fn);
    else if (algorithm == "ring_chunked")
      algo = std::make_shared<gloo::AllreduceRingChunked<T>>(ctx, std::vector<T*>{out}, n, fn);
    else
      algo = std::make_shared<gloo::AllreduceHalvingDoubling<T>>(ctx, std::vector<T*>{out}, n, fn);
    if (c.in_place) return [algo] { algo->run(); };
    char* from = c.send;  // bytes: gloo::float16 has no trivial copy
    char* to = c.recv;
    const size_t bytes = c.count * sizeof(T);
    return [algo, from, to, bytes] {
      std::memcpy(to, from, bytes);
      algo->run();
    };
  }

  template <typename T>
  Call prepare_broadcast(const perf::Case& c) {
    T* buf = reinterpret_cast<T*>(c.recv);
    auto algo = std::make_shared<gloo::BroadcastOneToAll<T>>(ctx, std::vector<T*>{buf}, c.count, c.root);
    return [algo] { algo->run(); };
  }

  void run(const perf::Case& c) {
    Key key{c.send, c.recv, c.count, c.in_place};
    auto it = calls.find(key);
    if (it == calls.end()) {
      // A new size: the previous size's algorithms (and their inboxes) go.
      // Every rank does this at the same point of the sweep.
      if (!calls.empty() && std::get<2>(calls.begin()->first) != c.count) calls.clear();
      Call call = with_type(c.t, [&](auto tag) {
        using T = decltype(tag);
        return collective == "allreduce" ? prepare_allreduce<T>(c) : prepare_broadcast<T>(c);
      });
      it = calls.emplace(key, std::move(call)).first;
    }
    it->second();
  }
  void barrier() { gloo::barrier(barrier_opts); }
  void sum(uint64_t& v) {
    u64 = v;
    gloo::allreduce(sum_opts);
    v = u64;
  }
  void max(double& v) {
    f64 = v;
    gloo::allreduce(max_opts);
    v = f64;
  }
};

// Connects every rank to every other through the file store, then removes
// the store's files: from here on the ranks talk over TCP only.
std::shared_ptr<gloo::Context> connect(const Job& job) {
  if (::mkdir(job.store.c_str(), 0700) != 0 && errno != EEXIST)
    perf::die("cannot create the rendezvous directory " + job.store + ": " + std::strerror(errno));
  gloo::transport::tcp::attr attr;
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname != nullptr)
    attr.iface = ifname;
  else
    attr.hostname = "127.0.0.1";  // all ranks on this host
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(job.rank, job.size);
  ctx->setTimeout(std::chrono::seconds(300));  // a 2-core machine is slow for 64 MiB at 8 ranks
  gloo::rendezvous::FileStore store(job.store);
  ctx->connectFullMesh(store, device);
  gloo::BarrierOptions barrier(ctx);
  barrier.setTag(kBarrierTag);
  gloo::barrier(barrier);  // every rank has read every key
  for (const std::string& path : store.getAllKeyFilePaths()) std::remove(path.c_str());
  gloo::barrier(barrier);  // and removed its own
  if (job.rank == 0 && job.own_store) ::rmdir(job.store.c_str());
  return ctx;
}

}  // namespace

int main(int argc, char** argv) {
  perf::program_name() = "gloo_perf";
  perf::Options o = perf::parse(argc, argv);
  const perf::Ops& ops = *perf::find(o.collective);
  std::string algorithm = o.algorithm;
  if (o.collective == "allreduce") {
    if (algorithm.empty()) algorithm = "bcube";
    if (algorithm != "ring" && algorithm != "ring_chunked" && algorithm != "halving_doubling" &&
        algorithm != "fn_ring" && algorithm != "bcube")
      perf::die("unknown Gloo allreduce algorithm '" + algorithm +
                "' (ring, ring_chunked, halving_doubling, fn_ring, bcube)");
    with_type(o.dtype, [&](auto tag) { return gloo_op<decltype(tag)>(o.op).first != nullptr; });
  } else if (o.collective == "broadcast") {
    if (algorithm.empty()) algorithm = "one_to_all";
    if (algorithm != "one_to_all") perf::die("unknown Gloo broadcast algorithm '" + algorithm + "' (one_to_all)");
    with_type(o.dtype, [](auto) { return 0; });
  } else {
    perf::die(o.collective + " is not measured for Gloo (allreduce, broadcast)");
  }
  const Job job = job_from_env();
  if (ops.rooted && (o.root < 0 || o.root >= job.size)) perf::die("-r " + std::to_string(o.root) + " is not a rank");
  try {
    Gloo lib(connect(job), o.collective, algorithm);
    size_t wrong = perf::sweep(o, ops, job.rank, job.size, nullptr, lib, algorithm.c_str());
    // No rank leaves while another still sends. A peer that leaves this
    // barrier first closes its sockets, which we may see as an error:
    // harmless, every result is in.
    try {
      lib.barrier();
    } catch (const gloo::IoException&) {
    }
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_perf: rank %d: %s\n", job.rank, e.what());
    return 1;
  }
}
