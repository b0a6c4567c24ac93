#include "algorithms/collective.h"

namespace coll::algo {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kSend:
      return "send";
    case Collective::kRecv:
      return "recv";
  }
  return "?";
}

std::optional<Collective> collective_named(const std::string& name) {
  for (int c = 0; c < kNumCollectives; ++c)
    if (name == collective_name(static_cast<Collective>(c))) return static_cast<Collective>(c);
  return std::nullopt;
}

double buffer_bytes(const CollShape& s) {
  const double v = static_cast<double>(s.count * s.elem_size), n = s.nranks;
  switch (s.collective) {
    case Collective::kAllreduce:
      return 2 * v;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return (n + 1) * v;
    case Collective::kAlltoall:
      return 2 * n * v;
    case Collective::kReduce:  // the output is the root's alone
    case Collective::kBroadcast:
    case Collective::kSend:
    case Collective::kRecv:
      return v;
    case Collective::kBarrier:
      return 0;
  }
  return v;
}

}  // namespace coll::algo
