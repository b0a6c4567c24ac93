// The one error model inside coll: an exception with a code and a message
// that carries its context (rank, peer, syscall, errno). The C ABI turns it
// into a coll_result_t and a last-error string (see c_api.cc).
#pragma once

#include <coll/coll.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace coll {

enum class Code {
  kInvalidArgument = COLL_INVALID_ARGUMENT,
  kInvalidUsage = COLL_INVALID_USAGE,
  kSystem = COLL_SYSTEM_ERROR,
  kRemote = COLL_REMOTE_ERROR,
  kTimeout = COLL_TIMEOUT,
  kInternal = COLL_INTERNAL_ERROR,
  kRevoked = COLL_REVOKED,
};

class Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

// Concatenates any streamable values into one string.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename... Args>
[[noreturn]] void fail(Code code, const Args&... args) {
  throw Error(code, str_cat(args...));
}

// A failed system call: the message ends with "<syscall>: <strerror> (errno N)".
[[noreturn]] void fail_errno(Code code, int err, const std::string& context, const char* syscall);

}  // namespace coll
