// The verbs devices of this node: their ports as discovered (state, MTU,
// link layer, speed, width), the one this rank uses (COLL_IB_HCA, then the
// NIC nearest its GPU or CPU), and that device opened: context, protection
// domain, the port's address (LID, or the GID chosen on RoCE), and a thread
// that reads the device's asynchronous events.
#pragma once

#include "transport/ib/verbs.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coll::transport::ib {

// Where a verbs device's files are (its mappings are named by them).
constexpr const char* kDeviceFiles = "/dev/infiniband/";

// A port's attributes as the device reported them: what the QP attributes
// are made from (qp_attrs.h), and what tests record.
struct PortInfo {
  std::string device;  // "mlx5_0", "rxe0"
  uint8_t port = 1;
  ibv_port_state state = IBV_PORT_NOP;
  ibv_mtu active_mtu = IBV_MTU_1024;
  uint8_t link_layer = IBV_LINK_LAYER_INFINIBAND;
  uint16_t lid = 0;
  uint8_t active_speed = 0;  // the IB spec's codes (1: SDR .. 128: NDR)
  uint8_t active_width = 0;  // 1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x
  int gid_table_length = 0;

  bool ethernet() const { return link_layer == IBV_LINK_LAYER_ETHERNET; }
  double gbit_per_s() const;  // the signalling rate, speed times width
  // "rxe0:1 (ACTIVE, Ethernet, MTU 1024, 2.5 Gbit/s)"
  std::string describe() const;
};

// Every port of every device, or empty with the reason in *why.
std::vector<PortInfo> discover_ports(const Verbs& verbs, std::string* why);

// The port this rank uses among `ports`: active ones that COLL_IB_HCA
// selects; among several, the NIC the topology pairs with this rank's GPU
// (`nearest`, "" when none), else the local_rank'th. Throws kSystem listing
// what was found and why each was left out when none fits.
const PortInfo& choose_port(const std::vector<PortInfo>& ports, const std::string& hca, const std::string& nearest,
                            int local_rank);

// This rank's local rank as its launcher gave it (torchrun, Open MPI,
// Slurm), -1 when none did.
int launcher_local_rank();

// The chosen device, opened.
class Device {
 public:
  Device(const Verbs& verbs, const PortInfo& port);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Verbs& verbs() const { return verbs_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const ibv_device_attr& attr() const { return attr_; }
  const PortInfo& port() const { return port_; }
  // The port's address: the GID in use (RoCE: chosen, IB: index 0).
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  const std::string& gid_reason() const { return gid_reason_; }
  // Reads the GID table again and chooses anew (after a port event).
  void choose_gid();
  // Whether a GID or port event came since the last choice.
  bool address_changed() const { return address_changed_; }

  // The first fatal asynchronous event ("" while none): what happened,
  // to what (the port, the QP number), as the device said it.
  std::string fatal() const;
  // The QP number a fatal event named (0: the device or port).
  uint32_t fatal_qp() const { return fatal_qp_; }

 private:
  void read_events();
  void take_event(const ibv_async_event& event);

  const Verbs& verbs_;
  PortInfo port_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_device_attr attr_{};
  int gid_index_ = 0;
  ibv_gid gid_{};
  std::string gid_reason_;
  std::atomic<bool> address_changed_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> fatal_qp_{0};
  mutable std::mutex mutex_;
  std::string fatal_;
  std::thread events_;
};

}  // namespace coll::transport::ib
