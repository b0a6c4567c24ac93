// The direct-access allreduce: ranks of one node whose buffers all come from
// coll_mem_alloc read each other's inputs and write each other's outputs;
// ranks whose buffers are private do the same through a staging area of
// their own that the others read (the staged form, below).
//
// It is the two-shot allreduce of NVLink custom all-reduces (reduce-scatter
// and all-gather through peer memory) with the two shots fused: rank r owns
// slice r of the vector; it reads slice r of every rank's input, reduces
// it, and writes the result into slice r of every rank's output with
// non-temporal stores. Per rank that is S bytes read and S written, no
// read for ownership: 4S of memory traffic on 2 ranks, the bound of
// docs/PERFORMANCE.md, where the ring moves about 6S.
//
//   1. Offer: every rank sends every peer the handles to its input and output
//      (transport::MemoryHandle), whether it can access every peer, and what
//      it called (signature and count), and its staging (below). All ranks
//      learn the same offers, so all take the same branch: if one rank's
//      buffers are not registered, every rank takes the staged form if
//      every rank offered its staging, else runs the plan; if ranks called
//      different operations, every rank fails with COLL_INVALID_USAGE (the
//      plan's messages would have caught it; here nothing else would).
//   2. Reduce its slice from all inputs into all outputs.
//   3. A barrier: no rank returns (and lets its caller touch its buffers)
//      while another still reads its input or writes its output.
//
// A peer that dies in step 2 fails the barrier like any peer that dies in
// an operation; its mapped memory stays valid (region.h). A rank that fails
// (a timeout, an abort) returns while its peers may still be writing its
// output: after a failure its buffers are not to be trusted.
//
// Cost: 2 rounds of alpha for the offers and ceil(log2 n) for the barrier;
// per rank S bytes read and S written, and (n-1) S/n reduced.
//
// The staged form, for private buffers: no rank can reach another's buffers,
// so each passes through its own staging (memory of coll_mem_alloc's kind,
// which the peers map), window by window:
//   1. copy the other ranks' slices of its input into its staging;
//   2. barrier; reduce its slice from its own input and every peer's
//      staging into its output, and write the result back over what it
//      read: into its slice of every peer's staging;
//   3. barrier; copy every other slice, now reduced, from its own staging
//      into its output.
// So a slice's lines cross between cores twice, there and back, and every
// write finds its line in the writer's own cache: the reducer writes lines
// it has just read, and a rank rewrites, in the next window, lines it read
// in step 3. (With the results in a second half of the owner's staging,
// every write went to lines the other core had read last, which measured
// slower: docs/PERFORMANCE.md, "Measurements behind the code".)
// The barriers also keep the staging safe to reuse: a rank rewrites its
// staging only after the barrier that follows everyone's step 2, and it is
// the only reader in step 3; as no peer ever touches a rank's own buffers,
// no barrier is needed at the end. Every rank's staging stays in the
// last-level cache, so memory sees what the registered form costs, the
// input read and the output written (with non-temporal stores from
// COLL_SHM_STAGED_STREAM_BYTES); the copies through the staging are cache
// to cache.
// A ring moves the same bytes through its slots, but chunk by chunk, with a
// handshake per slot (docs/PERFORMANCE.md).
#include "algorithms/partition.h"
#include "base/config.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/fastpath/fastpath.h"
#include "core/op_signature.h"
#include "reduce/cpu/stream.h"
#include "reduce/reduce.h"
#include "topology/load.h"
#include "transport/registry.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace coll {
namespace {

// What a rank tells every peer; the same size on every rank.
struct Offer {
  uint32_t direct = 0;     // both buffers registered, large enough, and every peer accessible
  uint32_t staged = 0;     // its staging ready, large enough, and every peer accessible
  uint64_t signature = 0;  // OpSignature::bits() of its allreduce
  uint64_t count = 0;      // exactly (the signature keeps only its low bits)
  transport::MemoryHandle send, recv, staging;
};

// The staging: one window (see above). 2 MiB keeps 8 ranks' stagings well
// inside a 48 MiB last-level cache, and the barriers per window cost
// microseconds against its milliseconds. It is written with ordinary
// stores, to stay in the cache (docs/PERFORMANCE.md, "Measurements behind
// the code", for both choices).
constexpr size_t kWindowBytes = 2 << 20;
constexpr size_t kStagingBytes = kWindowBytes;

using Access = transport::PeerAccess::Access;

// A block that stays in L1 while all n inputs are reduced into it; a whole
// number of elements of every datatype.
constexpr size_t kBlockBytes = 8 << 10;
// What the staged form's step 3 copies out of the staging before it copies
// the next window's input into the same lines (see staged_access).
constexpr size_t kPieceBytes = 16 << 10;

void copy(char* dst, const char* src, size_t bytes, bool stream) {
  if (stream)
    reduce::stream_copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

// Where a reduced slice goes: `at` (indexed like the inputs), written with
// non-temporal stores when `stream`. In place, the lines were just read into
// the cache, where an ordinary store finds them without a read for ownership.
struct Output {
  char* at;
  bool stream;
};

// out.at[i] = in[0][i] (op) in[1][i] (op) ... for every output, i in `slice`
// (elements); reduced in rank order, so every rank's result is the same bits.
void reduce_slice(const Job& job, const std::vector<const char*>& in, const std::vector<Output>& out,
                  algo::Span slice) {
  const size_t es = reduce::datatype_size(job.dtype), per_block = kBlockBytes / es;
  const int n = static_cast<int>(in.size());
  alignas(64) static thread_local char block[kBlockBytes];
  for (size_t done = 0; done < slice.count; done += per_block) {
    const size_t count = std::min(per_block, slice.count - done), at = (slice.offset + done) * es;
    reduce::reduce(job.dtype, job.op, block, in[0] + at, in[1] + at, count);
    for (int k = 2; k < n; ++k) reduce::reduce(job.dtype, job.op, block, block, in[static_cast<size_t>(k)] + at, count);
    if (job.op == COLL_AVG) reduce::divide(job.dtype, block, count, n);
    for (const Output& o : out) copy(o.at + at, block, count * es, o.stream);
  }
  if (std::any_of(out.begin(), out.end(), [](const Output& o) { return o.stream; })) reduce::stream_fence();
}

class PeerAccessAllreduce final : public FastPath {
 public:
  // From direct_bytes with every rank's buffers registered, from
  // staged_bytes through the stagings (SIZE_MAX: never); outputs streamed
  // from stream_bytes and staged_stream_bytes.
  // `in_place_streams`: whether the staged form streams in place too
  // (streams_in_place).
  PeerAccessAllreduce(FastPathHost& host, size_t direct_bytes, size_t staged_bytes, size_t stream_bytes,
                      size_t staged_stream_bytes, bool in_place_streams);
  ~PeerAccessAllreduce() override;

  const std::string& name() const override {
    static const std::string name = "peer_access";
    return name;
  }
  bool needs_plan() const override { return true; }
  bool takes(const OpRequest& op) const override {
    return op.count * reduce::datatype_size(op.dtype) >= std::min(direct_bytes_, staged_bytes_);
  }
  bool run(const Job& job, const Deadline& deadline, OpRecord& record) override;

 private:
  void staged(const Job& job, const std::vector<char*>& staging, const Deadline& deadline, OpRecord& record);
  bool staging_ready();

  FastPathHost& host_;
  transport::PeerAccess& access_;
  size_t direct_bytes_, staged_bytes_, stream_bytes_, staged_stream_bytes_;
  bool in_place_streams_;
  char* staging_ = nullptr;                    // allocated on first use (coll_mem_alloc's kind of memory)
  bool staging_failed_ = false;                // once: said so in the log
  std::vector<Job> offers_job_, barrier_job_;  // its own operations, compiled at init
};

// The offers' alltoall and the barrier are compiled once, here, on the
// thread that creates the communicator: the plan cache belongs to the
// calling thread, and a non-blocking allreduce runs this on the worker.
// Their algorithms are fixed: COLL_ALGO is the caller's choice for the
// caller's operations.
PeerAccessAllreduce::PeerAccessAllreduce(FastPathHost& host, size_t direct_bytes, size_t staged_bytes,
                                         size_t stream_bytes, size_t staged_stream_bytes, bool in_place_streams)
    : host_(host),
      access_(*host.links().peer_access()),
      direct_bytes_(direct_bytes),
      staged_bytes_(staged_bytes),
      stream_bytes_(stream_bytes),
      staged_stream_bytes_(staged_stream_bytes),
      in_place_streams_(in_place_streams) {
  const OpRequest offers{
      algo::Collective::kAlltoall, nullptr, nullptr, sizeof(Offer), COLL_UINT8, COLL_SUM, 0, "direct"};
  const OpRequest barrier{algo::Collective::kBarrier, nullptr, nullptr, 0, COLL_UINT8, COLL_SUM, 0, "dissemination"};
  host_.compile_own(offers, offers_job_);
  host_.compile_own(barrier, barrier_job_);
}

// Peers that mapped it keep their mapping (region.h): freeing is safe.
PeerAccessAllreduce::~PeerAccessAllreduce() {
  if (staging_ != nullptr) transport::free_shareable(staging_);
}

bool PeerAccessAllreduce::run(const Job& job, const Deadline& deadline, OpRecord& record) {
  const int rank_ = host_.host_rank(), nranks_ = host_.host_nranks();
  const std::vector<int>& others_ = host_.others();
  const size_t bytes = job.count * reduce::datatype_size(job.dtype);
  host_.connect(others_, deadline);
  host_.flight_recorder().set_algorithm(record, "peer_access");

  // 1. Offers.
  bool reach = true;
  for (int r : others_) reach = reach && access_.can_access(r);
  Offer mine;
  mine.direct = reach && bytes >= direct_bytes_ && access_.handle_for(job.send, bytes, &mine.send) &&
                access_.handle_for(job.recv, bytes, &mine.recv);
  mine.staged =
      reach && bytes >= staged_bytes_ && staging_ready() && access_.handle_for(staging_, kStagingBytes, &mine.staging);
  mine.signature = job.signature;
  mine.count = job.count;
  // An alltoall of the same offer to everyone: one round, where a ring
  // allgather takes n-1.
  const std::vector<Offer> copies(static_cast<size_t>(nranks_), mine);
  std::vector<Offer> offers(static_cast<size_t>(nranks_));
  host_.run_inside(offers_job_, copies.data(), offers.data(), deadline, record);
  bool all_direct = true, all_staged = true;
  for (int r = 0; r < nranks_; ++r) {
    const Offer& o = offers[static_cast<size_t>(r)];
    if (o.signature != mine.signature)
      fail(Code::kInvalidUsage, "rank ", rank_, ": rank ", r,
           " called a different operation: ", describe_mismatch(make_tag(mine.signature, 0), make_tag(o.signature, 0)));
    if (o.count != mine.count)
      fail(Code::kInvalidUsage, "rank ", rank_, ": rank ", r, " called allreduce with count ", o.count, ", not ",
           mine.count);
    all_direct = all_direct && o.direct != 0;
    all_staged = all_staged && o.staged != 0;
  }
  if (!all_direct && all_staged) {
    std::vector<char*> staging(static_cast<size_t>(nranks_));
    for (int r : others_)
      staging[static_cast<size_t>(r)] =
          access_.access(r, offers[static_cast<size_t>(r)].staging, kStagingBytes, Access::kReadWrite);
    host_.flight_recorder().set_algorithm(record, "peer_access_staged");
    staged(job, staging, deadline, record);
    return true;
  }
  if (!all_direct) {
    host_.flight_recorder().set_algorithm(record, job.plan->schedule.algorithm);
    return false;
  }

  // 2. This rank's slice, from every input into every output.
  const bool streaming = bytes >= stream_bytes_;
  std::vector<const char*> in(static_cast<size_t>(nranks_));
  std::vector<Output> out(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    const Offer& o = offers[static_cast<size_t>(r)];
    in[static_cast<size_t>(r)] =
        r == rank_ ? static_cast<const char*>(job.send) : access_.access(r, o.send, bytes, Access::kRead);
    char* at = r == rank_ ? static_cast<char*>(job.recv) : access_.access(r, o.recv, bytes, Access::kReadWrite);
    out[static_cast<size_t>(r)] = Output{at, streaming && at != in[static_cast<size_t>(r)]};
  }
  reduce_slice(job, in, out, algo::line_span(job.count, reduce::datatype_size(job.dtype), nranks_, rank_));

  // 3. Everyone done with everyone's buffers.
  host_.run_inside(barrier_job_, nullptr, nullptr, deadline, record);
  return true;
}

// The staged form (see the top). `staging[r]` is peer r's staging, mapped
// writable: the reducer of each slice writes its result back into it.
// Its outputs stream from a larger size than the registered form's: here a
// rank writes only its own output, whose lines an ordinary store finds in
// its own cache while the buffers fit there, where the registered form
// writes into the peers' outputs, whose lines an ordinary store would
// first fetch from their cores (docs/PERFORMANCE.md, "Measurements behind
// the code").
void PeerAccessAllreduce::staged(const Job& job, const std::vector<char*>& staging, const Deadline& deadline,
                                 OpRecord& record) {
  const int rank_ = host_.host_rank(), nranks_ = host_.host_nranks();
  const std::vector<int>& others_ = host_.others();
  const size_t es = reduce::datatype_size(job.dtype), window = kWindowBytes / es;
  const bool streaming = job.count * es >= staged_stream_bytes_;
  const bool streaming_back = streaming && (job.recv != job.send || in_place_streams_);  // step 3
  std::vector<const char*> in(static_cast<size_t>(nranks_));
  std::vector<Output> out;
  bool copied_in = false;  // this window's step 1, done in the last window's step 3
  for (size_t first = 0; first < job.count; first += window) {
    const size_t count = std::min(window, job.count - first);
    const char* send = static_cast<const char*>(job.send) + first * es;
    char* recv = static_cast<char*>(job.recv) + first * es;
    auto slice = [&](int r) { return algo::line_span(count, es, nranks_, r); };
    // 1. The others' slices of our input into our staging, unless the last
    // window's step 3 put them there.
    if (!copied_in)
      for (int r : others_) {
        const algo::Span s = slice(r);
        std::memcpy(staging_ + s.offset * es, send + s.offset * es, s.count * es);
      }
    host_.run_inside(barrier_job_, nullptr, nullptr, deadline, record);
    // 2. Our slice, from our input and every peer's staging, into our output
    // and back into every peer's staging.
    out.assign(1, Output{recv, streaming && recv != send});
    for (int r = 0; r < nranks_; ++r) {
      in[static_cast<size_t>(r)] = r == rank_ ? send : staging[static_cast<size_t>(r)];
      if (r != rank_) out.push_back(Output{staging[static_cast<size_t>(r)], false});
    }
    reduce_slice(job, in, out, slice(rank_));
    host_.run_inside(barrier_job_, nullptr, nullptr, deadline, record);
    // 3. Every other slice, reduced by its owner, from our staging into our
    // output (in place, streamed only where streams_in_place says so).
    // Piece by piece, each followed by the next window's step 1 for the
    // same lines when that window is as long (the same slices), while they
    // are still in L1 (docs/PERFORMANCE.md, "Measurements behind the code").
    copied_in = first + 2 * window <= job.count;
    for (int r : others_) {
      const algo::Span s = slice(r);
      const size_t end = (s.offset + s.count) * es;
      for (size_t at = s.offset * es; at < end; at += kPieceBytes) {
        const size_t bytes = std::min(kPieceBytes, end - at);
        copy(recv + at, staging_ + at, bytes, streaming_back);
        if (copied_in) std::memcpy(staging_ + at, send + window * es + at, bytes);
      }
    }
    if (streaming_back) reduce::stream_fence();
  }
}

// The staging, allocated by the first operation that wants it; false when
// that failed (then every rank runs the plan: the offers say so), and tried
// again by the next one (a memfd refused for want of descriptors, say, may
// be granted later).
bool PeerAccessAllreduce::staging_ready() {
  if (staging_ != nullptr) return true;
  try {
    staging_ = static_cast<char*>(transport::allocate_shareable(kStagingBytes, "coll-staging"));
  } catch (const Error& e) {
    if (!staging_failed_)
      log::warn(log::kColl, "rank ", host_.host_rank(), ": no staging for large allreduces on this node (", e.what(),
                "): they run their schedules until one can be made");
    staging_failed_ = true;
  }
  return staging_ != nullptr;
}

}  // namespace

// In place, step 3 of the staged form rewrites the lines of the input that
// step 1 read a window before: (n-1)/n of it. An ordinary store finds them
// still in the core's L2 where it holds that much for every rank of the
// core, and else first fetches each (a read for ownership), which
// non-temporal stores skip (docs/PERFORMANCE.md, "In place"). An L2 that
// the topology does not give streams, as out of place.
// COLL_SHM_STAGED_STREAM_IN_PLACE=0 or 1 overrides it.
bool streams_in_place(size_t l2_bytes_per_core, int ranks_per_core, int nranks) {
  const size_t rewritten =
      kWindowBytes / static_cast<size_t>(std::max(nranks, 1)) * static_cast<size_t>(std::max(nranks - 1, 0));
  return l2_bytes_per_core < rewritten * static_cast<size_t>(std::max(ranks_per_core, 1));
}

std::unique_ptr<FastPath> make_peer_access_allreduce(FastPathHost& host) {
  auto bytes = [](const char* name) {
    const int64_t v = config::get_int(name);
    if (v < 0) fail(Code::kInvalidArgument, name, "=", v, " must not be negative");
    return static_cast<size_t>(v);
  };
  const size_t direct = config::get_bool("COLL_SHM_MAPPED") ? bytes("COLL_SHM_DIRECT_BYTES") : SIZE_MAX;
  const size_t staged = config::get_bool("COLL_SHM_STAGED") ? bytes("COLL_SHM_STAGED_BYTES") : SIZE_MAX;
  const size_t stream = bytes("COLL_SHM_STREAM_BYTES"), staged_stream = bytes("COLL_SHM_STAGED_STREAM_BYTES");
  const std::string in_place = config::get_string("COLL_SHM_STAGED_STREAM_IN_PLACE");
  if (in_place != "auto" && in_place != "0" && in_place != "1")
    fail(Code::kInvalidArgument, "COLL_SHM_STAGED_STREAM_IN_PLACE=", in_place, " must be auto, 0 or 1");
  if (std::min(direct, staged) == SIZE_MAX || host.links().peer_access() == nullptr) return nullptr;
  bool in_place_streams = in_place == "1";
  if (in_place == "auto") {
    const topo::Topology& node = topo::node_topology();
    const int cores = std::max(node.cores, 1), ranks_per_core = (host.host_nranks() + cores - 1) / cores;
    in_place_streams = streams_in_place(node.l2_bytes_per_core, ranks_per_core, host.host_nranks());
  }
  return std::make_unique<PeerAccessAllreduce>(host, direct, staged, stream, staged_stream, in_place_streams);
}

}  // namespace coll
