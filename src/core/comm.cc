#include "core/comm.h"

#include "algorithms/partition.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/select.h"
#include "core/config.h"
#include "core/error.h"
#include "core/log.h"
#include "reduce/reduce.h"

namespace coll {

Communicator::Communicator(int nranks, const bootstrap::UniqueId& id, int rank) : rank_(rank), nranks_(nranks) {
  log::set_rank(rank);
  config::report_once();
  timeout_ms_ = config::get_int("COLL_TIMEOUT_MS");
  if (timeout_ms_ <= 0) fail(Code::kInvalidArgument, "COLL_TIMEOUT_MS=", timeout_ms_, " must be positive");
  int64_t chunk = config::get_int("COLL_CHUNK_BYTES");
  if (chunk < 64 || chunk > (int64_t{1} << 30))
    fail(Code::kInvalidArgument, "COLL_CHUNK_BYTES=", chunk, " must be between 64 and 1G");
  chunk_bytes_ = static_cast<size_t>(chunk);
  algo_setting_ = config::get_string("COLL_ALGO");
  algo::check_algorithm_setting(algo_setting_);
  std::string transports = config::get_string("COLL_TRANSPORTS");
  if (transports != "tcp")
    fail(Code::kInvalidArgument, "COLL_TRANSPORTS='", transports, "': only 'tcp' is available in this build");

  Deadline deadline = Deadline::after_ms(timeout_ms_);
  store_ = std::make_unique<bootstrap::StoreClient>(id, deadline);
  transport_ = transport::make_tcp_transport(rank_, nranks_, id.secret);

  // Publish our address, then read everyone's: a rank that never arrives
  // shows up here as a timeout naming it.
  store_->set(str_cat("addr/", rank_), transport_->local_address(), deadline);
  addresses_.resize(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r)
    addresses_[static_cast<size_t>(r)] =
        r == rank_ ? transport_->local_address()
                   : store_->get(str_cat("addr/", r), deadline, str_cat("rank ", r, " of ", nranks_, " to join"));

  if (nranks_ > 1) {
    std::vector<int> ring = {algo::ring_peer_before(rank_, nranks_), algo::ring_peer_after(rank_, nranks_)};
    transport_->connect(ring, addresses_, deadline);
  }
  log::info(log::kInit, "rank ", rank_, " of ", nranks_, " joined (store ", id.store_address, ", transport ",
            transport_->capabilities().name, " at ", transport_->local_address(), ")");
}

Communicator::~Communicator() {
  if (store_) store_->bye(nranks_);
}

Deadline Communicator::operation_deadline() const { return Deadline::after_ms(timeout_ms_); }

void Communicator::allreduce(const void* send, void* recv, size_t count, coll_datatype_t dtype, coll_redop_t op) {
  algo::AllreduceShape shape;
  shape.rank = rank_;
  shape.nranks = nranks_;
  shape.count = count;
  shape.elem_size = reduce::datatype_size(dtype);
  shape.in_place = send == recv;
  shape.average = op == COLL_AVG;
  shape.chunk_bytes = chunk_bytes_;
  algo::Schedule schedule = algo::build_allreduce(algo_setting_, shape);

  Deadline deadline = operation_deadline();
  transport_->connect(schedule.peers(), addresses_, deadline);
  ExecArgs args{send, recv, dtype, op, nranks_, rank_, ++seq_, "allreduce"};
  log::trace(log::kColl, "allreduce #", args.seq, ": ", count, " x ", reduce::datatype_name(dtype), " ",
             reduce::redop_name(op), ", ", schedule.algorithm, ", ", schedule.steps.size(), " steps");
  executor_.run(schedule, args, *transport_, deadline);
}

void Communicator::abort() {
  aborted_ = true;
  if (transport_) transport_->close();
}

}  // namespace coll
