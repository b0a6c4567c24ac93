#include "sim/program.h"

#include "base/error.h"

#include <map>
#include <utility>

namespace coll::sim {

Program::Program(const std::vector<algo::Schedule>& schedules, const Symmetry& sym) {
  for (size_t u = 0; u < schedules.size(); ++u) {
    rank.push_back(sym.representative(static_cast<int>(u)));
    first.push_back(step.size());
    for (const algo::Step& s : schedules[u].steps) {
      step.push_back(&s);
      unit_of.push_back(static_cast<int>(u));
    }
  }
  dependents.resize(step.size());
  waiting.resize(step.size());
  partner.assign(step.size(), SIZE_MAX);
  for (size_t id = 0; id < step.size(); ++id) {
    waiting[id] = static_cast<uint32_t>(step[id]->deps.size());
    for (uint32_t d : step[id]->deps) dependents[first[static_cast<size_t>(unit_of[id])] + d].push_back(id);
  }
  pair_messages(schedules, sym);
  // Only listed classes leave a send undelivered: the second of a parent's sends to its two alike children.
  for (size_t id = 0; id < step.size() && !sym.listed(); ++id)
    if (is_send(step[id]->kind) && partner[id] == SIZE_MAX)
      fail(Code::kInternal, "simulate: rank ", rank_of(id), " step ", step_index(id), " sends to rank ", step[id]->peer,
           ", which never receives it");
}

// The k-th send from a to b is the k-th receive of b from a. Under a
// symmetry, b's receive is played by its class's representative, from
// the rank that stands to it as a stands to b (Symmetry::counterpart).
// Where one rank has two peers of one class (a tree node's two alike
// children), one send of that class delivers to both receives.
void Program::pair_messages(const std::vector<algo::Schedule>& schedules, const Symmetry& sym) {
  // Per unit: (sends?, peer) -> its steps of that kind with that peer, in order.
  std::vector<std::map<std::pair<bool, int>, std::vector<size_t>>> channels(schedules.size());
  for (size_t id = 0; id < step.size(); ++id) {
    const algo::Step& s = *step[id];
    if (!is_send(s.kind) && !is_recv(s.kind)) continue;
    if (s.peer < 0 || s.peer >= sym.nranks())
      fail(Code::kInvalidArgument, "simulate: rank ", rank_of(id), " step ", step_index(id), " names peer ", s.peer,
           " of ", sym.nranks(), " ranks");
    channels[static_cast<size_t>(unit_of[id])][{is_send(s.kind), s.peer}].push_back(id);
  }
  for (size_t u = 0; u < channels.size(); ++u)
    for (const auto& [key, ids] : channels[u]) {
      const auto& [sends, peer] = key;
      const int me = rank[u];
      const auto [cls, theirs_peer] = sym.counterpart(static_cast<int>(u), peer);
      const auto& other = channels[static_cast<size_t>(cls)];
      const auto found = other.find({!sends, theirs_peer});
      const size_t there = found == other.end() ? 0 : found->second.size();
      if (there != ids.size()) {
        const int from = sends ? me : peer, to = sends ? peer : me;
        fail(Code::kInvalidArgument, "simulate: rank ", from, " sends ", sends ? ids.size() : there,
             " messages to rank ", to, ", which receives ", sends ? there : ids.size());
      }
      for (size_t k = 0; k < ids.size(); ++k) {
        const size_t mine = ids[k], theirs = found->second[k];
        if (!sym.same_size(step[mine]->bytes, step[theirs]->bytes, schedules[u].elem_size))
          fail(Code::kInvalidArgument, "simulate: message ", k, " from rank ", sends ? me : peer, " to rank ",
               sends ? peer : me, " is ", step[sends ? mine : theirs]->bytes, " bytes sent but ",
               step[sends ? theirs : mine]->bytes, " received");
        if (sends) continue;
        partner[mine] = theirs;
        if (partner[theirs] == SIZE_MAX)
          partner[theirs] = mine;
        else
          also_delivers.emplace(theirs, mine);
      }
    }
}

}  // namespace coll::sim
