#include "core/router.h"

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

std::string host_id() {
  std::string configured = config::get_string("COLL_HOSTID");
  if (!configured.empty()) return configured;
  char name[256] = "?";
  gethostname(name, sizeof(name) - 1);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  std::getline(boot, boot_id);
  return std::string(name) + ":" + boot_id;
}

std::string segment_tag(const auth::Secret& secret, const std::string& prefix) {
  std::string tag = auth::to_hex(auth::secret_from_text("coll-shm:" + auth::to_hex(secret))).substr(0, 12);
  for (char c : prefix) tag += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return tag;
}

std::vector<std::unique_ptr<transport::Transport>> make_transports(int rank, int nranks, const auth::Secret& secret,
                                                                   const std::string& job_tag) {
  std::string setting = config::get_string("COLL_TRANSPORTS");
  std::vector<std::unique_ptr<transport::Transport>> out;
  std::stringstream in(setting);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "shm")
      out.push_back(transport::make_shm_transport(rank, nranks, job_tag, host_id()));
    else if (name == "tcp")
      out.push_back(transport::make_tcp_transport(rank, nranks, secret, host_id()));
    else
      fail(Code::kInvalidArgument, "COLL_TRANSPORTS='", setting, "': unknown transport '", name, "' (shm, tcp)");
  }
  if (out.empty()) fail(Code::kInvalidArgument, "COLL_TRANSPORTS='", setting, "' names no transport");
  return out;
}

Router::Router(int rank, std::vector<std::unique_ptr<transport::Transport>> transports)
    : rank_(rank), transports_(std::move(transports)) {
  caps_.name = "router";
  if (transports_.size() > kMaxTransports) fail(Code::kInvalidArgument, "COLL_TRANSPORTS: more than 8 transports");
  outstanding_.resize(transports_.size());
}

std::string Router::local_address() const {
  std::string out;
  for (const auto& t : transports_) out += (out.empty() ? "" : ";") + t->capabilities().name + "=" + t->local_address();
  return out + ";host=" + host_id();
}

std::string Router::host_of(const std::string& address) { return part_for(address, "host"); }

size_t Router::choose(int peer, const std::string& address) const {
  for (size_t i = 0; i < transports_.size(); ++i) {
    std::string part = part_for(address, transports_[i]->capabilities().name);
    if (!part.empty() && transports_[i]->reaches(part)) return i;
  }
  fail(Code::kInvalidUsage, "rank ", rank_, ": no transport in COLL_TRANSPORTS='",
       config::get_string("COLL_TRANSPORTS"), "' reaches rank ", peer, " (its transports: ", address, ")");
}

void Router::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                     const Deadline& deadline) {
  // Every collective calls this; after the first time its peers are known.
  auto up = [&](int p) { return static_cast<size_t>(p) < connected_.size() && connected_[static_cast<size_t>(p)]; };
  if (std::all_of(peers.begin(), peers.end(), up)) return;
  route_.resize(addresses.size(), kNoRoute);
  connected_.resize(addresses.size(), false);
  std::vector<std::vector<int>> per(transports_.size());
  for (int peer : peers) {
    uint8_t& route = route_.at(static_cast<size_t>(peer));
    if (route == kNoRoute) {
      route = static_cast<uint8_t>(choose(peer, addresses.at(static_cast<size_t>(peer))));
      log::info(log::kNet, "rank ", rank_, " -> rank ", peer, ": ", transports_[route]->capabilities().name);
    }
    per[route].push_back(peer);
  }
  for (size_t i = 0; i < transports_.size(); ++i) {
    std::vector<std::string> mine;
    for (const auto& a : addresses) mine.push_back(part_for(a, transports_[i]->capabilities().name));
    transports_[i]->connect(per[i], mine, deadline);
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

size_t Router::route(int peer) const {
  if (!routed(peer)) fail(Code::kInternal, "rank ", rank_, ": no connection to rank ", peer);
  return route_[static_cast<size_t>(peer)];
}

transport::RequestId Router::post_send(int peer, const void* data, size_t bytes, uint64_t tag) {
  size_t i = route(peer);
  transport::RequestId inner = transports_[i]->post_send(peer, data, bytes, tag);
  ++outstanding_[i];
  return inner * kMaxTransports + i;
}

transport::RequestId Router::post_recv(int peer, void* data, size_t bytes, uint64_t tag) {
  size_t i = route(peer);
  transport::RequestId inner = transports_[i]->post_recv(peer, data, bytes, tag);
  ++outstanding_[i];
  return inner * kMaxTransports + i;
}

bool Router::handle_for(const void* data, size_t bytes, transport::MemoryHandle* handle) const {
  for (const auto& t : transports_)
    if (t->handle_for(data, bytes, handle)) return true;
  return false;
}

bool Router::can_access(int peer) const { return routed(peer) && transports_[route(peer)]->can_access(peer); }

char* Router::access(int peer, const transport::MemoryHandle& handle, size_t bytes, Access how) {
  return transports_[route(peer)]->access(peer, handle, bytes, how);
}

size_t Router::board_bytes() const { return board_ == kNoRoute ? 0 : transports_[board_]->board_bytes(); }

transport::Transport& Router::board() const {
  if (board_ == kNoRoute) fail(Code::kInternal, "rank ", rank_, ": the board, but no transport serves every peer");
  return *transports_[board_];
}

uint32_t Router::board_post(const BoardBlock& block, size_t bytes) { return board().board_post(block, bytes); }

bool Router::board_wait(int peer, uint32_t round, uint64_t want_tag, int timeout_ms) {
  return board().board_wait(peer, round, want_tag, timeout_ms);
}

transport::Transport::BoardBlock Router::board_block(int peer, uint32_t round) const {
  return board().board_block(peer, round);
}

bool Router::delivers_pieces_from(int peer) const { return transports_[route(peer)]->delivers_pieces_from(peer); }

transport::RequestId Router::post_recv_sink(int peer, size_t bytes, uint64_t tag, const transport::Sink& sink) {
  size_t i = route(peer);
  transport::RequestId inner = transports_[i]->post_recv_sink(peer, bytes, tag, sink);
  ++outstanding_[i];
  return inner * kMaxTransports + i;
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
  return transports_[route(peer)]->pending_with(peer);
}

void Router::close(const Error* why) {
  for (auto& t : transports_) t->close(why);
}

std::string Router::slowest_for(const std::vector<std::string>& addresses) const {
  size_t worst = 0;
  for (size_t r = 0; r < addresses.size(); ++r)
    if (static_cast<int>(r) != rank_) worst = std::max(worst, choose(static_cast<int>(r), addresses[r]));
  return transports_[worst]->capabilities().name;
}

}  // namespace coll
