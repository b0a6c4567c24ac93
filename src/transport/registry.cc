#include "transport/registry.h"

#include "base/config.h"
#include "base/error.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#ifdef COLL_WITH_SHM
#include "transport/nvlink/nvlink_transport.h"
#include "transport/shm/process.h"
#include "transport/shm/region.h"
#include "transport/shm/shm_transport.h"
#endif
#ifdef COLL_WITH_TCP
#include "transport/tcp/tcp_transport.h"
#endif
#ifdef COLL_WITH_IB
#include "transport/ib/ib_transport.h"
#endif

namespace coll::transport {

namespace {
bool named_in_setting(const std::string& name) {
  std::stringstream in(config::get_string("COLL_TRANSPORTS"));
  for (std::string n; std::getline(in, n, ',');)
    if (n == name) return true;
  return false;
}
}  // namespace

const std::vector<Entry>& registered() {
  static const std::vector<Entry> entries = {
#ifdef COLL_WITH_SHM
      {"shm", "shared memory between the ranks of one node",
       [](const Context& c) -> std::unique_ptr<Transport> {
         return std::make_unique<shm::ShmTransport>(c.rank, c.nranks, c.job_tag, c.host_id);
       },
       [](size_t bytes, const char* name) { return shm::allocate_region(bytes, name); }, &shm::free_region},
      // Only where named: it touches the GPU as it starts.
      {"nvlink", "device buffers between the GPUs of one node (CUDA IPC, copy engine), or ranks sharing one GPU",
       [](const Context& c) -> std::unique_ptr<Transport> {
         const std::string why = nvlink::unavailable();
         if (!why.empty())
           fail(Code::kSystem, "rank ", c.rank, ": COLL_TRANSPORTS names nvlink, but it cannot run here: ", why);
         // Its frames go over a shared-memory transport of its own, with segments of their own names.
         return std::make_unique<nvlink::NvlinkTransport>(
             c, std::make_unique<shm::ShmTransport>(c.rank, c.nranks, c.job_tag + "nv", c.host_id));
       },
       nullptr, nullptr, &nvlink::unavailable, false},
#endif
#ifdef COLL_WITH_IB
      {"ib", "verbs: InfiniBand and RoCE",
       [](const Context& c) -> std::unique_ptr<Transport> {
         const std::string why = ib::unavailable();
         if (!why.empty() && named_in_setting("ib"))
           fail(Code::kSystem, "rank ", c.rank, ": COLL_TRANSPORTS names ib, but it cannot run here: ", why);
         return std::make_unique<ib::IbTransport>(c);
       },
       nullptr, nullptr, &ib::unavailable},
#endif
#ifdef COLL_WITH_TCP
      {"tcp", "TCP sockets, any network",
       [](const Context& c) -> std::unique_ptr<Transport> {
         return std::make_unique<tcp::TcpTransport>(c.rank, c.nranks, c.secret, c.host_id);
       }},
#endif
  };
  return entries;
}

namespace {
// Without a transport that allocates: plain pages, remembered so that a
// pointer that did not come from coll_mem_alloc is told apart.
std::vector<void*>& allocated() {
  static std::vector<void*> pointers;
  return pointers;
}
std::mutex allocated_mutex;

std::string names() {
  std::string out;
  for (const Entry& e : registered()) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}
}  // namespace

const Entry& find(const std::string& name, const std::string& setting) {
  for (const Entry& e : registered())
    if (name == e.name) return e;
  fail(Code::kInvalidArgument, "COLL_TRANSPORTS='", setting.empty() ? name : setting, "': unknown transport '", name,
       "' (this build has: ", names(), ")");
}

std::vector<std::unique_ptr<Transport>> make_transports(const Context& context) {
  std::string setting = config::get_string("COLL_TRANSPORTS");
  std::vector<std::unique_ptr<Transport>> out;
  if (setting.empty()) {
    for (const Entry& e : registered())
      if (e.by_default) out.push_back(e.make(context));
  } else {
    std::stringstream in(setting);
    std::string name;
    while (std::getline(in, name, ',')) out.push_back(find(name, setting).make(context));
  }
  if (out.empty()) fail(Code::kInvalidArgument, "COLL_TRANSPORTS='", setting, "' names no transport");
  return out;
}

void* allocate_shareable(size_t bytes, const char* name) {
  for (const Entry& e : registered())
    if (e.allocate != nullptr) return e.allocate(bytes, name);
  void* ptr = nullptr;
  if (posix_memalign(&ptr, 4096, bytes == 0 ? 1 : bytes) != 0) fail(Code::kSystem, "cannot allocate ", bytes, " bytes");
  std::lock_guard<std::mutex> lock(allocated_mutex);
  allocated().push_back(ptr);
  return ptr;
}

bool free_shareable(void* ptr) {
  for (const Entry& e : registered())
    if (e.release != nullptr) return e.release(ptr);
  std::lock_guard<std::mutex> lock(allocated_mutex);
  auto& mine = allocated();
  auto it = std::find(mine.begin(), mine.end(), ptr);
  if (it == mine.end()) return false;
  mine.erase(it);
  std::free(ptr);
  return true;
}

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

std::string job_tag(const auth::Secret& secret, const std::string& prefix) {
  std::string tag = auth::to_hex(auth::secret_from_text("coll-shm:" + auth::to_hex(secret))).substr(0, 12);
  for (char c : prefix) tag += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return tag;
}

namespace {

// coll's segments in /dev/shm (coll-<tag>-r<rank>-p<pid>-n<pid namespace>) that `match` accepts.
template <typename Match>
std::vector<std::string> segments_where(const Match& match) {
  std::vector<std::string> found;
  std::error_code ec;
  // Stepped with an error code: a failing read of the folder ends the list, not the program.
  for (std::filesystem::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("coll-", 0) == 0 && match(name)) found.push_back(std::move(name));
  }
  return found;
}

}  // namespace

std::vector<std::string> segments_left(const auth::Secret& secret) {
  const std::string prefix = "coll-" + job_tag(secret, "");
  return segments_where([&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

std::vector<std::string> segments_left_by(const std::vector<int>& pids) {
#ifdef COLL_WITH_SHM
  std::set<std::string> ends;
  for (int pid : pids)
    if (pid > 0) ends.insert(shm::segment_maker(pid));
  return segments_where([&](const std::string& name) {
    const size_t at = name.rfind("-p");
    return at != std::string::npos && ends.count(name.substr(at)) > 0;
  });
#else
  (void)pids;
  return {};  // no segments
#endif
}

}  // namespace coll::transport
