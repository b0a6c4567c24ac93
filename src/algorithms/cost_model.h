// The alpha-beta-gamma model (Hockney; Thakur, Rabenseifner & Gropp 2005):
// a message of S bytes costs alpha + S beta, reducing S bytes costs S gamma.
// One set of parameters per link class, as data: the transports supply
// their defaults and a tuning file may override them (core/link_models.cc);
// this folder knows no fabric by name and reads no file.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace coll::algo {

struct LinkModel {
  double alpha_us = 0;             // per message
  double beta_ns_per_byte = 0;     // inverse bandwidth, of one rank's messages
  double gamma_ns_per_byte = 0.1;  // reduction (the CPU's float32 sum)
  double chunk_bytes = 0;          // pipelining unit when COLL_CHUNK_BYTES is unset
  // The link joins ranks of one node only: algorithms that send every
  // vector to every rank (the direct allreduce) are a choice there, never
  // across a network.
  bool one_node = false;
  // (What scripts/calibrate.sh measures besides; last, so that positional
  // initialisers of the fields above still mean them.)
  // Inverse bandwidth of all of a node's messages of this class together,
  // where they share something: the memory shared-memory copies go through
  // (the simulator's memory link), the one link of a node whose ranks share
  // it (the selector's network class); 0: nothing, a link per rank.
  double node_beta_ns_per_byte = 0;
  // What a node's cache holds of its ranks' buffers (CPU ranks): the part
  // of them within it moves at cache_beta instead of beta.
  double cache_bytes = 0;
  double cache_beta_ns_per_byte = 0;
  // A second, larger cache (the last level, shared by the node's cores):
  // what it holds beyond the first moves at cache2_beta; only with the first.
  double cache2_bytes = 0;
  double cache2_beta_ns_per_byte = 0;
  // The cores a node's CPU ranks run on: more ranks than cores take turns,
  // each core copying for all of its ranks; 0: a core each. Only the
  // simulator reads it.
  double cores = 0;
  // What CPU ranks' copies weigh on a core and the node's memory, against a
  // message's bytes crossing them once (sim::Costs; only the simulator reads
  // them): a local copy or reduction; a reduction beyond a copy; the read of
  // a message between two ranks of one core, from that core's own cache.
  double local_weight = 1;
  double reduce_weight = 1;
  double same_core_read_weight = 1;
  // The wait for a turn on a core (CPU ranks; only the simulator reads it):
  // a message inside a node waits this long for each other rank on its
  // receiver's core, before the receiver runs.
  double turn_us = 0;

  // The parameters for a collective whose buffers (buffer_bytes) hold
  // `bytes` on each of `per_node` ranks of a node: min(1, cache_bytes /
  // (per_node bytes)) of them moves at cache_beta, what the second cache
  // holds beyond that at cache2_beta, the rest at beta (node_beta scaled
  // alike). Itself where no cache is given.
  LinkModel at_size(double bytes, int per_node) const;
};

struct CostModel {
  std::map<std::string, LinkModel> links;  // by link class (a transport's name)

  // Applies "class.parameter = value" lines (# comments) over the links
  // present; lines of the classes in `absent` (known, but not in use here)
  // are passed over. A malformed line or another class is kInvalidArgument
  // naming `origin` and the line.
  void apply(const std::string& text, const std::string& origin, const std::vector<std::string>& absent = {});

  // The parameters of a link class; kInternal when there are none.
  const LinkModel& link(const std::string& link_class) const;
  // "shm, tcp": the classes present, for messages.
  std::string class_names() const;
};

}  // namespace coll::algo
