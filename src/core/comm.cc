#include "core/comm.h"

#include "algorithms/partition.h"
#include "algorithms/schedule.h"
#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_server.h"
#include "core/exchange_queue.h"
#include "core/fastpath/fastpath.h"
#include "core/link_models.h"
#include "core/meeting.h"
#include "core/op_signature.h"
#include "core/pair_exchange.h"
#include "core/staging/stager.h"
#include "reduce/reduce.h"
#include "topology/bind.h"
#include "topology/load.h"
#include "topology/nodes.h"
#include "transport/registry.h"

#include <algorithm>
#include <cstdint>

namespace coll {

Communicator::Communicator(int nranks, const bootstrap::UniqueId& id, int rank, std::string prefix, int64_t timeout_ms,
                           int64_t init_timeout_ms, Store store, const std::function<bool(int)>& known_gone)
    : rank_(rank),
      nranks_(nranks),
      prefix_(std::move(prefix)),
      id_(id),
      exchanges_(std::make_unique<ExchangeQueue>()),
      counters_(nranks) {
  if (prefix_.empty()) log::set_rank(rank);
  config::report_once();
  FlightRecorder::install_signal_handler();
  timeout_ms_ = timeout_ms > 0 ? timeout_ms : config::get_int("COLL_TIMEOUT_MS");
  if (timeout_ms_ <= 0) fail(Code::kInvalidArgument, "COLL_TIMEOUT_MS=", timeout_ms_, " must be positive");
  if (!config::get_string("COLL_CHUNK_BYTES").empty()) {
    int64_t chunk = config::get_int("COLL_CHUNK_BYTES");
    if (chunk < 64 || chunk > (int64_t{1} << 30))
      fail(Code::kInvalidArgument, "COLL_CHUNK_BYTES=", chunk, " must be between 64 and 1G");
    chunk_bytes_ = static_cast<size_t>(chunk);
    chunk_bytes_set_ = true;
  }
  const int64_t staging = config::get_int("COLL_STAGING_CHUNK_BYTES");
  if (staging < 64 || staging > (int64_t{1} << 30))
    fail(Code::kInvalidArgument, "COLL_STAGING_CHUNK_BYTES=", staging, " must be between 64 and 1G");
  staging_bytes_ = static_cast<size_t>(staging);
  stage_host_buffers_ = config::get_bool("COLL_STAGE_HOST_BUFFERS");
  // A bad COLL_TOPO_FILE, COLL_TRANSPORTS or COLL_TUNING_FILE is this
  // rank's own mistake: report it before joining, or peers see our early
  // exit as a remote error.
  if (prefix_.empty()) topo::node_topology();
  transport_ = std::make_unique<Router>(
      rank_, transport::make_transports(
                 {rank_, nranks_, id.secret, transport::job_tag(id.secret, prefix_), transport::host_id()}));
  selector_ =
      std::make_unique<algo::Selector>(config::get_string("COLL_ALGO"), link_models(transport_->all_capabilities()));
  // Joined after the settings are checked: where every rank has the same
  // bad one, rank 0 (the store's host) may have failed and exited before
  // another reaches its store, which that rank would wait for until its
  // timeout. A rank that fails from here on leaves the store without a
  // goodbye, which its peers see at once (gone_key).
  Deadline deadline = init_timeout_ms > 0 ? Deadline::after_ms(init_timeout_ms, nullptr, "COLL_INIT_TIMEOUT_MS")
                                          : Deadline::after_ms(timeout_ms_);
  const std::string store_address = id.store_address;
  store_ = std::make_unique<bootstrap::StoreClient>(
      id, deadline, prefix_.empty() ? static_cast<uint32_t>(rank_) : bootstrap::kStoreClientIdentity,
      store == Store::kRunning ? net::Refused::kFail : net::Refused::kRetry,
      store == Store::kRunning ? std::function<bool()>([store_address] {
        return net::refuses_connections(net::SockAddr::parse(store_address, "store address"), 200);
      })
                               : std::function<bool()>());
  // A peer's standby socket refusing means it is gone (meeting.cc). Asked
  // from the worker's thread too, so it reads only the fixed addresses.
  pairs_ = std::make_unique<StorePairExchange>(*store_, prefix_, rank_, timeout_ms_, [this](int r) {
    return meeting::refuses(standby_addresses_[static_cast<size_t>(r)]);
  });

  std::string ifname;
  standby_ = net::listen_on(net::choose_interface(&ifname), &standby_bound_, "standby store (coll_comm_shrink)");
  standby_.parents_only();

  // Publish our addresses, then read everyone's: a rank that never arrives
  // shows up here as a timeout naming it.
  constexpr char kSeparator = '\x1f';
  store_->set(str_cat(prefix_, "addr/", rank_),
              str_cat(transport_->local_address(), kSeparator, standby_bound_.to_string()), deadline);
  addresses_.resize(static_cast<size_t>(nranks_));
  standby_addresses_.resize(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    const std::string key = str_cat(prefix_, "addr/", r),
                      waiting_for = str_cat("rank ", r, " of ", nranks_, " to join");
    // A rank's first communicator that failed or died before publishing
    // its address: the store marks it gone (splits are not its ranks).
    const std::string both = store_->get(key, deadline, waiting_for, [&] {
      return (known_gone && known_gone(r)) ||
             (prefix_.empty() && store_->has(bootstrap::gone_key(static_cast<uint32_t>(r)), deadline));
    });
    const size_t cut = both.find(kSeparator);
    if (cut == std::string::npos) fail(Code::kRemote, "rank ", rank_, ": rank ", r, " published a malformed address");
    addresses_[static_cast<size_t>(r)] = both.substr(0, cut);
    standby_addresses_[static_cast<size_t>(r)] = both.substr(cut + 1);
  }

  // Everyone on this node, over a transport for ranks of one node: the
  // fast paths' knobs apply (core/fastpath/).
  bool one_node = false;
  if (nranks_ > 1) {
    const transport::Capabilities& slowest = transport_->slowest_for(addresses_);
    selector_->set_link_class(slowest.name);
    one_node = slowest.same_host_only;
  }
  for (int r = 0; r < nranks_; ++r)
    if (r != rank_) others_.push_back(r);
  if (chunk_bytes_ == 0) chunk_bytes_ = static_cast<size_t>(selector_->link().chunk_bytes);  // COLL_CHUNK_BYTES unset
  std::vector<std::string> hosts;
  for (const std::string& a : addresses_) hosts.push_back(Router::host_of(a));
  nodes_ = ranks_by_node(hosts);
  if (config::get_bool("COLL_TOPO_AWARE")) {
    ring_order_ = ring_by_node(nodes_);
    spread_order_ = spread_over_nodes(nodes_);
    if (nodes_.size() > 1) {
      node_of_.assign(static_cast<size_t>(nranks_), 0);
      for (size_t n = 0; n < nodes_.size(); ++n)
        for (int r : nodes_[n]) node_of_[static_cast<size_t>(r)] = static_cast<int>(n);
      for (int r : nodes_[static_cast<size_t>(node_of_[static_cast<size_t>(rank_)])])
        if (r != rank_)
          node_link_ = selector_->model().link(transport_->transport_for(r, addresses_[static_cast<size_t>(r)]).name);
    }
  }
  // The fast paths of one node: the peer-access allreduce's settings are
  // read (and a bad one reported) before this rank joins its peers.
  std::unique_ptr<FastPath> peer_access = one_node ? make_peer_access_allreduce(*this) : nullptr;
  recorder_ = std::make_unique<FlightRecorder>(rank_, nranks_, transport::job_tag(id.secret, prefix_),
                                               Router::host_of(addresses_[static_cast<size_t>(rank_)]));
  if (prefix_.empty()) place_this_rank();  // once per process: split communicators share its thread
  if (nranks_ > 1) {
    algo::Ring ring(rank_, nranks_, ring_order_);
    connect({ring.prev(), ring.next()}, deadline);
  }
  // Every peer's board, mapped now (fastpath/board_allreduce.cc); after the
  // pinning above, so that our segment, which we write at every call, is on
  // our NUMA node.
  if (one_node) {
    connect(others_, deadline);
    if (auto board = make_board_allreduce(*this)) fast_paths_.push_back(std::move(board));  // the smaller sizes first
  }
  if (peer_access) fast_paths_.push_back(std::move(peer_access));
  log::info(log::kInit, "rank ", rank_, " of ", nranks_, prefix_.empty() ? "" : " (split ", prefix_,
            prefix_.empty() ? "" : ")", " joined (store ", id.store_address, ", transports ",
            transport_->local_address(), ")");
}

void Communicator::connect(const std::vector<int>& peers, const Deadline& deadline) {
  transport_->connect(peers, addresses_, *pairs_, deadline);
}

void Communicator::compile_own(const OpRequest& op, std::vector<Job>& jobs) { compile({&op, 1}, jobs); }

// An operation the library runs inside the caller's (a fast path's offers
// and barriers): through the same executor, counters and deadline, so that
// it fails, times out and aborts like the caller's operation.
void Communicator::run_inside(std::vector<Job>& job, const void* send, void* recv, const Deadline& deadline,
                              OpRecord& record) {
  job[0].send = send;
  job[0].recv = recv;
  connect(job[0].plan->peers, deadline);
  executor_.run(job, rank_, nranks_, seq_, counters_, *transport_, deadline, *recorder_, record);
}

// Learns this rank's place on its node (local rank, NUMA node, GPU, NIC)
// from the topology, and pins the calling thread to its NUMA node's CPUs
// (COLL_BIND).
void Communicator::place_this_rank() {
  int local_rank = 0, local_size = 0;
  for (const auto& members : nodes_)
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank_) local_rank = static_cast<int>(i), local_size = static_cast<int>(members.size());
  const topo::Topology& topology = topo::node_topology();
  const topo::Placement place = topo::place(topology, local_rank, local_size);
  const std::string bound = config::get_bool("COLL_BIND") ? topo::bind_to(place) : "not bound (COLL_BIND=0)";
  log::info(log::kInit, "rank ", rank_, ": local rank ", local_rank, " of ", local_size, " on ",
            Router::host_of(addresses_[static_cast<size_t>(rank_)]), "; NUMA ", place.numa,
            place.gpu >= 0 ? str_cat(", GPU ", place.gpu) : std::string(),
            place.nic.empty() ? std::string() : ", NIC " + place.nic, "; ", bound, " (topology: ", topology.source,
            ")");
}

Communicator::~Communicator() {
  exchanges_->close();  // a send or receive left unanswered cannot be answered now
  worker_.reset();      // finishes what was issued
  // The job's first communicators' goodbyes end the store; a split's only
  // lets it end (store_server.cc).
  if (store_) store_->bye(nranks_);
  // Meetings end with us: a listener left behind would look alive to the
  // others' probes. Not where a shrink we hosted left out live ranks (late,
  // or excluded by another after they came): one of them must still read
  // that it is out, rather than find the host gone and go on alone, so the
  // standby serves to the end of the process.
  if (standby_server_ != nullptr && !not_in_but_alive_) standby_server_->stop();
}

// The unit of pipelining. A device operation moved in place (run_direct)
// takes its transports' chunk: each chunk costs the nvlink transport a
// rendezvous, and the host link's chunk made a 256 MiB allreduce thousands
// of them. Every rank passes device buffers alike, so all choose alike.
size_t Communicator::chunk_for(const OpRequest& op) {
  if (chunk_bytes_set_ || op.kind == MemoryKind::kHost || nranks_ == 1 || !moves_device_directly()) return chunk_bytes_;
  if (device_chunk_bytes_ == 0) {
    device_chunk_bytes_ = SIZE_MAX;
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_)
        device_chunk_bytes_ =
            std::min(device_chunk_bytes_,
                     static_cast<size_t>(
                         transport_->device_transport_for(r, addresses_[static_cast<size_t>(r)])->link.chunk_bytes));
  }
  return device_chunk_bytes_;
}

// Schedules depend on the shape of a call, never on its buffers, so a
// training loop that repeats the same few collectives builds each once.
std::shared_ptr<const Plan> Communicator::plan_for(const OpRequest& op) {
  const size_t chunk = chunk_for(op);
  PlanKey key{op.collective,
              op.count,
              reduce::datatype_size(op.dtype),
              op.op == COLL_AVG,
              op.root,
              op.send_offset.has_value(),
              op.send_offset.value_or(0),
              op.algorithm ? op.algorithm : "",
              chunk};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  algo::CollShape shape;
  shape.collective = op.collective;
  shape.rank = rank_;
  shape.nranks = nranks_;
  shape.count = op.count;
  shape.elem_size = reduce::datatype_size(op.dtype);
  shape.root = op.root;
  shape.average = op.op == COLL_AVG;
  shape.chunk_bytes = chunk;
  shape.send_offset = op.send_offset;
  shape.ring_order = ring_order_;
  shape.spread_order = spread_order_;
  shape.node_of = node_of_;
  shape.node_link = node_link_;
  const algo::Algorithm& algorithm =
      op.algorithm != nullptr ? algo::find_algorithm(op.collective, op.algorithm) : selector_->choose(shape);
  auto plan = std::make_shared<const Plan>(algo::build_schedule(algorithm, shape));
  // Large plans are cheap to build next to the data they move; caching them
  // all would hold memory for every size a program ever used.
  const size_t steps = plan->schedule.steps.size();
  if (steps > kMaxPlanSteps) return plan;
  if (plans_.size() >= kMaxPlans || cached_steps_ + steps > kMaxCachedSteps) {  // start over
    plans_.clear();
    cached_steps_ = 0;
  }
  cached_steps_ += steps;
  plans_.emplace(std::move(key), plan);
  return plan;
}

// An allreduce whose algorithm neither the caller nor COLL_ALGO named: the
// library may run it outside the schedules (fastpath/).
bool Communicator::unnamed_allreduce(const OpRequest& op) const {
  return op.collective == algo::Collective::kAllreduce && op.algorithm == nullptr &&
         !selector_->fixed(algo::Collective::kAllreduce);
}

// The board allreduce needs no plan, and at its size looking one up is a
// fair part of the call. No fast path runs in a group: a group's other
// operations may differ from rank to rank (sends on some, none on others),
// and its allreduce must run the same way on all.
void Communicator::compile(std::span<const OpRequest> ops, std::vector<Job>& jobs, bool grouped) {
  if (grouped) return compile_group(ops, jobs);
  jobs.clear();
  for (const OpRequest& op : ops) jobs.push_back(job_for(op, false));
}

// The first fast path that takes the operation, if any (see compile).
FastPath* Communicator::fast_path_for(const OpRequest& op, bool grouped) const {
  if (grouped || !unnamed_allreduce(op) || op.kind != MemoryKind::kHost) return nullptr;
  for (const auto& f : fast_paths_)
    if (f->takes(op)) return f.get();
  return nullptr;
}

Job Communicator::job_for(const OpRequest& op, bool grouped) {
  FastPath* fast = fast_path_for(op, grouped);
  return Job{fast != nullptr && !fast->needs_plan() ? nullptr : plan_for(op),
             op.send,
             op.recv,
             op.dtype,
             op.op,
             algo::collective_name(op.collective),
             op.count,
             op.root,
             signature_of(op.collective, op.dtype, op.op, op.root, op.count).bits(),
             fast,
             op.kind,
             op.stream};
}

namespace {

// What a mismatch means. The same call on both sides, one of them waiting
// on the board: the two disagree on whether it is one-shot.
std::string describe(const transport::Mismatch& m) {
  if (m.board && m.want_tag >> kTagCounterBits == m.got_tag >> kTagCounterBits)
    return "the same allreduce, but one of the two runs it one-shot (on the board) and the other through its plan "
           "(is COLL_SHM_ONESHOT_BYTES the same on every rank?)";
  return describe_mismatch(m.want_tag, m.got_tag);
}

}  // namespace

void Communicator::check_not_stopped() const {
  // aborted_ read first: revoke() sets revoked_ before it, so an abort
  // that a revoke caused is seen as the revoke.
  const bool aborted = aborted_;
  if (revoked()) {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    fail(Code::kRevoked, "rank ", rank_, ": the communicator was revoked (",
         revoked_ ? str_cat("by this rank: coll_comm_revoke") : failed_, "); shrink it (coll_comm_shrink)");
  }
  if (aborted) fail(Code::kInvalidUsage, "rank ", rank_, ": the communicator was aborted");
}

void Communicator::check_usable() {
  check_not_stopped();
  // A failed operation may leave receives posted and messages in flight, and
  // the peers' counts of messages no longer match ours: nothing after it
  // could be trusted.
  if (has_failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    fail(Code::kInvalidUsage, "rank ", rank_, ": an earlier operation on this communicator failed (", failed_,
         "); destroy it and create a new one");
  }
}

// Messages from below name the rank and peer; this adds the operation, and
// records the failure for every later call and for the peers.
Error Communicator::operation_failed(const Error& e, const char* what, OpRecord& record) {
  const std::string where = str_cat(what, " #", seq_);
  const auto* mismatch = dynamic_cast<const transport::Mismatch*>(&e);
  Error error =
      mismatch != nullptr ? Error(Code::kInvalidUsage,
                                  str_cat("rank ", rank_, ": ", where, ": rank ", mismatch->peer,
                                          " called a different operation: ", describe(*mismatch), " (", e.what(), ")"))
      // Cancelled by this rank's revoke, whichever wait it ended.
      : revoked_ ? Error(Code::kRevoked, str_cat("rank ", rank_, ": ", where, " was revoked (coll_comm_revoke)"))
      : e.code() == Code::kTimeout && aborted_
          ? Error(Code::kInvalidUsage, str_cat("rank ", rank_, ": ", where, " was aborted (coll_comm_abort)"))
      : std::string(e.what()).find(where) == std::string::npos
          ? Error(e.code(), str_cat(where, " (", FlightRecorder::algorithm(record), "): ", e.what()))
          : e;
  recorder_->end(record, error.what());
  if (!aborted_) failed(error);  // an abort is the caller's doing, not an error found in the background
  recorder_->dump(error.code() == Code::kTimeout ? "timeout" : "error");
  return error;
}

void Communicator::execute(std::vector<Job>& jobs) {
  // running_ then aborted_ here, aborted_ then running_ in abort() (both
  // sequentially consistent): whichever comes second sees the other, so the
  // transport is closed once, by a thread that is not using it.
  UsingTransport using_transport(*this);
  check_usable();
  ++seq_;
  const Job& first = jobs[0];
  size_t steps = 0;
  for (const Job& j : jobs) steps += j.plan == nullptr ? 0 : j.plan->schedule.steps.size();
  const std::string& algorithm = first.plan == nullptr ? first.fast_path->name() : first.plan->schedule.algorithm;
  OpRecord& record = recorder_->begin(seq_, first.what, first.count, first.dtype, first.op, first.root,
                                      static_cast<uint32_t>(jobs.size()), static_cast<uint32_t>(steps), algorithm);
  log::trace(log::kColl, first.what, " #", seq_, ": ", jobs.size(), " job(s), ", algorithm, ", ", steps, " steps");
  // This rank's program, step by step: what collsim --explain shows, run for real.
  if (log::enabled(log::Level::kTrace, log::kColl))
    for (const Job& j : jobs)
      if (j.plan != nullptr)
        log::trace(log::kColl, "rank ", rank_, "'s schedule:\n", algo::to_string(j.plan->schedule));
  try {
    Deadline deadline = Deadline::after_ms(timeout_ms_, &aborted_);
    if (jobs.size() == 1 && first.fast_path != nullptr && first.fast_path->run(first, deadline, record)) {
      recorder_->end(record, nullptr);
      return;
    }
    if (jobs.size() == 1) {
      connect(first.plan->peers, deadline);
    } else {
      std::vector<int> peers;
      for (const Job& j : jobs) peers.insert(peers.end(), j.plan->peers.begin(), j.plan->peers.end());
      std::sort(peers.begin(), peers.end());
      peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
      connect(peers, deadline);
    }
    executor_.run(jobs, rank_, nranks_, seq_, counters_, *transport_, deadline, *recorder_, record);
  } catch (const Error& e) {
    throw operation_failed(e, first.what, record);
  }
  recorder_->end(record, nullptr);
}

void Communicator::failed(const Error& e) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failed_.empty()) return;
  failed_ = e.what();
  failure_code_ = static_cast<coll_result_t>(e.code());
  has_failed_.store(true, std::memory_order_release);
}

coll_result_t Communicator::async_error(std::string* message) const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (message != nullptr) *message = failed_;
  return failure_code_;
}

void Communicator::run(std::span<const OpRequest> ops, bool grouped) {
  const OpRequest& op = ops[0];
  const bool exchange = !grouped && ops.size() == 1 && algo::is_point_to_point(op.collective);
  if (!worker_) {
    // Nothing else is pending, and the caller waits: nothing could answer it.
    if (exchange && op.root == rank_) throw Error(Code::kInvalidUsage, unanswered_to_self(op, rank_));
    compile(ops, jobs_, grouped);  // reused: a blocking call allocates nothing once warm
    if (!jobs_.empty()) execute(jobs_);
    return;
  }
  auto done = run_async(ops, grouped, true);
  coll_result_t result = done->wait();
  if (result != COLL_SUCCESS) throw Error(static_cast<Code>(result), done->message());
}

std::shared_ptr<Completion> Communicator::run_async(std::span<const OpRequest> ops, bool grouped, bool blocking) {
  if (!grouped && ops.size() == 1 && algo::is_point_to_point(ops[0].collective)) {
    auto done = std::make_shared<Completion>();
    if (!worker_) worker_ = std::make_unique<Worker>();
    if (uint64_t run = exchanges_->add(Exchange{ops[0], done, blocking}))
      worker_->enqueue([this, run] { drain_exchanges(run); });
    return done;
  }
  return start(prepare(ops, grouped));
}

Communicator::Batch Communicator::prepare(std::span<const OpRequest> ops, bool grouped) {
  auto jobs = std::make_shared<std::vector<Job>>();
  compile(ops, *jobs, grouped);  // argument errors surface here, at once
  return jobs;
}

std::shared_ptr<Completion> Communicator::start(Batch jobs) {
  auto done = std::make_shared<Completion>();
  if (!worker_) worker_ = std::make_unique<Worker>();
  exchanges_->close();
  worker_->enqueue([this, jobs, done] {
    try {
      if (!jobs->empty()) execute(*jobs);
      done->finish(COLL_SUCCESS, "");
    } catch (const Error& e) {
      done->finish(static_cast<coll_result_t>(e.code()), e.what());
    } catch (const std::exception& e) {
      done->finish(COLL_INTERNAL_ERROR, std::string("internal error: ") + e.what());
    }
  });
  return done;
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(nranks_));
  OpRequest gather{algo::Collective::kAllgather, mine, all.data(), 2, COLL_INT32, COLL_SUM, 0, "ring"};
  run({&gather, 1});
  const int split = splits_++;
  if (color < 0) return nullptr;
  std::vector<std::pair<int, int>> members;  // (key, parent rank)
  for (int r = 0; r < nranks_; ++r)
    if (all[2 * static_cast<size_t>(r)] == color) members.push_back({all[2 * static_cast<size_t>(r) + 1], r});
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  while (members[static_cast<size_t>(new_rank)].second != rank_) ++new_rank;
  std::string prefix = str_cat(prefix_, "split", split, ".color", color, "/");
  return std::make_unique<Communicator>(static_cast<int>(members.size()), id_, new_rank, prefix, timeout_ms_);
}

// The executing thread owns the transport (it is not thread-safe): abort
// only flags the operation in progress, which then fails within
// Deadline::kCancelCheckMs and closes the transport on its way out. An idle
// transport is closed here.
void Communicator::abort() {
  aborted_ = true;
  recorder_->dump("coll_comm_abort");
  close_if_idle();
}

void Communicator::revoke() {
  revoked_ = true;  // before aborted_: the operation it cancels must read it
  aborted_ = true;
  recorder_->dump("coll_comm_revoke");
  close_if_idle();
}

bool Communicator::revoked() const {
  if (revoked_) return true;
  if (!has_failed_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_code_ == COLL_REVOKED;
}

void Communicator::close_if_idle() {
  if (running_.load() || closed_.exchange(true)) return;
  // Peers learn why: our revoke or abort (a remote error for them), or our
  // failure (a revocation learnt is passed on as one).
  Error why(Code::kRemote, str_cat("rank ", rank_, ": the communicator was aborted (coll_comm_abort)"));
  if (revoked_) why = Error(Code::kRevoked, str_cat("rank ", rank_, " revoked the communicator (coll_comm_revoke)"));
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failed_.empty() && !aborted_) why = Error(static_cast<Code>(failure_code_), failed_);
  }
  if (transport_) transport_->close(&why);
}

}  // namespace coll
