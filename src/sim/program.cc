#include "sim/program.h"

#include "base/error.h"

#include <map>
#include <utility>

namespace coll::sim {

Program::Program(const std::vector<algo::Schedule>& schedules, const Symmetry& sym) {
  for (size_t u = 0; u < schedules.size(); ++u) {
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
}

// The k-th send from a to b is the k-th receive of b from a. Under a
// symmetry, b's receive is played by its class's representative, from
// the rank that stands to it as a stands to b.
void Program::pair_messages(const std::vector<algo::Schedule>& schedules, const Symmetry& sym) {
  // Per unit: (sends?, peer) -> its steps of that kind with that peer, in order.
  std::vector<std::map<std::pair<bool, int>, std::vector<size_t>>> channels(schedules.size());
  for (size_t id = 0; id < step.size(); ++id) {
    const algo::Step& s = *step[id];
    if (!is_send(s.kind) && !is_recv(s.kind)) continue;
    if (s.peer < 0 || s.peer >= sym.nranks())
      fail(Code::kInvalidArgument, "simulate: rank ", unit_of[id], " step ", step_index(id), " names peer ", s.peer,
           " of ", sym.nranks(), " ranks");
    channels[static_cast<size_t>(unit_of[id])][{is_send(s.kind), s.peer}].push_back(id);
  }
  for (size_t u = 0; u < channels.size(); ++u)
    for (const auto& [key, ids] : channels[u]) {
      const auto& [sends, peer] = key;
      const int me = static_cast<int>(u);  // a representative is its class's first rank
      const auto& other = channels[static_cast<size_t>(sym.class_of(peer))];
      const auto found = other.find({!sends, sym.preimage(peer, me)});
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
        partner[mine] = theirs;
      }
    }
}

}  // namespace coll::sim
