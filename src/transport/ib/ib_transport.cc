#include "transport/ib/ib_transport.h"

#include "base/config.h"
#include "base/error.h"
#include "base/fork_release.h"
#include "base/log.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "transport/roce/gid.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace coll::transport::ib {
namespace {

struct Found {
  const Verbs* verbs = nullptr;
  std::vector<PortInfo> ports;
  std::string why;  // empty: a port fits
};

const Found& found() {
  static const Found f = [] {
    Found out;
    out.verbs = load_verbs(&out.why);
    if (out.verbs == nullptr) return out;
    out.ports = discover_ports(*out.verbs, &out.why);
    if (out.ports.empty()) return out;
    try {
      choose_port(out.ports, config::get_string("COLL_IB_HCA"), "", 0);
    } catch (const Error& e) {
      out.why = e.what();
    }
    return out;
  }();
  return f;
}

// The NIC the topology pairs with this rank's GPU, "" when the node has
// none or the launcher did not say which local rank this is.
std::string nearest_nic(int local_rank) {
  const topo::Topology& t = topo::node_topology();
  if (local_rank < 0 || t.gpus.empty() || t.nics.empty()) return {};
  const std::vector<int> pairing = topo::nic_for_each_gpu(t);
  if (pairing.empty()) return {};
  const int nic = pairing[static_cast<size_t>(local_rank) % pairing.size()];
  const topo::Node& n = t.nodes[static_cast<size_t>(t.nics.at(static_cast<size_t>(nic)))];
  return n.names.empty() ? std::string() : n.names.front();
}

std::string host_part(const std::string& address) {
  const size_t a = address.find('|'), b = address.find('|', a + 1);
  return a == std::string::npos ? "?" : address.substr(a + 1, b - a - 1);
}

uint64_t handle_addr(const MemoryHandle& h) {
  uint64_t v = 0;
  std::memcpy(&v, h.bytes.data(), 8);
  return v;
}
uint32_t handle_rkey(const MemoryHandle& h) {
  uint32_t v = 0;
  std::memcpy(&v, h.bytes.data() + 8, 4);
  return v;
}

roce::GidBytes gid_bytes(const ibv_gid& gid) {
  roce::GidBytes out{};
  std::memcpy(out.data(), gid.raw, out.size());
  return out;
}

}  // namespace

std::string unavailable() { return found().why; }

IbTransport::IbTransport(const Context& context)
    : rank_(context.rank), host_(context.host_id), registrations_(64, [this](const Registration& r) {
        auto it = mrs_.find(&r);
        if (it == mrs_.end()) return;
        device_->verbs().dereg_mr(it->second);
        mrs_.erase(it);
      }) {
  caps_.name = "ib";
  caps_.one_sided = true;
  const Found& f = found();
  if (!f.why.empty()) {
    log::info(log::kNet, "ib: off: ", f.why);
    return;
  }
  const int local_rank = launcher_local_rank();
  const PortInfo& port = choose_port(f.ports, config::get_string("COLL_IB_HCA"), nearest_nic(local_rank), local_rank);
  device_ = std::make_unique<Device>(*f.verbs, port);
  settings_ = QpSettings::from_config();
  // Soft-RoCE (rdma_rxe: vendor 0xffffff, part 0) retries forever at a
  // retry count of 7, where hardware retries 7 times: a dead peer would go
  // unnoticed until COLL_TIMEOUT_MS.
  const bool soft_roce = device_->attr().vendor_id == 0xffffff && device_->attr().vendor_part_id == 0;
  if (soft_roce && settings_.retry_cnt == 7) {
    settings_.retry_cnt = 6;
    log::info(log::kNet, "ib: ", port.device, " is Soft-RoCE, which retries forever at COLL_IB_RETRY_CNT=7: using 6");
  }
  qps_per_conn_ = static_cast<int>(config::get_int("COLL_IB_QPS_PER_CONN"));
  if (qps_per_conn_ < 1 || qps_per_conn_ > 16)
    fail(Code::kInvalidArgument, "COLL_IB_QPS_PER_CONN=", qps_per_conn_, ": give 1 to 16");
  // The port's signalling rate; what the wire really gives is for the tuning file.
  const double gbit = port.gbit_per_s() > 0 ? port.gbit_per_s() : 10;
  caps_.link = LinkParameters{5.0, 8.0 / gbit, 1 << 20};
  log::info(log::kNet, "ib: rank ", rank_, " uses ", port.describe(), "; GID index ", device_->gid_index(), ": ",
            device_->gid_reason());
}

IbTransport::~IbTransport() { pairs_.clear(); }

std::string IbTransport::local_address() const {
  if (!device_) return {};
  return str_cat(
      "ib|", host_, "|", device_->port().device, ":", int{device_->port().port}, "|",
      device_->port().ethernet() ? roce::gid_text(gid_bytes(device_->gid())) : str_cat("lid ", device_->port().lid));
}

bool IbTransport::reaches(const std::string& peer_address) const {
  return device_ != nullptr && peer_address.rfind("ib|", 0) == 0;
}

// Both ends publish their queue pairs, move them to ready-to-send, then say
// "ready": nothing is written to a queue pair that cannot receive yet (its
// packets would be dropped and retried only after the QP timeout).
void IbTransport::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                          PairExchange& exchange, const Deadline& deadline) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": ib transport was closed (abort)");
  if (peers.empty()) return;  // the router asks every transport, for its share of the peers
  if (!device_) fail(Code::kInternal, "ib: rank ", rank_, " asked to connect while ib is off");
  addresses_ = addresses;
  if (device_->address_changed()) device_->choose_gid();
  std::vector<int> fresh;
  for (int peer : peers) {
    if (pairs_.count(peer) || std::find(fresh.begin(), fresh.end(), peer) != fresh.end()) continue;
    fresh.push_back(peer);
    pairs_[peer] = std::make_unique<Pair>(*this, rank_, peer, host_part(addresses.at(static_cast<size_t>(peer))),
                                          qps_per_conn_, settings_);
    exchange.publish(peer, pairs_[peer]->local_end().serialize());
  }
  if (!fresh.empty()) fork_release::keep_mappings(kDeviceFiles);  // their queues, just mapped (device.cc)
  for (int peer : fresh) {
    const std::string from = str_cat("rank ", peer);
    pairs_[peer]->connect(PairEnd::parse(exchange.fetch(peer, deadline), from));
    exchange.publish(peer, "ready", "ready");
  }
  for (int peer : fresh) exchange.fetch(peer, deadline, "ready");
}

Pair& IbTransport::pair(int peer, const char* doing) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": ib transport was closed (abort)");
  auto it = pairs_.find(peer);
  if (it == pairs_.end())
    fail(Code::kInternal, "ib: rank ", rank_, " ", doing, " rank ", peer, " without a connection");
  return *it->second;
}

RequestId IbTransport::post_send(int peer, const Buffer& buffer, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "sends to").post_send(id, buffer, tag);
  return id;
}

RequestId IbTransport::post_recv(int peer, const Buffer& buffer, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "receives from").post_recv(id, buffer, tag);
  return id;
}

const Registration* IbTransport::register_memory(const void* data, size_t bytes, MemoryKind kind) {
  if (kind != MemoryKind::kHost || !device_) return nullptr;
  return registrations_.acquire(data, bytes, kind, [this](Registration& out, uint64_t) {
    ibv_mr* mr = device_->verbs().reg_mr(device_->pd(), const_cast<void*>(out.base), out.bytes,
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == nullptr)
      fail_errno(Code::kSystem, errno, str_cat("ib: registering ", out.bytes, " bytes (is `ulimit -l` too low?)"),
                 "ibv_reg_mr");
    const uint64_t addr = reinterpret_cast<uintptr_t>(out.base);
    std::memcpy(out.handle.bytes.data(), &addr, 8);
    std::memcpy(out.handle.bytes.data() + 8, &mr->rkey, 4);
    mrs_[&out] = mr;
  });
}

void IbTransport::deregister(const Registration* registration) { registrations_.release(registration); }

// The user's registration where one covers the buffer (coll_comm_register:
// the user keeps that memory until deregistering it); otherwise a region
// made for this one operation, so that memory freed and mapped again at the
// same address is never reached through an old region.
Region IbTransport::region_for(const Buffer& buffer, bool remote_write) {
  const char* lo = static_cast<const char*>(buffer.data);
  for (const auto& [r, mr] : mrs_) {
    const char* base = static_cast<const char*>(r->base);
    if (lo >= base && buffer.bytes <= r->bytes && lo - base <= static_cast<ptrdiff_t>(r->bytes - buffer.bytes))
      return Region{mr, false};
  }
  const int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
  ibv_mr* mr = device_->verbs().reg_mr(device_->pd(), buffer.data, buffer.bytes, access);
  if (mr == nullptr)
    fail_errno(Code::kSystem, errno,
               str_cat("ib: rank ", rank_, " registering ", buffer.bytes, " bytes at ", buffer.data,
                       " (is `ulimit -l` too low?)"),
               "ibv_reg_mr");
  return Region{mr, true};
}

void IbTransport::release(Region& region) {
  if (region.owned && region.mr != nullptr) device_->verbs().dereg_mr(region.mr);
  region = Region{};
}

RequestId IbTransport::post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                                const uint64_t* notify) {
  check_remote_range(caps_, rank_, peer, true, local.bytes, offset, remote);
  RequestId id = next_request_++;
  pair(peer, "puts to").post_put(id, local, handle_addr(remote.handle) + offset, handle_rkey(remote.handle), notify);
  return id;
}

RequestId IbTransport::post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) {
  check_remote_range(caps_, rank_, peer, false, local.bytes, offset, remote);
  RequestId id = next_request_++;
  pair(peer, "gets from").post_get(id, local, handle_addr(remote.handle) + offset, handle_rkey(remote.handle));
  return id;
}

RequestId IbTransport::post_notification(int peer, uint64_t* value) {
  RequestId id = next_request_++;
  pair(peer, "waits for a notification from").post_notification(id, value);
  return id;
}

// A fatal event fails the pairs it names: the one owning the QP, or every
// pair when it names the port or the device.
void IbTransport::check_device() {
  const std::string event = device_->fatal();
  if (event.empty()) return;
  const uint32_t qp = device_->fatal_qp();
  for (auto& [peer, p] : pairs_)
    if (qp == 0 || p->owns_qp(qp)) p->fail_by_event(event);
}

// Completions and the peers' clear-to-send entries arrive in memory, not as
// events: spin, yielding, then napping once nothing has moved for a while.
void IbTransport::poll(std::vector<RequestId>& done, int timeout_ms) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": ib transport was closed (abort)");
  if (!device_) return;
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    check_device();
    bool moved = false;
    for (auto& [peer, p] : pairs_) moved = p->progress(done) || moved;
    const auto now = std::chrono::steady_clock::now();
    if (moved || now >= until) return;
    if (now - start < std::chrono::milliseconds(2))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string IbTransport::pending_with(int peer) const {
  auto it = pairs_.find(peer);
  return it == pairs_.end() ? str_cat("no ib connection to rank ", peer) : it->second->describe_pending();
}

void IbTransport::close(const Error* why) {
  for (auto& [peer, p] : pairs_) p->close(why);
  closed_ = true;
}

}  // namespace coll::transport::ib
