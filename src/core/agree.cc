// coll_comm_agree: as ULFM's MPI_Comm_agree, the live ranks agree on the
// bitwise AND of their flags and on who is gone, even while ranks die.
//
// They meet as shrink's survivors do (meeting.cc): at the lowest rank not
// found gone, which gathers every live rank's flag, probing the ones it
// waits for, and decides: the AND of the flags of the ranks that came, and
// the ranks gone (found gone, or not come within the timeout).
//
// A host can die while its decision is being read. So that no two ranks
// ever return different decisions, it is given in two phases. The host
// publishes it; each rank that reads it keeps it and says so; once every
// rank that came has said so, the host publishes "commit", and only then
// does a rank return. A rank whose host dies goes to the next live rank
// carrying the decision if it had read it, and that host gathers the ranks
// as ever but takes a carried decision as its own instead of deciding
// anew. If the dead host had committed, every rank that came to it had read
// the decision, so the next host carries it too. A host after any host
// died that carries no decision decides only if every rank not found gone
// comes (one that does not may have returned with the dead host's
// decision): otherwise every rank at it fails with COLL_REMOTE_ERROR,
// rather than any returning a different decision. Every rank that returns
// keeps the decision where a late rank would look for it next (keep_decision).
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/store_client.h"
#include "core/comm.h"
#include "core/meeting.h"
#include "core/test_hooks.h"

#include <chrono>
#include <thread>

namespace coll {

void (*test_hooks::agree_decided)() = nullptr;
void (*test_hooks::agree_committed)() = nullptr;
void (*test_hooks::agree_reading_commit)() = nullptr;

namespace {

constexpr char kNoDecision = '!';  // opens a host's decision when it could not decide: the reason follows

// "flag|gone ranks" -> the flag, and the ranks into *gone.
int parse_decision(const std::string& decision, int nranks, std::vector<int>* gone) {
  const size_t bar = decision.find('|');
  if (gone != nullptr) *gone = meeting::parse_ranks(decision.substr(bar + 1), nranks);
  return std::stoi(decision.substr(0, bar));
}

}  // namespace

int Communicator::agree(int flag, std::vector<int>* gone) {
  // Every rank counts its agreements alike: the count keeps each one's keys
  // apart at a host that serves several.
  const std::string keys = str_cat("agree", agreements_++, "/");
  std::vector<bool> out(static_cast<size_t>(nranks_), false);
  std::vector<int> dead_hosts;
  std::string carried;       // the decision, once read from a host that then died
  bool lost_a_host = false;  // one that had recorded our arrival
  for (int host = 0;; ++host) {
    if (out[static_cast<size_t>(host)]) continue;
    if (host == rank_ || !standby_gone(host)) {
      // After any host died, a rank that does not come may have returned
      // with its decision: the next host decides only if all come.
      Meeting meeting{host, lost_a_host || !dead_hosts.empty()};
      try {
        return parse_decision(agree_at(meeting, keys, flag, dead_hosts, out, carried), nranks_, gone);
      } catch (const Error& e) {
        if (host == rank_ || e.code() != Code::kRemote || !host_gone(host)) throw;
      }
      lost_a_host = lost_a_host || meeting.arrived;
    }
    out[static_cast<size_t>(host)] = true;
    dead_hosts.push_back(host);
  }
}

// One meeting: returns the decision once the host has committed it.
std::string Communicator::agree_at(Meeting& meeting, const std::string& keys, int flag, const std::vector<int>& mine,
                                   std::vector<bool>& out, std::string& carried) {
  const int host = meeting.host;
  auto store = arrive(meeting, keys, mine, str_cat(flag, "|", carried));
  if (host != rank_) {
    const Deadline wait = Deadline::after_ms(2 * timeout_ms_ + 1000);
    const std::string decision =
        store->get(str_cat(keys, "decision"), wait, str_cat("rank ", host, " (the lowest live rank) to decide"));
    if (!decision.empty() && decision[0] == kNoDecision)
      fail(Code::kRemote, "comm_agree on rank ", rank_, ": rank ", host, " decided nothing: ", decision.substr(1));
    carried = decision;
    store->add(str_cat(keys, "have/", rank_), 1, wait);
    if (test_hooks::agree_reading_commit != nullptr) test_hooks::agree_reading_commit();
    store->get(str_cat(keys, "commit"), wait, str_cat("rank ", host, " (the lowest live rank) to commit"));
    keep_decision(keys, decision);
    return decision;
  }
  std::vector<bool> came(static_cast<size_t>(nranks_), false);
  carried = decide_agreement(*store, keys, flag, meeting.replacement, carried, out, came);
  store->set(str_cat(keys, "decision"), carried, Deadline::after_ms(timeout_ms_));
  if (test_hooks::agree_decided != nullptr) test_hooks::agree_decided();
  // Every rank that came has the decision before any returns with it.
  // A rank that came and then went silent is not waited for past the
  // timeout: the commit goes on without its word.
  came[static_cast<size_t>(rank_)] = false;
  await_marks(*store, keys + "have/", came, Deadline::after_ms(timeout_ms_), [](size_t) {});
  store->set(str_cat(keys, "commit"), "1", Deadline::after_ms(timeout_ms_));
  if (test_hooks::agree_committed != nullptr) test_hooks::agree_committed();
  return carried;
}

// A rank whose host died after committing, and that had not read the
// commit yet, goes to the next live rank, which may have returned already:
// so every rank that returns leaves the decision, committed, in a store of
// its own on its standby socket, where a late rank reads it.
void Communicator::keep_decision(const std::string& keys, const std::string& decision) {
  try {
    Meeting here{rank_};
    const Deadline deadline = Deadline::after_ms(timeout_ms_);
    auto store = arrive(here, keys, {}, "");
    store->set(str_cat(keys, "decision"), decision, deadline);
    store->set(str_cat(keys, "commit"), "1", deadline);
  } catch (const Error& e) {  // the decision stands; only a late rank would miss it here
    log::warn(log::kInit, "comm_agree on rank ", rank_, ": could not keep the decision for late ranks: ", e.what());
  }
}

// Rank r's kept decision of this agreement, or "" if it has none to give
// within a second (it may be slow, or still in the agreement itself).
std::string Communicator::kept_decision(int r, const std::string& keys) {
  try {
    const Deadline deadline = Deadline::after_ms(1000);
    auto store = standby_store(r, deadline);
    store->get(str_cat(keys, "commit"), deadline, "");
    return store->get(str_cat(keys, "decision"), deadline, "");
  } catch (const Error&) {
    return "";
  }
}

// The host's part: waits for every live rank (meeting.cc: gather), then
// takes a decision it or one of them carries, or makes its own. Every rank
// that came is then waited for (its acknowledgement), carried or not.
std::string Communicator::decide_agreement(bootstrap::StoreClient& store, const std::string& keys, int flag,
                                           bool replacement, std::string carried, std::vector<bool>& out,
                                           std::vector<bool>& came) {
  const auto brought = gather(store, keys, replacement, out, Deadline::after_ms(timeout_ms_));
  int all = flag;
  std::vector<int> gone, missing;
  for (int r = 0; r < nranks_; ++r) {
    const auto& b = brought[static_cast<size_t>(r)];
    if (!b || out[static_cast<size_t>(r)]) {
      gone.push_back(r);
      if (!out[static_cast<size_t>(r)]) missing.push_back(r);
      continue;
    }
    came[static_cast<size_t>(r)] = true;
    const size_t bar = b->find('|');
    if (bar != std::string::npos && bar + 1 < b->size()) carried = b->substr(bar + 1);
    if (r != rank_) all &= std::stoi(b->substr(0, bar));
  }
  if (!carried.empty()) return carried;
  // A rank that did not come may have returned with a dead host's decision
  // and kept it (keep_decision): ask before deciding.
  if (replacement)
    for (int r : missing)
      if (std::string kept = kept_decision(r, keys); !kept.empty()) return kept;
  if (replacement && !missing.empty()) {
    const std::string why = str_cat("rank ", rank_, " hosted after a host that ranks had met at died, and rank(s) ",
                                    meeting::join(missing), ", not found gone, did not arrive within ", timeout_ms_,
                                    " ms: they may have returned with the dead host's decision, so none is made");
    store.set(str_cat(keys, "decision"), str_cat(kNoDecision, why), Deadline::after_ms(timeout_ms_));
    fail(Code::kRemote, "comm_agree on rank ", rank_, ": ", why);
  }
  for (int r : missing)
    log::warn(log::kInit, "comm_agree: rank ", r, " did not arrive within ", timeout_ms_, " ms: counted as gone");
  return str_cat(all, "|", meeting::join(gone));
}

}  // namespace coll
