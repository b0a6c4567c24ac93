// One typed registry of COLL_* settings: name, type, default, unit and doc.
// Values come from the environment; an unset variable takes its default.
// Reading a name that is not in the registry is a bug (kInternal), and a
// COLL_* variable in the environment that is not in it is warned about once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::config {

struct Setting {
  const char* name;
  const char* type;           // "int", "string", "bool"
  const char* default_value;  // as text; "" when unset means "none"
  const char* unit;           // "ms", "bytes", "" ...
  const char* doc;
};

const std::vector<Setting>& settings();

// The value as set in the environment, or the default.
std::string get_string(const char* name);
// Parses an integer setting with an optional K/M/G suffix (powers of 1024);
// a malformed value is kInvalidArgument naming the variable.
int64_t get_int(const char* name);
bool get_bool(const char* name);

// At init: warns about unknown COLL_* variables and, at INFO, prints every
// setting with its value and where it came from (env or default).
void report_once();

}  // namespace coll::config
