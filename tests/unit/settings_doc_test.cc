// docs/SETTINGS.md against the settings registry: the table in the file must
// be what colldiag --settings-md generates, so a setting added, removed or
// changed in config::settings() fails here until the file is regenerated.
#include "settings_doc.h"
#include "base/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

namespace coll {
namespace {

const std::string kFile = COLL_SOURCE_DIR "/docs/SETTINGS.md";

// Rows by the variable they describe ("| `COLL_X` | ..."); "" holds the rest.
std::map<std::string, std::string> rows_by_name(const std::string& table) {
  std::map<std::string, std::string> rows;
  std::stringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::string name;
    if (line.rfind("| `", 0) == 0) name = line.substr(3, line.find('`', 3) - 3);
    rows[name] += line + "\n";
  }
  return rows;
}

TEST(SettingsDoc, FileMatchesTheRegistry) {
  const std::string regenerate =
      std::string("\nRegenerate the file from the repository root with: ") + settings_doc::kRegenerate;
  std::ifstream in(kFile);
  ASSERT_TRUE(in) << "cannot read " << kFile << regenerate;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string block;
  ASSERT_TRUE(settings_doc::extract(text, &block))
      << kFile << " has lost the markers of its generated table:\n"
      << settings_doc::kBegin << "\n"
      << settings_doc::kEnd << "\nPut them back around the table." << regenerate;
  const std::string want = settings_doc::table(config::settings());
  if (block == want) return;

  // Name each variable whose row differs, so the failure says what changed.
  std::map<std::string, std::string> have = rows_by_name(block), expected = rows_by_name(want);
  int named = 0;
  for (const auto& [name, row] : expected) {
    if (name.empty()) continue;
    auto it = have.find(name);
    if (it == have.end()) {
      ADD_FAILURE() << name << " is in the registry but not in docs/SETTINGS.md" << regenerate;
      ++named;
    } else if (it->second != row) {
      ADD_FAILURE() << name << " differs in docs/SETTINGS.md:\n  file:     " << it->second
                    << "  registry: " << row.substr(0, row.size() - 1) << regenerate;
      ++named;
    }
  }
  for (const auto& [name, row] : have)
    if (!name.empty() && expected.count(name) == 0) {
      ADD_FAILURE() << name << " is in docs/SETTINGS.md but not in the registry" << regenerate;
      ++named;
    }
  if (named == 0)
    ADD_FAILURE() << "docs/SETTINGS.md's table differs from the registry in its header or order" << regenerate;
}

}  // namespace
}  // namespace coll
