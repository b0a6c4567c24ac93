// colldiag — where is a hung or failed job stuck? Merges the flight
// recorder dumps of all ranks (COLL_FLIGHT_RECORDER_DIR; written when an
// operation fails, on coll_comm_abort and on SIGUSR1) and names the ranks
// that are behind.
//
//   colldiag DIR|FILE...
//   colldiag --settings-md [FILE]
//   colldiag --ib
//
// For each communicator: every rank's last operation (sequence number,
// collective, algorithm, steps done, whom it waits on, its error), the ranks
// with no dump (dead, or never asked), and a verdict: the ranks behind the
// others, else the ranks the others are waiting on.
//
// --settings-md prints the table of every COLL_* setting from the registry,
// or rewrites it in place in FILE (docs/SETTINGS.md) between its markers.
// It lives here because colldiag is the tool a user already runs when
// something is wrong, and a setting is often what is.
//
// --ib prints the verbs devices and ports, the one coll would use, and on
// RoCE the GID table with the entry chosen and why (ib_report.h).
#include "ib_report.h"
#include "settings_doc.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Op {
  std::map<std::string, std::string> field;
  unsigned long long seq() const { return std::stoull(get("seq", "0")); }
  std::string get(const std::string& k, const std::string& otherwise = "") const {
    auto it = field.find(k);
    return it == field.end() ? otherwise : it->second;
  }
};

struct Dump {
  std::string path;
  std::map<std::string, std::string> head;  // comm, rank, nranks, host, pid, reason
  std::vector<Op> ops;                      // oldest first
};

// "k=v k=v ... error="text with spaces"": values are unquoted words, except
// quoted ones, which run to their closing quote.
std::map<std::string, std::string> parse_fields(const std::string& line) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = line.substr(i, eq - i);
    size_t end;
    std::string value;
    if (eq + 1 < line.size() && line[eq + 1] == '"') {
      end = line.find('"', eq + 2);
      if (end == std::string::npos) end = line.size();
      value = line.substr(eq + 2, end - eq - 2);
      ++end;
    } else {
      end = line.find(' ', eq + 1);
      if (end == std::string::npos) end = line.size();
      value = line.substr(eq + 1, end - eq - 1);
    }
    out[key] = value;
    i = end;
  }
  return out;
}

bool read_dump(const std::string& path, Dump* dump) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != "coll-flight-recorder 1") return false;
  if (!std::getline(in, line)) return false;
  dump->path = path;
  dump->head = parse_fields(line);
  while (std::getline(in, line))
    if (line.rfind("op ", 0) == 0) dump->ops.push_back(Op{parse_fields(line.substr(3))});
  return dump->head.count("comm") && dump->head.count("rank") && dump->head.count("nranks");
}

std::vector<std::string> files_of(const std::string& arg) {
  std::vector<std::string> out;
  if (DIR* d = opendir(arg.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("coll-fr.", 0) == 0) out.push_back(arg + "/" + name);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
  } else {
    out.push_back(arg);
  }
  return out;
}

std::string describe(const Op& op) {
  std::ostringstream s;
  s << op.get("collective") << " #" << op.get("seq") << " (" << op.get("algorithm") << ", count " << op.get("count")
    << " " << op.get("dtype") << "): " << op.get("state") << ", step " << op.get("done") << " of " << op.get("steps");
  if (op.get("state") == "running" && op.get("waiting_on", "-") != "-")
    s << ", waiting on rank(s) " << op.get("waiting_on");
  if (!op.get("error").empty()) s << "\n      error: " << op.get("error");
  return s.str();
}

std::string join(const std::set<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// One communicator's dumps, by rank.
void diagnose(const std::string& comm, const std::map<int, Dump>& by_rank) {
  const int nranks = std::stoi(by_rank.begin()->second.head.at("nranks"));
  std::printf("communicator %s: %d ranks, dumps from %zu\n", comm.c_str(), nranks, by_rank.size());
  unsigned long long newest = 0;
  for (const auto& [rank, d] : by_rank)
    if (!d.ops.empty()) newest = std::max(newest, d.ops.back().seq());
  std::set<int> missing, behind;
  std::map<int, int> waited_on;  // rank -> how many ranks wait on it
  for (int r = 0; r < nranks; ++r) {
    auto it = by_rank.find(r);
    if (it == by_rank.end()) {
      missing.insert(r);
      std::printf("  rank %d: no dump (dead, hung outside coll, or not signalled)\n", r);
      continue;
    }
    const Dump& d = it->second;
    std::printf("  rank %d (host %s, pid %s, dumped on %s):\n", r, d.head.at("host").c_str(),
                d.head.count("pid") ? d.head.at("pid").c_str() : "?",
                d.head.count("reason") ? d.head.at("reason").c_str() : "?");
    if (d.ops.empty()) {
      std::printf("    no operation yet\n");
      if (newest > 0) behind.insert(r);
      continue;
    }
    const Op& last = d.ops.back();
    std::printf("    last: %s\n", describe(last).c_str());
    if (last.seq() < newest) behind.insert(r);
    if (last.get("state") == "running") {
      std::stringstream peers(last.get("waiting_on", "-"));
      for (std::string p; std::getline(peers, p, ',');)
        if (p != "-" && !p.empty()) ++waited_on[std::stoi(p)];
    }
  }
  std::set<int> suspects = missing;
  suspects.insert(behind.begin(), behind.end());
  if (!behind.empty())
    std::printf("  behind: rank(s) %s have not reached operation #%llu, which the others are in or past\n",
                join(behind).c_str(), newest);
  if (suspects.empty()) {
    int most = 0;
    for (const auto& [r, n] : waited_on) most = std::max(most, n);
    for (const auto& [r, n] : waited_on)
      if (n == most) suspects.insert(r);
  }
  if (suspects.empty())
    std::printf("  verdict: no rank stands out (all reached #%llu)\n", newest);
  else
    std::printf("  verdict: look at rank(s) %s\n", join(suspects).c_str());
}

int settings_md(const char* path) {
  namespace doc = coll::settings_doc;
  const std::string table = doc::table(coll::config::settings());
  if (path == nullptr) {
    std::fputs(table.c_str(), stdout);
    return 0;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "colldiag: cannot read %s\n", path);
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  if (!doc::splice(text, table, &out)) {
    std::fprintf(stderr, "colldiag: %s has no generated table: put the lines\n%s\n%s\nwhere it goes\n", path,
                 doc::kBegin, doc::kEnd);
    return 1;
  }
  if (out == text) return 0;
  std::ofstream file(path, std::ios::trunc);
  file << out;
  if (!file.flush()) {
    std::fprintf(stderr, "colldiag: cannot write %s\n", path);
    return 1;
  }
  std::fprintf(stderr, "colldiag: %s: settings table updated\n", path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--settings-md") return settings_md(argc > 2 ? argv[2] : nullptr);
  if (argc >= 2 && std::string(argv[1]) == "--ib") return coll::tools::ib_report();
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: colldiag DIR|FILE...\n"
                 "  merges the flight recorder dumps (coll-fr.*.txt) that ranks write to COLL_FLIGHT_RECORDER_DIR\n"
                 "  when an operation fails, on coll_comm_abort and on SIGUSR1, and names the ranks that are behind\n"
                 "usage: colldiag --settings-md [FILE]\n"
                 "  prints the table of every COLL_* setting (name, type, default, unit, meaning), or rewrites it\n"
                 "  in FILE between its markers (docs/SETTINGS.md)\n"
                 "usage: colldiag --ib\n"
                 "  prints the verbs ports, the one coll would use and, on RoCE, the GID chosen and why\n");
    return argc < 2 ? 2 : 0;
  }
  std::map<std::string, std::map<int, Dump>> comms;
  int read = 0;
  for (int i = 1; i < argc; ++i)
    for (const std::string& path : files_of(argv[i])) {
      Dump d;
      if (!read_dump(path, &d)) {
        std::fprintf(stderr, "colldiag: %s is not a flight recorder dump; skipped\n", path.c_str());
        continue;
      }
      ++read;
      comms[d.head["comm"]][std::stoi(d.head["rank"])] = d;
    }
  if (read == 0) {
    std::fprintf(stderr, "colldiag: no flight recorder dumps found\n");
    return 1;
  }
  for (const auto& [comm, by_rank] : comms) diagnose(comm, by_rank);
  return 0;
}
