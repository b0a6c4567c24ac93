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
  double beta_ns_per_byte = 0;     // inverse bandwidth
  double gamma_ns_per_byte = 0.1;  // reduction (the CPU's float32 sum)
  double chunk_bytes = 0;          // pipelining unit when COLL_CHUNK_BYTES is unset
  // The link joins ranks of one node only: algorithms that send every
  // vector to every rank (the direct allreduce) are a choice there, never
  // across a network.
  bool one_node = false;
};

struct CostModel {
  std::map<std::string, LinkModel> links;  // by link class (a transport's name)

  // Applies "class.parameter = value" lines (# comments) over the links
  // present; a malformed line or a class not present is kInvalidArgument
  // naming `origin` and the line.
  void apply(const std::string& text, const std::string& origin);

  // The parameters of a link class; kInternal when there are none.
  const LinkModel& link(const std::string& link_class) const;
  // "shm, tcp": the classes present, for messages.
  std::string class_names() const;
};

}  // namespace coll::algo
