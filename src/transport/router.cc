#include "transport/router.h"

#include "transport/registry.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace coll {
namespace {

// The part of a router address that belongs to transport `name`.
std::string part_for(const std::string& address, const std::string& name) {
  std::stringstream in(address);
  std::string item;
  while (std::getline(in, item, ';'))
    if (item.rfind(name + "=", 0) == 0) return item.substr(name.size() + 1);
  return "";
}

}  // namespace

Router::Router(int rank, std::vector<std::unique_ptr<transport::Transport>> transports)
    : rank_(rank), transports_(std::move(transports)) {
  caps_.name = "router";
  if (transports_.size() > kMaxTransports) fail(Code::kInvalidArgument, "COLL_TRANSPORTS: more than 8 transports");
  outstanding_.resize(transports_.size());
}

std::string Router::local_address() const {
  std::string out;
  for (const auto& t : transports_) out += (out.empty() ? "" : ";") + t->capabilities().name + "=" + t->local_address();
  return out + ";host=" + transport::host_id();
}

std::string Router::host_of(const std::string& address) { return part_for(address, "host"); }

size_t Router::choose(int peer, const std::string& address, bool device) const {
  for (size_t i = 0; i < transports_.size(); ++i) {
    const transport::Capabilities& caps = transports_[i]->capabilities();
    if (device ? !caps.gpu_memory : caps.device_only) continue;
    std::string part = part_for(address, caps.name);
    if (!part.empty() && transports_[i]->reaches(part)) return i;
  }
  if (device) return kNoRoute;
  fail(Code::kInvalidUsage, "rank ", rank_, ": no transport in COLL_TRANSPORTS='",
       config::get_string("COLL_TRANSPORTS"), "' reaches rank ", peer, " (its transports: ", address, ")");
}

namespace {
// A transport's view of the exchange: its blobs under its own name.
class Named final : public transport::PairExchange {
 public:
  Named(transport::PairExchange& inner, std::string name) : inner_(inner), name_(std::move(name)) {}
  void publish(int peer, const std::string& blob, const std::string& round) override {
    inner_.publish(peer, name_ + "=" + blob, round);
  }
  std::string fetch(int peer, const Deadline& deadline, const std::string& round) override {
    std::string got = inner_.fetch(peer, deadline, round);
    if (got.rfind(name_ + "=", 0) != 0)
      fail(Code::kRemote, "rank ", peer, " sent connection data for '", got.substr(0, got.find('=')), "', not '", name_,
           "': the ranks chose different transports for the pair (is COLL_TRANSPORTS the same on all?)");
    return got.substr(name_.size() + 1);
  }
  bool gone(int peer) override { return inner_.gone(peer); }

 private:
  transport::PairExchange& inner_;
  std::string name_;
};
}  // namespace

void Router::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                     transport::PairExchange& pairs, const Deadline& deadline) {
  // Every collective calls this; after the first time its peers are known.
  auto up = [&](int p) { return static_cast<size_t>(p) < connected_.size() && connected_[static_cast<size_t>(p)]; };
  if (std::all_of(peers.begin(), peers.end(), up)) return;
  route_.resize(addresses.size(), kNoRoute);
  device_route_.resize(addresses.size(), kNoRoute);
  connected_.resize(addresses.size(), false);
  std::vector<std::vector<int>> per(transports_.size());
  for (int peer : peers) {
    uint8_t& route = route_.at(static_cast<size_t>(peer));
    if (route == kNoRoute) {
      route = static_cast<uint8_t>(choose(peer, addresses.at(static_cast<size_t>(peer))));
      log::info(log::kNet, "rank ", rank_, " -> rank ", peer, ": ", transports_[route]->capabilities().name);
    }
    per[route].push_back(peer);
    uint8_t& device = device_route_[static_cast<size_t>(peer)];
    if (device == kNoRoute) {
      const size_t d = choose(peer, addresses[static_cast<size_t>(peer)], true);
      device = static_cast<uint8_t>(d == kNoRoute ? route : d);
      if (device != route)
        log::info(log::kNet, "rank ", rank_, " -> rank ", peer,
                  ", device buffers: ", transports_[device]->capabilities().name);
    }
    if (device != route) per[device].push_back(peer);
  }
  for (size_t i = 0; i < transports_.size(); ++i) {
    std::vector<std::string> mine;
    for (const auto& a : addresses) mine.push_back(part_for(a, transports_[i]->capabilities().name));
    Named named(pairs, transports_[i]->capabilities().name);
    transports_[i]->connect(per[i], mine, named, deadline);
  }
  for (int peer : peers) connected_[static_cast<size_t>(peer)] = true;
  // The board is one transport's: usable when that one serves every peer.
  board_ = kNoRoute;
  for (size_t r = 0; r < route_.size(); ++r) {
    if (static_cast<int>(r) == rank_) continue;
    if (!connected_[r] || (board_ != kNoRoute && route_[r] != board_)) {
      board_ = kNoRoute;
      break;
    }
    board_ = route_[r];
  }
}

bool Router::routed(int peer) const {
  return static_cast<size_t>(peer) < route_.size() && route_[static_cast<size_t>(peer)] != kNoRoute;
}

size_t Router::route(int peer, MemoryKind kind) const {
  if (!routed(peer)) fail(Code::kInternal, "rank ", rank_, ": no connection to rank ", peer);
  return (kind == MemoryKind::kHost ? route_ : device_route_)[static_cast<size_t>(peer)];
}

transport::RequestId Router::post_send(int peer, const transport::Buffer& buffer, uint64_t tag) {
  size_t i = route(peer, buffer.kind);
  return outer(transports_[i]->post_send(peer, inner_buffer(buffer, i), tag), i);
}

transport::RequestId Router::post_recv(int peer, const transport::Buffer& buffer, uint64_t tag) {
  size_t i = route(peer, buffer.kind);
  return outer(transports_[i]->post_recv(peer, inner_buffer(buffer, i), tag), i);
}

transport::Buffer Router::inner_buffer(const transport::Buffer& buffer, size_t i) const {
  if (buffer.registration == nullptr) return buffer;
  auto it = registrations_.find(buffer.registration);
  if (it == registrations_.end())
    fail(Code::kInvalidArgument, "rank ", rank_, ": a buffer's registration is not one of this communicator's");
  transport::Buffer inner = buffer;
  inner.registration = it->second->inner[i];
  return inner;
}

const transport::Registration* Router::register_memory(const void* data, size_t bytes, transport::MemoryKind kind) {
  for (auto& [outer, c] : registrations_)
    if (outer->base == data && outer->bytes == bytes && outer->kind == kind) {
      ++c->count;
      return outer;
    }
  auto c = std::make_unique<Composite>();
  c->outer = transport::Registration{data, bytes, kind, {}};
  bool any = false;
  for (auto& t : transports_) {
    c->inner.push_back(t->register_memory(data, bytes, kind));
    if (c->inner.back() != nullptr && !any) c->outer.handle = c->inner.back()->handle, any = true;
  }
  if (!any) return nullptr;
  const transport::Registration* key = &c->outer;
  registrations_[key] = std::move(c);
  return key;
}

void Router::deregister(const transport::Registration* registration) {
  auto it = registrations_.find(registration);
  if (it == registrations_.end())
    fail(Code::kInvalidArgument, "rank ", rank_, ": deregister of a registration this communicator did not make");
  if (--it->second->count > 0) return;
  for (size_t i = 0; i < transports_.size(); ++i)
    if (it->second->inner[i] != nullptr) transports_[i]->deregister(it->second->inner[i]);
  registrations_.erase(it);
}

transport::MemoryHandle Router::handle_for_peer(const transport::Registration* registration, int peer) const {
  auto it = registrations_.find(registration);
  if (it == registrations_.end()) fail(Code::kInvalidArgument, "rank ", rank_, ": not a registration of ours");
  const transport::Registration* inner = it->second->inner[route(peer)];
  if (inner == nullptr)
    fail(Code::kInvalidUsage, "rank ", rank_, ": ", transports_[route(peer)]->capabilities().name,
         ", which serves rank ", peer, ", could not register this memory");
  return inner->handle;
}

transport::RequestId Router::post_put(int peer, const transport::Buffer& local, const transport::RemoteMemory& remote,
                                      size_t offset, const uint64_t* notify) {
  size_t i = route(peer, local.kind);
  return outer(transports_[i]->post_put(peer, inner_buffer(local, i), remote, offset, notify), i);
}

transport::RequestId Router::post_get(int peer, const transport::Buffer& local, const transport::RemoteMemory& remote,
                                      size_t offset) {
  size_t i = route(peer, local.kind);
  return outer(transports_[i]->post_get(peer, inner_buffer(local, i), remote, offset), i);
}

transport::RequestId Router::post_notification(int peer, uint64_t* value) {
  size_t i = route(peer);
  return outer(transports_[i]->post_notification(peer, value), i);
}

bool Router::handle_for(const void* data, size_t bytes, transport::MemoryHandle* handle) const {
  for (const auto& t : transports_) {
    transport::PeerAccess* access = t->peer_access();
    if (access != nullptr && access->handle_for(data, bytes, handle)) return true;
  }
  return false;
}

bool Router::can_access(int peer) const {
  if (!routed(peer)) return false;
  transport::PeerAccess* access = transports_[route(peer)]->peer_access();
  return access != nullptr && access->can_access(peer);
}

char* Router::access(int peer, const transport::MemoryHandle& handle, size_t bytes, Access how) {
  transport::PeerAccess* access = transports_[route(peer)]->peer_access();
  if (access == nullptr)
    fail(Code::kInternal, "rank ", rank_, ": access to rank ", peer, "'s memory, but its transport has no peer access");
  return access->access(peer, handle, bytes, how);
}

transport::Board* Router::board() { return board_ == kNoRoute ? nullptr : transports_[board_]->board(); }

bool Router::delivers_pieces_from(int peer) const { return transports_[route(peer)]->delivers_pieces_from(peer); }

transport::RequestId Router::post_recv_sink(int peer, size_t bytes, uint64_t tag, const transport::Sink& sink) {
  size_t i = route(peer);
  return outer(transports_[i]->post_recv_sink(peer, bytes, tag, sink), i);
}

// Polls every transport with work; when several have work, none may sleep
// long on its own wait, so each gets a slice.
void Router::poll(std::vector<transport::RequestId>& done, int timeout_ms) {
  size_t active = 0, last = 0;
  for (size_t i = 0; i < transports_.size(); ++i)
    if (outstanding_[i] > 0) ++active, last = i;
  if (active == 0) return;
  const int slice = active == 1 ? timeout_ms : std::min(timeout_ms, 1);
  for (size_t i = 0; i <= last; ++i) {
    if (outstanding_[i] == 0) continue;
    inner_done_.clear();
    // Only the last transport waits: earlier ones just make progress.
    transports_[i]->poll(inner_done_, i == last ? slice : 0);
    for (transport::RequestId inner : inner_done_) done.push_back(inner * kMaxTransports + i);
    outstanding_[i] -= inner_done_.size();
  }
}

std::string Router::pending_with(int peer) const {
  if (!routed(peer)) return str_cat("no connection to rank ", peer);
  std::string out = transports_[route(peer)]->pending_with(peer);
  if (const size_t d = route(peer, MemoryKind::kCuda); d != route(peer)) {
    const std::string device = transports_[d]->pending_with(peer);
    if (!device.empty()) out += (out.empty() ? "" : "; ") + device;
  }
  return out;
}

void Router::close(const Error* why) {
  for (auto& t : transports_) t->close(why);
}

const transport::Capabilities& Router::slowest_for(const std::vector<std::string>& addresses) const {
  size_t worst = 0;
  for (size_t r = 0; r < addresses.size(); ++r)
    if (static_cast<int>(r) != rank_) worst = std::max(worst, choose(static_cast<int>(r), addresses[r]));
  return transports_[worst]->capabilities();
}

std::vector<const transport::Capabilities*> Router::all_capabilities() const {
  std::vector<const transport::Capabilities*> out;
  for (const auto& t : transports_) out.push_back(&t->capabilities());
  return out;
}

}  // namespace coll
