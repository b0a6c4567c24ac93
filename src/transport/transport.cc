#include "transport/transport.h"

#include "core/error.h"

namespace coll::transport {

std::string check_match(uint64_t tag, uint64_t bytes, uint64_t want_tag, uint64_t want_bytes) {
  if (tag == want_tag && bytes == want_bytes) return {};
  return str_cat("message of ", bytes, " bytes (tag 0x", std::hex, tag, std::dec, ") arrived where ", want_bytes,
                 " bytes (tag 0x", std::hex, want_tag, std::dec,
                 ") were expected: the ranks called different collectives, counts or datatypes");
}

RequestId Transport::post_recv_sink(int peer, size_t, uint64_t, const Sink&) {
  fail(Code::kInternal, capabilities().name, ": post_recv_sink from rank ", peer,
       ", but this transport does not deliver pieces");
}

}  // namespace coll::transport
