// The communicator: one rank's membership in a group, its connection to the
// bootstrap store, its transport, its algorithm selector and its executor.
// Created collectively; every operation is collective over its ranks (or
// over the pair, for send/recv) and numbered (seq) for messages.
//
// Operations run in issue order. Blocking ones run on the caller's thread
// until the first non-blocking one is issued; from then on a worker thread
// runs them all, so that they still complete in issue order; sends and
// receives issued one after another run together (core/exchanges.cc).
#pragma once

#include "algorithms/collective.h"
#include "algorithms/select.h"
#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/store_client.h"
#include "bootstrap/unique_id.h"
#include "core/executor.h"
#include "core/fastpath/fastpath.h"
#include "core/flight_recorder.h"
#include "core/worker.h"
#include "transport/router.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <atomic>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coll::bootstrap {
class StoreServer;
}  // namespace coll::bootstrap

namespace coll {

class ExchangeQueue;
namespace staging {
class Stager;
struct Ticket;
}  // namespace staging
class StorePairExchange;
struct Exchange;

// One operation as the C API describes it, before an algorithm is chosen.
struct OpRequest {
  algo::Collective collective;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  coll_datatype_t dtype = COLL_UINT8;
  coll_redop_t op = COLL_SUM;
  int root = 0;                          // or the peer of send/recv
  const char* algorithm = nullptr;       // forced (internal use); null: COLL_ALGO or the cost model
  std::optional<int64_t> send_offset{};  // in place: input address minus output address (the C API decides)
  MemoryKind kind = MemoryKind::kHost;   // where send and recv live
  void* stream = nullptr;                // the caller's coll_stream_t; null for host memory
};

class Communicator final : private FastPathHost {
 public:
  // Joins the job: connects to the store, publishes this rank's transport
  // address under `prefix` (empty for the first communicator of a job),
  // waits for every rank (the timeout), connects the ring. `timeout_ms` 0
  // takes COLL_TIMEOUT_MS. `init_timeout_ms` > 0 bounds the joining
  // instead (COLL_INIT_TIMEOUT_MS: a job's first communicator).
  // `store`: starting (rank 0 may start it after we ask: a refused
  // connection is retried) or running (a shrink's host serves it already: a
  // refusal means the host is gone, kRemote at once). `known_gone`, for a
  // communicator made from another (shrink, grow): whether new rank r's
  // process is found gone there, asked now and then while waiting for r to
  // join, so that a member that died meanwhile fails the join at once.
  enum class Store { kStarting, kRunning };
  Communicator(int nranks, const bootstrap::UniqueId& id, int rank, std::string prefix = "", int64_t timeout_ms = 0,
               int64_t init_timeout_ms = 0, Store store = Store::kStarting,
               const std::function<bool(int)>& known_gone = nullptr);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Compiles requests to jobs (choosing algorithms) and runs them as one batch.
  // `grouped`: the operations of a coll_group_start/end (no one-shot or
  // direct-access allreduce among them; sends and receives matched apart
  // from the collectives, see group.cc). A lone send or receive, once a
  // worker runs: with the worker's run of them (exchanges.cc); `blocking`:
  // the caller waits on it.
  void run(std::span<const OpRequest> ops, bool grouped = false);
  std::shared_ptr<Completion> run_async(std::span<const OpRequest> ops, bool grouped = false, bool blocking = false);
  // run_async in two halves, for a group over several communicators: every
  // batch is compiled (its errors raised) before any starts, so that one
  // refused runs none.
  using Batch = std::shared_ptr<std::vector<Job>>;
  Batch prepare(std::span<const OpRequest> ops, bool grouped);
  std::shared_ptr<Completion> start(Batch jobs);

  // staged.cc: whether `op` goes through host staging (device buffers, or
  // COLL_STAGE_HOST_BUFFERS=1), and running it so: on the worker, after the
  // work issued on op.stream before the call, which waits for it.
  bool stages(const OpRequest& op) const;
  std::shared_ptr<Completion> run_staged(const OpRequest& op);
  // Whether device buffers reach every peer by a transport that moves GPU
  // memory (nvlink), so that device operations need no staging.
  bool moves_device_directly();
  // After run_staged(op): whether the call may return before the operation
  // is done, its stream held (false: the caller's thread waits for it).
  bool holds_device_streams(const OpRequest& op) const;

  // Collective: the ranks that pass the same color form a new communicator,
  // ordered by key then by rank here; color < 0 gives null.
  std::unique_ptr<Communicator> split(int color, int key);

  // Collective over the survivors (every rank not excluded), and usable on a
  // communicator whose operations failed: they form a new communicator, in
  // their old order. The union of the survivors' exclusion lists is left
  // out, and so are the ranks found gone and any rank that does not arrive
  // within the timeout (shrink.cc).
  std::unique_ptr<Communicator> shrink(const std::vector<int>& exclude);

  // Collective over the members: with `nnew` new ranks, which joined with
  // `id` (read on rank 0 only), they form a new communicator of
  // nranks() + nnew ranks, the members first in their order (grow.cc).
  std::unique_ptr<Communicator> grow(int nnew, const coll_unique_id_t* id);

  // Collective over the live ranks, and usable on a communicator whose
  // operations failed, aborted or revoked: as ULFM's MPI_Comm_agree, every
  // rank that returns gets the same bitwise AND of the flags of the ranks
  // that took part, even if ranks die during the call, and the same list of
  // ranks gone, in order (agree.cc).
  int agree(int flag, std::vector<int>* gone);

  // From any thread: ends the operation in progress (within
  // Deadline::kCancelCheckMs), closes connections so that peers blocked on
  // us fail fast, and refuses later calls.
  void abort();
  bool aborted() const { return aborted_; }
  // From any thread: as abort(), but every rank learns that the
  // communicator is revoked (COLL_REVOKED), here and on the peers, which
  // pass it on as their own operations fail (coll_comm_revoke).
  void revoke();
  // Revoked here or by a peer: every later call is COLL_REVOKED.
  bool revoked() const;
  // Throws COLL_REVOKED once revoked, else COLL_INVALID_USAGE once aborted.
  void check_not_stopped() const;

  // The first failure of any operation, blocking or not, as a code and a
  // message; COLL_SUCCESS while there was none. Any thread.
  coll_result_t async_error(std::string* message) const;

  const FlightRecorder& recorder() const { return *recorder_; }

  // coll_comm_register / coll_comm_deregister (registration.cc): on the
  // worker when there is one, after what was issued before.
  void* register_buffer(void* ptr, size_t bytes);
  void deregister_buffer(void* handle);

 private:
  // Everything a schedule depends on; not the buffers.
  struct PlanKey {
    algo::Collective collective;
    size_t count;
    size_t elem_size;
    bool average;
    int root;
    bool has_send_offset;
    int64_t send_offset;
    std::string algorithm;  // forced one, or empty
    size_t chunk_bytes;
    auto operator<=>(const PlanKey&) const = default;
  };
  static constexpr size_t kMaxPlans = 256;
  static constexpr size_t kMaxPlanSteps = 16384;      // larger plans are built per call
  static constexpr size_t kMaxCachedSteps = 1 << 17;  // about 10 MB of steps in all

  std::shared_ptr<const Plan> plan_for(const OpRequest& op);
  size_t chunk_for(const OpRequest& op);
  void compile(std::span<const OpRequest> ops, std::vector<Job>& jobs, bool grouped = false);
  Job job_for(const OpRequest& op, bool grouped);
  // group.cc: a group's jobs in the order that every pair of ranks agrees on.
  void compile_group(std::span<const OpRequest> ops, std::vector<Job>& jobs);
  // exchanges.cc: the worker's run of sends and receives number `run`.
  void drain_exchanges(uint64_t run);
  void exchange(uint64_t run, std::vector<Exchange>& mine);
  // What every operation does first and, when it fails, last.
  void check_usable();
  Error operation_failed(const Error& e, const char* what, OpRecord& record);
  // Marks the transport in use for an operation's span (see abort()); on
  // the way out, a failed or aborted communicator closes it.
  struct UsingTransport {
    explicit UsingTransport(Communicator& c) : c(c) { c.running_.store(true); }
    ~UsingTransport() {
      c.running_.store(false);
      if (c.aborted_.load() || c.has_failed_.load()) c.close_if_idle();  // peers blocked on us fail now
    }
    UsingTransport(const UsingTransport&) = delete;
    UsingTransport& operator=(const UsingTransport&) = delete;
    Communicator& c;
  };
  bool unnamed_allreduce(const OpRequest& op) const;
  FastPath* fast_path_for(const OpRequest& op, bool grouped) const;
  void execute(std::vector<Job>& jobs);
  // FastPathHost: what the fast paths (core/fastpath/) may use.
  int host_rank() const override { return rank_; }
  int host_nranks() const override { return nranks_; }
  uint64_t host_seq() const override { return seq_; }
  const std::vector<int>& others() const override { return others_; }
  transport::Transport& links() override { return *transport_; }
  FlightRecorder& flight_recorder() override { return *recorder_; }
  // Connects the pairs with `peers` not yet connected.
  void connect(const std::vector<int>& peers, const Deadline& deadline) override;
  void compile_own(const OpRequest& op, std::vector<Job>& jobs) override;
  void run_inside(std::vector<Job>& job, const void* send, void* recv, const Deadline& deadline,
                  OpRecord& record) override;
  // Records the first failure, then closes the connections (once).
  void failed(const Error& e);
  void close_if_idle();
  void place_this_rank();
  // meeting.cc: whether rank r's standby socket refuses connections (it is
  // gone; logged); where and under which secret `host` serves meetings.
  bool standby_gone(int r) const;
  bool host_gone(int host) const;  // looks again for a second: a dying host closes its listener last
  bootstrap::UniqueId standby_id(int host) const;
  // A client of rank r's standby store (a refusal: r is gone, kRemote).
  std::unique_ptr<bootstrap::StoreClient> standby_store(int r, const Deadline& deadline) const;
  // `arrived`: set once the host recorded this rank's arrival. A host that
  // is a `replacement` (one this rank had arrived at died) forms no
  // communicator without every rank not found gone (see shrink.cc).
  struct Meeting {
    int host;
    bool replacement = false;
    bool arrived = false;
  };
  // `joined`: where the members' new communicator meets (the host's word).
  std::string meet(Meeting& meeting, const std::vector<int>& mine, std::vector<bool>& out, const Deadline& deadline,
                   bootstrap::HostedId& joined);
  std::string decide_members(bootstrap::StoreClient& store, bool replacement, std::vector<bool>& out,
                             const Deadline& deadline, bootstrap::HostedId& joined);
  std::unique_ptr<Communicator> join_members(const bootstrap::UniqueId& id, const std::string& members);
  // meeting.cc: this rank's arrival at the host's store (served from here
  // when we are the host), under keys that begin with `keys`, with its
  // exclusions and what it `brought`; and the host's gathering of the
  // arrivals: what each rank brought, nullopt for those that did not come.
  std::unique_ptr<bootstrap::StoreClient> arrive(Meeting& meeting, const std::string& keys,
                                                 const std::vector<int>& mine, const std::string& brought);
  std::vector<std::optional<std::string>> gather(bootstrap::StoreClient& store, const std::string& keys,
                                                 bool& replacement, std::vector<bool>& out, const Deadline& deadline);
  // Until the counter `prefix<r>` is set for every rank still `waiting`, or
  // the deadline: looks without blocking on any one rank and probes those
  // it waits for. on_mark(r) runs as r's mark is found, and may stop the
  // wait for others. Returns the ranks found gone meanwhile.
  std::vector<bool> await_marks(bootstrap::StoreClient& store, const std::string& prefix, std::vector<bool>& waiting,
                                const Deadline& deadline, const std::function<void(size_t)>& on_mark);
  // agree.cc: one meeting of an agreement, and the host's decision.
  std::string agree_at(Meeting& meeting, const std::string& keys, int flag, const std::vector<int>& mine,
                       std::vector<bool>& out, std::string& carried);
  std::string decide_agreement(bootstrap::StoreClient& store, const std::string& keys, int flag, bool replacement,
                               std::string carried, std::vector<bool>& out, std::vector<bool>& came);
  void keep_decision(const std::string& keys, const std::string& decision);
  std::string kept_decision(int r, const std::string& keys);

  int rank_;
  int nranks_;
  std::string prefix_;
  bootstrap::UniqueId id_;
  int64_t timeout_ms_;
  size_t chunk_bytes_ = 0;         // COLL_CHUNK_BYTES, or the link class's once the peers are known
  bool chunk_bytes_set_ = false;   // by COLL_CHUNK_BYTES: then device operations take it too
  size_t device_chunk_bytes_ = 0;  // device operations moved in place: their transports', once asked
  // The fast paths that may take an operation, in the order they are asked.
  std::vector<std::unique_ptr<FastPath>> fast_paths_;
  std::unique_ptr<algo::Selector> selector_;
  std::unique_ptr<bootstrap::StoreClient> store_;
  std::unique_ptr<StorePairExchange> pairs_;
  std::unique_ptr<Router> transport_;
  std::vector<std::string> addresses_;
  // A listening socket each rank keeps in reserve: the lowest survivor of a
  // shrink serves the survivors' rendezvous on it (rank 0's store may have
  // died with rank 0). Everyone's address is learnt at init.
  net::Fd standby_;
  net::SockAddr standby_bound_;
  std::vector<std::string> standby_addresses_;
  int agreements_ = 0;  // keeps each agreement's keys apart at its host
  int shrinks_ = 0;
  bool not_in_but_alive_ = false;                     // a shrink hosted here left out live ranks: see ~Communicator
  mutable std::vector<char> found_gone_;              // by standby_gone, for good
  std::string shrink_keys_;                           // this shrink's, at its host's store
  bootstrap::StoreServer* standby_server_ = nullptr;  // serving meetings on standby_ (meeting.cc)
  std::vector<std::vector<int>> nodes_;               // the ranks of each node
  std::vector<int> ring_order_;                       // ranks grouped by node (COLL_TOPO_AWARE); empty: launcher order
  std::vector<int> spread_order_;                     // ranks taking turns between nodes; empty: launcher order
  std::vector<int> node_of_;                          // each rank's node (0, 1, ...); empty: one node
  algo::LinkModel node_link_{};                       // the cost of a message inside a node, when there are several
  std::map<PlanKey, std::shared_ptr<const Plan>> plans_;  // touched only by the calling thread
  size_t cached_steps_ = 0;
  Executor executor_;
  std::vector<Job> jobs_;  // the blocking path's, reused
  std::unique_ptr<ExchangeQueue> exchanges_;
  std::vector<int> others_;  // every rank but this one
  ChannelCounters counters_;
  uint64_t seq_ = 0;
  int splits_ = 0;
  std::atomic<bool> aborted_{false};  // also cancels the deadline of the operation in progress
  std::atomic<bool> revoked_{false};  // by this rank (aborted_ too)
  std::atomic<bool> running_{false};  // an operation is using the transport: abort must not close it
  std::atomic<bool> closed_{false};
  mutable std::mutex failure_mutex_;
  std::atomic<bool> has_failed_{false};  // read without the mutex on every call
  std::string failed_;                   // why an operation failed; then every later one fails
  coll_result_t failure_code_ = COLL_SUCCESS;
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<Worker> worker_;  // started by the first non-blocking operation
  // Host staging (staged.cc), one stager per memory kind: slots of
  // COLL_STAGING_CHUNK_BYTES, made at the first staged operation of the
  // kind; destroyed after worker_ (which uses them).
  std::unique_ptr<staging::Stager> stagers_[2];  // host (COLL_STAGE_HOST_BUFFERS), cuda
  int direct_device_ = -1;                       // moves_device_directly(), once known
  std::shared_ptr<Completion> run_direct(const OpRequest& op, staging::Stager& stager);
  void on_stream(staging::Stager& st, const staging::Ticket& ticket, Completion& done,
                 const std::function<void()>& body);
  size_t staging_bytes_ = 0;
  bool stage_host_buffers_ = false;
  // Registered buffers: each counts how often it was registered; the
  // router's registration (null where no transport registers memory). The
  // handle is the id, unique in the process and never reused: a released
  // handle cannot name a later registration, as a freed address would, nor
  // another communicator's.
  struct Registered {
    void* ptr;
    size_t bytes;
    int count;
    const transport::Registration* registration;
    uintptr_t id;
  };
  std::vector<Registered> registered_;
  void in_order(const std::function<void()>& task);
};

}  // namespace coll
