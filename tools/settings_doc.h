// The table of docs/SETTINGS.md, generated from the settings registry
// (config::settings()) so that the documentation cannot drift from the code.
// Header-only: colldiag prints it (--settings-md) and a unit test compares
// it with the file, and neither needs it inside the library.
#pragma once

#include "base/config.h"

#include <string>
#include <vector>

namespace coll::settings_doc {

// The generated table sits between these two lines; the prose around it is
// written by hand and kept as it is when the table is regenerated.
inline constexpr const char* kBegin =
    "<!-- BEGIN settings table: generated from config::settings() by colldiag --settings-md; do not edit by hand -->";
inline constexpr const char* kEnd = "<!-- END settings table -->";
// Run from the repository root after a build.
inline constexpr const char* kRegenerate = "build/tools/colldiag --settings-md docs/SETTINGS.md";

// A cell may not hold '|' or a line break: either would break the table.
inline std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

// Appends only: GCC 12 takes "`" + std::string(...) for an overlapping copy (-Wrestrict).
inline std::string row(const config::Setting& s) {
  std::string out = "| `";
  out.append(s.name).append("` | ").append(s.type).append(" | ");
  if (*s.default_value != '\0')
    out.append("`").append(s.default_value).append("`");
  else
    out.append("(unset)");
  out.append(" | ").append(cell(s.unit)).append(" | ").append(cell(s.doc)).append(" |\n");
  return out;
}

// The header and one row per setting, in the registry's order.
inline std::string table(const std::vector<config::Setting>& settings) {
  std::string out =
      "| variable | type | default | unit | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const auto& s : settings) out += row(s);
  return out;
}

// The text between the markers (their lines excluded); false when the
// markers are missing or out of order.
inline bool extract(const std::string& text, std::string* block) {
  const size_t begin = text.find(kBegin);
  if (begin == std::string::npos) return false;
  const size_t first = text.find('\n', begin);
  const size_t end = text.find(kEnd, begin);
  if (first == std::string::npos || end == std::string::npos || end < first + 1) return false;
  *block = text.substr(first + 1, end - first - 1);
  return true;
}

// `text` with the block between the markers replaced by `block`; false when
// the markers are missing.
inline bool splice(const std::string& text, const std::string& block, std::string* out) {
  std::string old;
  if (!extract(text, &old)) return false;
  const size_t first = text.find('\n', text.find(kBegin)) + 1;
  *out = text.substr(0, first) + block + text.substr(first + old.size());
  return true;
}

}  // namespace coll::settings_doc
