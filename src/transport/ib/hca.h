// COLL_IB_HCA: which InfiniBand devices and ports coll may use, in the syntax
// of NCCL_IB_HCA so that settings carry over. Pure text: no libibverbs here.
//
//   mlx5_0:1,mlx5_1   devices whose names start with mlx5_0 (port 1 only) or mlx5_1
//   =mlx5_0,mlx5_1    exactly these device names
//   ^mlx5_2           every device except those starting with mlx5_2
//   ^=mlx5_2:1        every device and port except port 1 of mlx5_2
//   (empty)           every device and port
#pragma once

#include <string>
#include <vector>

namespace coll::transport::ib {

struct HcaEntry {
  std::string device;
  int port = -1;  // -1: every port of the device
};

struct HcaFilter {
  bool exclude = false;           // leading '^': select everything but the entries
  bool exact = false;             // leading '=': whole names, not prefixes
  std::vector<HcaEntry> entries;  // empty: everything is selected

  // Throws Error(kInvalidArgument) naming COLL_IB_HCA, the bad entry and the syntax.
  static HcaFilter parse(const std::string& text);

  bool selects(const std::string& device, int port) const;

  // One phrase for log lines, e.g. "every HCA except names starting with mlx5_2 (port 1)".
  std::string describe() const;
};

}  // namespace coll::transport::ib
