#include "transport/transport.h"

#include "base/error.h"

namespace coll::transport {

std::string check_match(uint64_t tag, uint64_t bytes, uint64_t want_tag, uint64_t want_bytes) {
  if (tag == want_tag && bytes == want_bytes) return {};
  return str_cat("message of ", bytes, " bytes (tag 0x", std::hex, tag, std::dec, ") arrived where ", want_bytes,
                 " bytes (tag 0x", std::hex, want_tag, std::dec,
                 ") were expected: the ranks called different collectives, counts or datatypes");
}

void check_match_or_fail(int self, int peer, const std::string& peer_name, uint64_t tag, uint64_t bytes,
                         uint64_t want_tag, uint64_t want_bytes) {
  std::string bad = check_match(tag, bytes, want_tag, want_bytes);
  if (!bad.empty()) throw Mismatch(str_cat("rank ", self, ": from ", peer_name, ": ", bad), peer, tag, want_tag);
}

void fail_with_notice(int self, const std::string& peer, int code, const std::string& reason) {
  const Code here = code == static_cast<int>(Code::kInvalidUsage) ? Code::kInvalidUsage : Code::kRemote;
  fail(here, "rank ", self, ": ", peer, " gave up: ", reason.substr(0, kMaxNoticeBytes));
}

RequestId Transport::post_recv_sink(int peer, size_t, uint64_t, const Sink&) {
  fail(Code::kInternal, capabilities().name, ": post_recv_sink from rank ", peer,
       ", but this transport does not deliver pieces");
}

char* Transport::access(int peer, const MemoryHandle&, size_t, Access) {
  fail(Code::kInternal, capabilities().name, ": access to rank ", peer,
       "'s memory, but this transport has no one-sided access");
}

uint32_t Transport::board_post(const BoardBlock&, size_t) {
  fail(Code::kInternal, capabilities().name, ": board_post, but this transport has no board");
}

bool Transport::board_wait(int peer, uint32_t, uint64_t, int) {
  fail(Code::kInternal, capabilities().name, ": board_wait for rank ", peer, ", but this transport has no board");
}

Transport::BoardBlock Transport::board_block(int peer, uint32_t) const {
  fail(Code::kInternal, capabilities().name, ": board_block of rank ", peer, ", but this transport has no board");
}

}  // namespace coll::transport
