// Text for the SVG writers: sizes as people read them, and escaping.
#pragma once

#include <cstdio>
#include <string>

namespace coll::sim {

// "64 KiB", "1 GiB".
inline std::string size_label(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, "%g %s", bytes, units[u]);
  return text;
}

// Text as it may stand inside an SVG element (control characters, which
// XML does not allow, dropped).
inline std::string escaped(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') continue;
    out += ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : std::string(1, ch);
  }
  return out;
}

}  // namespace coll::sim
