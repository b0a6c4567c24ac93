// The verbs transport, for InfiniBand and RoCE alike (COLL_TRANSPORTS=ib):
// one device port per rank (device.h), one connection of reliable-connected
// queue pairs per peer (pair.h), memory registered through a bounded,
// counted cache for coll_comm_register and per operation otherwise.
//
// Where libibverbs or an active port is missing, the transport is off: it
// reaches nobody and the other transports carry the job, unless
// COLL_TRANSPORTS names ib, which is then an error saying why.
#pragma once

#include "transport/ib/device.h"
#include "transport/ib/pair.h"
#include "transport/registration_cache.h"
#include "transport/registry.h"
#include "transport/transport.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace coll::transport::ib {

// Why the ib transport cannot run on this machine, "" when it can: a port
// to use was found. Decided once per process.
std::string unavailable();

class IbTransport final : public Transport, public PairHost {
 public:
  explicit IbTransport(const Context& context);
  ~IbTransport() override;

  const Capabilities& capabilities() const override { return caps_; }
  std::string local_address() const override;
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, PairExchange& pairs,
               const Deadline& deadline) override;
  using Transport::post_recv;
  using Transport::post_send;
  RequestId post_send(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_recv(int peer, const Buffer& buffer, uint64_t tag) override;
  // Host memory; the handle is {address, rkey}.
  const Registration* register_memory(const void* data, size_t bytes, MemoryKind kind) override;
  void deregister(const Registration* registration) override;
  RequestId post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                     const uint64_t* notify) override;
  RequestId post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) override;
  RequestId post_notification(int peer, uint64_t* value) override;
  void poll(std::vector<RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string& peer_address) const override;

  // PairHost: what its pairs use.
  Device& device() override { return *device_; }
  Region region_for(const Buffer& buffer, bool remote_write) override;
  void release(Region& region) override;

 private:
  Pair& pair(int peer, const char* doing);
  void check_device();

  int rank_;
  std::string host_;
  Capabilities caps_;
  std::unique_ptr<Device> device_;  // null: off
  QpSettings settings_;
  int qps_per_conn_ = 1;
  // Before the cache: the cache's destructor deregisters through it.
  std::unordered_map<const Registration*, ibv_mr*> mrs_;
  RegistrationCache registrations_;
  std::map<int, std::unique_ptr<Pair>> pairs_;
  std::vector<std::string> addresses_;
  RequestId next_request_ = 1;
  bool closed_ = false;
};

}  // namespace coll::transport::ib
