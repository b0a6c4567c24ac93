#include "base/error.h"

#include <cstring>

namespace coll {

void fail_errno(Code code, int err, const std::string& context, const char* syscall) {
  fail(code, context, ": ", syscall, ": ", std::strerror(err), " (errno ", err, ")");
}

}  // namespace coll
