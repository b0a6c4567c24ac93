// coll_comm_shrink: the survivors of a failure form a new communicator.
//
// They meet on the lowest survivor's standby socket (every communicator
// listens on one from init, because rank 0's store may have died with rank
// 0), under a secret of their own, so the new communicator's segments and
// connections never meet the old ones'. Who is gone is agreed as in ULFM's
// MPI_Comm_shrink: the lowest survivor, the host, decides and tells the
// others. Out are the union of every survivor's exclusions, the ranks found
// gone, and any rank that does not arrive before the timeout.
//
// Finding the dead without being told: a rank's standby listener lives as
// long as its communicator, so a connection it refuses means that process
// (or its communicator) is gone. Each survivor probes the candidates for
// host in rank order, and the host probes the ranks it still waits for. A
// guest that waits for its host to serve keeps probing the host too: a
// guest's connection to a host that died was once left without a reset for
// the whole timeout. A node that went silent refuses nothing: its ranks are
// left out only when the timeout passes.
//
// A host can die after publishing its decision, when some survivors have
// read it and others have not. Those that read it find its store gone as
// they join the new communicator there; those that did not, as they wait
// to read it. Either way they go on to the next host, as when a host dies
// while they meet, and tell it that a host they had met at died. That host
// is then a replacement: a rank it waits for in vain may have read the dead
// host's decision and gone on with it, so it forms no communicator without
// every rank not found gone, and says so to every guest. The outcome is
// agreed: all the survivors meet again, or all fail; none goes on alone.
// (A guest cannot tell whether its host decided before it died: any host
// that had recorded a guest's arrival makes the next one a replacement.)
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/store_client.h"
#include "core/comm.h"
#include "core/meeting.h"
#include "core/test_hooks.h"

namespace coll {

void (*test_hooks::shrink_decided)() = nullptr;
void (*test_hooks::shrink_reading_members)() = nullptr;
void (*test_hooks::shrink_joined)() = nullptr;

namespace {

constexpr char kNoMembers = '!';  // opens the host's "members" when it formed no communicator: the reason follows

}  // namespace

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& exclude) {
  // Each shrink's keys apart: a later one's guests never read an earlier one's members.
  shrink_keys_ = str_cat("shrink", shrinks_++, "/");
  std::vector<bool> out(static_cast<size_t>(nranks_), false);
  for (int r : exclude) {
    if (r < 0 || r >= nranks_)
      fail(Code::kInvalidArgument, "comm_shrink on rank ", rank_, ": excluded rank ", r, " is outside [0, ", nranks_,
           ")");
    if (r == rank_)
      fail(Code::kInvalidArgument, "comm_shrink on rank ", rank_,
           ": a rank cannot exclude itself (the excluded ranks do not call coll_comm_shrink)");
    out[static_cast<size_t>(r)] = true;
  }
  // The host is the lowest rank neither out nor found gone; the ones found
  // gone on the way join our exclusions. A host can still die while we
  // meet on its socket (a process being torn down answers the probe until
  // it closes its sockets), or after it decided, while we join the new
  // communicator at its store: then it is found gone in turn, and the next
  // candidate hosts, with a whole timeout of its own.
  std::vector<int> mine = exclude;
  bool lost_a_host = false;  // one that had recorded our arrival
  for (int host = 0;; ++host) {
    if (out[static_cast<size_t>(host)]) continue;
    if (host == rank_ || !standby_gone(host)) {
      // Each shrink's new communicator is a job of its own (its store, its
      // secret, its segments), so that one which a dead host or a failed
      // join left half made never meets the next.
      bootstrap::HostedId id;  // its store is served here when we host
      Meeting meeting{host, lost_a_host};
      std::string members;
      try {
        members = meet(meeting, mine, out, Deadline::after_ms(timeout_ms_), id);
        if (members.empty() || members[0] != kNoMembers) return join_members(id.id, members);
      } catch (const Error& e) {
        id.stop();  // a failed join: nobody will say goodbye to that store
        if (host == rank_ || e.code() != Code::kRemote || !host_gone(host)) throw;
      }
      // The host's word that it formed none is final: the next host would
      // not know who might have gone on without us either.
      if (!members.empty() && members[0] == kNoMembers)
        fail(Code::kRemote, "comm_shrink on rank ", rank_, ": the host formed no communicator: ", members.substr(1));
      lost_a_host = lost_a_host || meeting.arrived;
    }
    out[static_cast<size_t>(host)] = true;
    mine.push_back(host);
  }
}

// Becomes this rank's place among the members the host decided on. The
// members then agree that every one of them joined: a rank that dies as they
// connect fails the join on every member alike (they call shrink again, or
// meet at the next host when the host died). A barrier here once let some
// members pass while others failed; each half then found the other's
// communicators closed, took them for dead, and went on without them.
std::unique_ptr<Communicator> Communicator::join_members(const bootstrap::UniqueId& id, const std::string& members) {
  const std::vector<int> old_ranks = meeting::parse_ranks(members, nranks_);
  int new_rank = -1, new_size = 0;
  for (int r : old_ranks) {
    if (r == rank_) new_rank = new_size;
    ++new_size;
  }
  if (new_rank < 0)
    fail(Code::kInvalidUsage, "comm_shrink on rank ", rank_,
         ": another survivor excluded this rank (members: ", members, ")");
  log::info(log::kInit, "comm_shrink: rank ", rank_, " becomes rank ", new_rank, " of ", new_size, " (old ranks ",
            members, ")");
  // A member whose join fails closes its new communicator here, so that the
  // others' agreement finds it gone at once.
  auto joined = std::make_unique<Communicator>(new_size, id, new_rank, "", timeout_ms_, 0, Store::kRunning,
                                               [&](int r) { return standby_gone(old_ranks[static_cast<size_t>(r)]); });
  if (test_hooks::shrink_joined != nullptr) test_hooks::shrink_joined();
  std::vector<int> gone;
  joined->agree(1, &gone);
  if (!gone.empty()) {
    std::vector<int> old_gone;
    for (int r : gone) old_gone.push_back(old_ranks[static_cast<size_t>(r)]);
    fail(Code::kRemote, "comm_shrink on rank ", rank_, ": rank(s) ", meeting::join(old_gone),
         " died or failed while the members joined; call coll_comm_shrink again on this communicator");
  }
  return joined;
}

// Meets the other survivors at the host's store (served here when we are
// the host) and returns the members the host decided on.
std::string Communicator::meet(Meeting& meeting, const std::vector<int>& mine, std::vector<bool>& out,
                               const Deadline& deadline, bootstrap::HostedId& joined) {
  const int host = meeting.host;
  auto store = arrive(meeting, shrink_keys_, mine, "");
  if (host == rank_) return decide_members(*store, meeting.replacement, out, deadline, joined);
  if (test_hooks::shrink_reading_members != nullptr) test_hooks::shrink_reading_members();
  const std::string members = store->get(shrink_keys_ + "members", Deadline::after_ms(2 * timeout_ms_ + 1000),
                                         str_cat("rank ", host, " (the lowest survivor) to say who is in"));
  if (members.empty() || members[0] != kNoMembers) {  // where the members meet: "secret address"
    const std::string where = store->get(shrink_keys_ + "store", Deadline::after_ms(timeout_ms_), "");
    const size_t space = where.find(' ');
    joined.id.secret = auth::secret_from_hex(where.substr(0, space), "the shrink's store secret");
    joined.id.store_address = where.substr(space + 1);
  }
  return members;
}

// The host's part. It waits for every rank not yet out, looking at the
// arrivals without blocking on any one rank. Each arrival's exclusions
// join the host's at once (a rank another survivor names is not waited
// for), and the ranks still missing are probed, so that one found gone
// meanwhile is left out at once. Then it publishes the members.
std::string Communicator::decide_members(bootstrap::StoreClient& store, bool replacement, std::vector<bool>& out,
                                         const Deadline& deadline, bootstrap::HostedId& joined) {
  const size_t n = static_cast<size_t>(nranks_);
  const auto arrived = gather(store, shrink_keys_, replacement, out, deadline);
  std::vector<int> missing;
  for (size_t r = 0; r < n; ++r) {
    if (!out[r] && !arrived[r]) missing.push_back(static_cast<int>(r));
    // A rank that is not coming in, yet alive (late, or excluded by another
    // survivor after it arrived), must still read our word here.
    if ((!out[r] && !arrived[r]) || (out[r] && arrived[r])) not_in_but_alive_ = true;
  }
  if (replacement && !missing.empty()) {
    const std::string why =
        str_cat("rank ", rank_, " hosted after a host that survivors had met at died, and rank(s) ",
                meeting::join(missing), ", not found gone, did not arrive within ", timeout_ms_,
                " ms: they may have read the dead host's decision and gone on without us, so no communicator is "
                "formed (destroy this one; a job that must go on starts anew)");
    store.set(shrink_keys_ + "members", str_cat(kNoMembers, why), Deadline::after_ms(timeout_ms_));
    fail(Code::kRemote, "comm_shrink on rank ", rank_, ": ", why);
  }
  for (int r : missing)
    log::warn(log::kInit, "comm_shrink: rank ", r, " did not arrive within ", timeout_ms_, " ms: left out");
  std::vector<int> members;
  for (size_t r = 0; r < n; ++r)
    if (arrived[r] && !out[r]) members.push_back(static_cast<int>(r));
  const std::string text = meeting::join(members);
  joined = bootstrap::host_unique_id();  // the new communicator's store, here
  store.set(shrink_keys_ + "store", str_cat(auth::to_hex(joined.id.secret), " ", joined.id.store_address),
            Deadline::after_ms(timeout_ms_));
  store.set(shrink_keys_ + "members", text, Deadline::after_ms(timeout_ms_));
  if (test_hooks::shrink_decided != nullptr) test_hooks::shrink_decided();
  return text;
}

}  // namespace coll
