// printf onto the end of a string, for the SVG and text writers.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace coll::sim {

__attribute__((format(printf, 2, 3))) inline void appendf(std::string& out, const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  if (n >= static_cast<int>(sizeof buf)) {  // longer than the buffer: once more, to size
    std::string big(static_cast<size_t>(n) + 1, '\0');
    va_start(args, format);
    std::vsnprintf(big.data(), big.size(), format, args);
    va_end(args);
    out.append(big.data(), static_cast<size_t>(n));
  } else if (n > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace coll::sim
