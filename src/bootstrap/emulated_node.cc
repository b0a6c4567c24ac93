#include "bootstrap/emulated_node.h"

#include "base/config.h"
#include "base/error.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace coll::bootstrap {

std::vector<EmulatedNode> emulated_nodes() {
  std::vector<EmulatedNode> nodes;
  std::stringstream in(config::get_string("COLL_NETNS_NODES"));
  std::string item;
  while (in >> item) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      fail(Code::kInvalidArgument, "COLL_NETNS_NODES: '", item, "' is not netns:ip");
    nodes.push_back({item.substr(0, colon), item.substr(colon + 1)});
  }
  return nodes;
}

void enter_emulated_node(const EmulatedNode& node) {
  const std::string path = "/var/run/netns/" + node.netns;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(Code::kSystem, errno, "emulated node: opening " + path, "open");
  int rc = setns(fd, CLONE_NEWNET);
  int err = errno;
  close(fd);
  if (rc != 0) fail_errno(Code::kSystem, err, "emulated node: entering " + node.netns + " (root is needed)", "setns");
  setenv("COLL_HOSTID", node.netns.c_str(), 1);
  setenv("COLL_SOCKET_IFNAME", (std::string("=") + kEmulatedInterface).c_str(), 1);
}

}  // namespace coll::bootstrap
