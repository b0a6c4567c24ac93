#include "algorithms/schedule.h"

#include <algorithm>
#include <sstream>

namespace coll::algo {

std::vector<int> Schedule::peers() const {
  std::vector<int> out;
  for (const Step& s : steps)
    if (s.peer >= 0) out.push_back(s.peer);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kRecvReduce:
      return "recv-reduce";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kDivide:
      return "divide";
  }
  return "?";
}

namespace {
std::string region(const Region& r, size_t bytes) {
  std::ostringstream out;
  out << (r.buffer == BufferId::kSend   ? "send"
          : r.buffer == BufferId::kRecv ? "recv"
                                        : "scratch")
      << "[" << r.offset << ".." << r.offset + bytes << ")";
  return out.str();
}
}  // namespace

std::string to_string(const Schedule& schedule) {
  std::ostringstream out;
  out << "# " << schedule.algorithm << ", " << schedule.steps.size() << " steps\n";
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const Step& s = schedule.steps[i];
    out << i << " " << op_kind_name(s.kind);
    switch (s.kind) {
      case OpKind::kSend:
        out << " to " << s.peer << " " << region(s.src, s.bytes);
        break;
      case OpKind::kRecv:
        out << " from " << s.peer << " -> " << region(s.dst, s.bytes);
        break;
      case OpKind::kRecvReduce:
        out << " from " << s.peer << (s.received_first ? " (its data first) " : " ") << region(s.src, s.bytes) << " -> "
            << region(s.dst, s.bytes);
        break;
      case OpKind::kCopy:
      case OpKind::kReduce:
        out << " " << region(s.src, s.bytes) << " -> " << region(s.dst, s.bytes);
        break;
      case OpKind::kDivide:
        out << " " << region(s.dst, s.bytes);
        break;
    }
    if (!s.deps.empty()) {
      out << " after";
      for (size_t d = 0; d < s.deps.size(); ++d) out << (d ? "," : " ") << s.deps[d];
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace coll::algo
