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

void check_remote_range(const Capabilities& caps, int self, int peer, bool put, size_t bytes, size_t offset,
                        const RemoteMemory& remote) {
  if (offset > remote.bytes || bytes > remote.bytes - offset)
    fail(Code::kInvalidArgument, caps.name, ": rank ", self, put ? " puts " : " gets ", bytes, " bytes at offset ",
         offset, " of rank ", peer, "'s registration of ", remote.bytes, " bytes: out of bounds");
}

void fail_with_notice(int self, const std::string& peer, int code, const std::string& reason) {
  // Ranks that disagree, and a revoked communicator, stay so on every rank.
  const Code here = code == static_cast<int>(Code::kInvalidUsage) ? Code::kInvalidUsage
                    : code == static_cast<int>(Code::kRevoked)    ? Code::kRevoked
                                                                  : Code::kRemote;
  fail(here, "rank ", self, ": ", peer, " gave up: ", reason.substr(0, kMaxNoticeBytes));
}

RequestId Transport::post_recv_sink(int peer, size_t, uint64_t, const Sink&) {
  fail(Code::kInternal, capabilities().name, ": post_recv_sink from rank ", peer,
       ", but this transport does not deliver pieces");
}

void Transport::lacks(const char* what) const {
  fail(Code::kInvalidUsage, capabilities().name, " transport: ", what,
       " is not something it offers (see its capabilities)");
}

const Registration* Transport::register_memory(const void*, size_t, MemoryKind) { return nullptr; }

void Transport::deregister(const Registration*) { lacks("deregister (it registers no memory)"); }

RequestId Transport::post_put(int, const Buffer&, const RemoteMemory&, size_t, const uint64_t*) { lacks("post_put"); }

RequestId Transport::post_get(int, const Buffer&, const RemoteMemory&, size_t) { lacks("post_get"); }

RequestId Transport::post_notification(int, uint64_t*) { lacks("post_notification"); }

}  // namespace coll::transport
