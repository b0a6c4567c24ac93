#include "transport/ib/device.h"

#include "base/config.h"
#include "base/error.h"
#include "base/fork_release.h"
#include "base/log.h"
#include "transport/ib/hca.h"
#include "transport/roce/gid.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>

#include <cstdlib>
#include <cstring>

namespace coll::transport::ib {
namespace {

double lane_gbit(uint8_t speed) {
  switch (speed) {
    case 1:
      return 2.5;  // SDR
    case 2:
      return 5.0;  // DDR
    case 4:
      return 10.0;  // QDR
    case 8:
      return 10.0;  // FDR10
    case 16:
      return 14.0;  // FDR
    case 32:
      return 25.0;  // EDR
    case 64:
      return 50.0;  // HDR
    case 128:
      return 100.0;  // NDR
    default:
      return 0;
  }
}

int lanes(uint8_t width) {
  switch (width) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

const char* state_name(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
    default:
      return "NOP";
  }
}

int mtu_bytes(ibv_mtu mtu) { return 128 << static_cast<int>(mtu); }

}  // namespace

double PortInfo::gbit_per_s() const { return lane_gbit(active_speed) * lanes(active_width); }

std::string PortInfo::describe() const {
  return str_cat(device, ":", static_cast<int>(port), " (", state_name(state), ", ",
                 ethernet() ? "Ethernet" : "InfiniBand", ", MTU ", mtu_bytes(active_mtu), ", ", gbit_per_s(), " Gbit/s",
                 ethernet() ? "" : str_cat(", LID ", lid), ")");
}

std::vector<PortInfo> discover_ports(const Verbs& v, std::string* why) {
  int n = 0;
  ibv_device** list = v.get_device_list(&n);
  if (list == nullptr) {
    *why = str_cat("ibv_get_device_list: ", std::strerror(errno), " (is the kernel's ib_uverbs loaded?)");
    return {};
  }
  std::vector<PortInfo> out;
  for (int i = 0; i < n; ++i) {
    const std::string name = v.get_device_name(list[i]);
    ibv_context* context = v.open_device(list[i]);
    if (context == nullptr) {
      log::info(log::kNet, "ib: cannot open ", name, ": ", std::strerror(errno));
      continue;
    }
    ibv_device_attr attr{};
    if (v.query_device(context, &attr) == 0) {
      for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (query_port(v, context, p, &pa) != 0) continue;
        out.push_back(PortInfo{name, p, pa.state, pa.active_mtu, pa.link_layer, pa.lid, pa.active_speed,
                               pa.active_width, pa.gid_tbl_len});
      }
    }
    v.close_device(context);
  }
  v.free_device_list(list);
  if (out.empty()) *why = n == 0 ? "no verbs device (ibv_get_device_list found none)" : "no port could be queried";
  return out;
}

const PortInfo& choose_port(const std::vector<PortInfo>& ports, const std::string& hca, const std::string& nearest,
                            int local_rank) {
  const HcaFilter filter = HcaFilter::parse(hca);
  std::vector<const PortInfo*> fit;
  std::string seen;
  for (const PortInfo& p : ports) {
    const bool selected = filter.selects(p.device, p.port);
    const bool active = p.state == IBV_PORT_ACTIVE;
    seen += str_cat("\n  ", p.describe(), !selected ? ": left out by COLL_IB_HCA" : !active ? ": not active" : "");
    if (selected && active) fit.push_back(&p);
  }
  if (fit.empty())
    fail(Code::kSystem, "ib: no active port", hca.empty() ? "" : str_cat(" that COLL_IB_HCA='", hca, "' selects"),
         "; found:", seen.empty() ? " nothing" : seen);
  for (const PortInfo* p : fit)
    if (!nearest.empty() && p->device == nearest) return *p;
  return *fit[static_cast<size_t>(local_rank < 0 ? 0 : local_rank) % fit.size()];
}

int launcher_local_rank() {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return -1;
}

Device::Device(const Verbs& verbs, const PortInfo& port) : verbs_(verbs), port_(port) {
  int n = 0;
  ibv_device** list = verbs_.get_device_list(&n);
  for (int i = 0; list != nullptr && i < n && context_ == nullptr; ++i)
    if (port_.device == verbs_.get_device_name(list[i])) context_ = verbs_.open_device(list[i]);
  if (list != nullptr) verbs_.free_device_list(list);
  if (context_ == nullptr) fail_errno(Code::kSystem, errno, str_cat("ib: opening ", port_.device), "ibv_open_device");
  if (verbs_.query_device(context_, &attr_) != 0) fail_errno(Code::kSystem, errno, port_.device, "ibv_query_device");
  pd_ = verbs_.alloc_pd(context_);
  if (pd_ == nullptr) fail_errno(Code::kSystem, errno, port_.device, "ibv_alloc_pd");
  choose_gid();
  const int flags = fcntl(context_->async_fd, F_GETFL);
  fcntl(context_->async_fd, F_SETFL, flags | O_NONBLOCK);
  // A child forked without exec must hold nothing of the device: through
  // its descriptors or mappings the context, and so this rank's queue
  // pairs, would outlive a killed rank, and its peers' keep-alives would
  // still be answered.
  fork_release::add(context_->cmd_fd);
  fork_release::add(context_->async_fd);
  fork_release::keep_mappings(kDeviceFiles);
  events_ = std::thread([this] { read_events(); });
}

Device::~Device() {
  stop_ = true;
  if (events_.joinable()) events_.join();
  if (pd_ != nullptr) verbs_.dealloc_pd(pd_);
  if (context_ != nullptr) {
    fork_release::forget(context_->cmd_fd);
    fork_release::forget(context_->async_fd);
    verbs_.close_device(context_);
  }
}

// The table as sysfs shows it, or, where sysfs cannot be read (some
// containers), as the library reports it entry by entry.
void Device::choose_gid() {
  address_changed_ = false;
  ibv_port_attr pa{};
  if (query_port(verbs_, context_, port_.port, &pa) == 0) {
    port_.state = pa.state, port_.lid = pa.lid, port_.active_mtu = pa.active_mtu;
    port_.gid_table_length = pa.gid_tbl_len;
  }
  const std::string where = str_cat(port_.device, " port ", static_cast<int>(port_.port));
  if (!port_.ethernet()) {
    gid_index_ = 0;
    verbs_.query_gid(context_, port_.port, 0, &gid_);
    gid_reason_ = "InfiniBand: addressed by LID";
    return;
  }
  std::vector<roce::GidEntry> table = roce::read_gid_table("/sys", port_.device, port_.port);
  if (table.empty() && verbs_.query_gid_ex != nullptr) {
    for (int i = 0; i < port_.gid_table_length; ++i) {
      ibv_gid_entry e{};
      roce::GidEntry g{i, {}, roce::GidType::kUnknown, ""};
      if (verbs_.query_gid_ex(context_, port_.port, static_cast<uint32_t>(i), &e, 0, sizeof(e)) == 0) {
        std::memcpy(g.raw.data(), e.gid.raw, 16);
        g.type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? roce::GidType::kRoceV2 : roce::GidType::kIbRoceV1;
        char name[IF_NAMESIZE] = "";
        if (e.ndev_ifindex != 0 && if_indextoname(e.ndev_ifindex, name) != nullptr) g.netdev = name;
      }
      table.push_back(g);
    }
  }
  roce::GidPolicy policy;
  policy.family = roce::parse_family(config::get_string("COLL_IB_ADDR_FAMILY"));
  policy.range = config::get_string("COLL_IB_ADDR_RANGE");
  policy.override_index = static_cast<int>(config::get_int("COLL_IB_GID_INDEX"));
  const roce::GidChoice choice = roce::choose_gid(table, policy, where);
  gid_index_ = choice.index;
  std::memcpy(gid_.raw, choice.entry.raw.data(), 16);
  gid_reason_ = choice.reason;
  log::info(log::kNet, "roce: ", where, ": GID ", choice.reason);
}

std::string Device::fatal() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fatal_;
}

void Device::read_events() {
  while (!stop_) {
    pollfd p{context_->async_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ibv_async_event event{};
    if (verbs_.get_async_event(context_, &event) != 0) continue;
    take_event(event);
    verbs_.ack_async_event(&event);
  }
}

// Fatal events fail the work pending on what they name (the transport's
// poll looks); the rest only change what a new connection must use.
void Device::take_event(const ibv_async_event& event) {
  const char* what = verbs_.event_type_str(event.event_type);
  uint32_t qp = 0;
  std::string on;
  switch (event.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
      qp = event.element.qp->qp_num;
      on = str_cat("QP ", qp);
      break;
    case IBV_EVENT_CQ_ERR:
      on = "the completion queue";
      break;
    case IBV_EVENT_DEVICE_FATAL:
      on = port_.device;
      break;
    case IBV_EVENT_PORT_ERR:
      if (event.element.port_num != port_.port) return;
      on = str_cat(port_.device, " port ", event.element.port_num, " (its link went down)");
      break;
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      address_changed_ = true;
      log::info(log::kNet, "ib: ", port_.device, ": ", what, ": the address is chosen again for new connections");
      return;
    default:
      log::info(log::kNet, "ib: ", port_.device, ": event ", what);
      return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fatal_.empty()) return;
  fatal_ = str_cat(what, " on ", on);
  fatal_qp_ = qp;
  log::warn(log::kNet, "ib: ", port_.device, ": ", fatal_);
}

}  // namespace coll::transport::ib
