// The direct-access allreduce: ranks of one node whose buffers all come from
// coll_mem_alloc read each other's inputs and write each other's outputs.
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
//      it called (signature and count). All ranks learn the same offers, so
//      all take the same branch: if one rank's buffers are not registered,
//      every rank runs the plan instead; if ranks called different
//      operations, every rank fails with COLL_INVALID_USAGE (the plan's
//      messages would have caught it; here nothing else would).
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
#include "algorithms/partition.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/op_signature.h"
#include "reduce/reduce.h"
#include "reduce/stream.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace coll {
namespace {

// What a rank tells every peer; the same size on every rank.
struct Offer {
  uint32_t ok = 0;         // both buffers registered, and every peer accessible
  uint32_t reserved = 0;   // keeps the 64-bit fields aligned; zero
  uint64_t signature = 0;  // OpSignature::bits() of its allreduce
  uint64_t count = 0;      // exactly (the signature keeps only its low bits)
  transport::MemoryHandle send, recv;
};

// A block that stays in L1 while all n inputs are reduced into it; a whole
// number of elements of every datatype.
constexpr size_t kBlockBytes = 8 << 10;

// out[k][i] = in[0][i] (op) in[1][i] (op) ... for every rank k, i in `slice`
// (elements); reduced in rank order, so every rank's result is the same bits.
// An output that is not its rank's input too is written with non-temporal
// stores when `streaming`; in place, the lines were just read into the
// cache, where an ordinary store finds them without a read for ownership.
void reduce_slice(const Job& job, const std::vector<const char*>& in, const std::vector<char*>& out, algo::Span slice,
                  bool streaming) {
  const size_t es = reduce::datatype_size(job.dtype), per_block = kBlockBytes / es;
  const int n = static_cast<int>(in.size());
  alignas(64) static thread_local char block[kBlockBytes];
  for (size_t done = 0; done < slice.count; done += per_block) {
    const size_t count = std::min(per_block, slice.count - done), at = (slice.offset + done) * es;
    reduce::reduce(job.dtype, job.op, block, in[0] + at, in[1] + at, count);
    for (int k = 2; k < n; ++k) reduce::reduce(job.dtype, job.op, block, block, in[static_cast<size_t>(k)] + at, count);
    if (job.op == COLL_AVG) reduce::divide(job.dtype, block, count, n);
    for (int k = 0; k < n; ++k) {
      char* o = out[static_cast<size_t>(k)] + at;
      if (streaming && out[static_cast<size_t>(k)] != in[static_cast<size_t>(k)])
        reduce::stream_copy(o, block, count * es);
      else
        std::memcpy(o, block, count * es);
    }
  }
  if (streaming) reduce::stream_fence();
}

}  // namespace

// The offers' alltoall and the barrier are compiled once, here, on the
// thread that creates the communicator: the plan cache belongs to the
// calling thread, and a non-blocking allreduce runs this on the worker.
void Communicator::prepare_direct_access() {
  // Their algorithms are fixed: COLL_ALGO is the caller's choice for the
  // caller's operations.
  const OpRequest offers{
      algo::Collective::kAlltoall, nullptr, nullptr, sizeof(Offer), COLL_UINT8, COLL_SUM, 0, "direct"};
  const OpRequest barrier{algo::Collective::kBarrier, nullptr, nullptr, 0, COLL_UINT8, COLL_SUM, 0, "dissemination"};
  compile({&offers, 1}, offers_job_);
  compile({&barrier, 1}, barrier_job_);
  for (int r = 0; r < nranks_; ++r)
    if (r != rank_) direct_peers_.push_back(r);
}

bool Communicator::direct_access(const Job& job, const Deadline& deadline, OpRecord& record) {
  const size_t bytes = job.count * reduce::datatype_size(job.dtype);
  transport_->connect(direct_peers_, addresses_, deadline);
  recorder_->set_algorithm(record, "direct_access");

  // 1. Offers.
  Offer mine;
  bool ok = transport_->handle_for(job.send, bytes, &mine.send) && transport_->handle_for(job.recv, bytes, &mine.recv);
  for (int r : direct_peers_) ok = ok && transport_->can_access(r);
  mine.ok = ok ? 1 : 0;
  mine.signature = job.signature;
  mine.count = job.count;
  // An alltoall of the same offer to everyone: one round, where a ring
  // allgather takes n-1.
  const std::vector<Offer> copies(static_cast<size_t>(nranks_), mine);
  std::vector<Offer> offers(static_cast<size_t>(nranks_));
  run_inside(offers_job_, copies.data(), offers.data(), deadline, record);
  bool all_ok = true;
  for (int r = 0; r < nranks_; ++r) {
    const Offer& o = offers[static_cast<size_t>(r)];
    if (o.signature != mine.signature)
      fail(Code::kInvalidUsage, "rank ", rank_, ": rank ", r,
           " called a different operation: ", describe_mismatch(make_tag(mine.signature, 0), make_tag(o.signature, 0)));
    if (o.count != mine.count)
      fail(Code::kInvalidUsage, "rank ", rank_, ": rank ", r, " called allreduce with count ", o.count, ", not ",
           mine.count);
    all_ok = all_ok && o.ok != 0;
  }
  if (!all_ok) {
    recorder_->set_algorithm(record, job.plan->schedule.algorithm);
    return false;
  }

  // 2. This rank's slice, from every input into every output.
  std::vector<const char*> in(static_cast<size_t>(nranks_));
  std::vector<char*> out(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    const Offer& o = offers[static_cast<size_t>(r)];
    in[static_cast<size_t>(r)] = r == rank_ ? static_cast<const char*>(job.send) : transport_->access(r, o.send, bytes);
    out[static_cast<size_t>(r)] = r == rank_ ? static_cast<char*>(job.recv) : transport_->access(r, o.recv, bytes);
  }
  reduce_slice(job, in, out, algo::line_span(job.count, reduce::datatype_size(job.dtype), nranks_, rank_),
               bytes >= stream_bytes_);

  // 3. Everyone done with everyone's buffers.
  run_inside(barrier_job_, nullptr, nullptr, deadline, record);
  return true;
}

// An operation the library runs inside the caller's (the offers, the
// barrier): through the same executor, counters and deadline, so that it
// fails, times out and aborts like the caller's operation.
void Communicator::run_inside(std::vector<Job>& job, const void* send, void* recv, const Deadline& deadline,
                              OpRecord& record) {
  job[0].send = send;
  job[0].recv = recv;
  transport_->connect(job[0].plan->peers, addresses_, deadline);
  executor_.run(job, rank_, nranks_, seq_, counters_, *transport_, deadline, *recorder_, record);
}

}  // namespace coll
