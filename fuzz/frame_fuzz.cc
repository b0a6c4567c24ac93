// A TCP frame header as it comes off the wire, and the tags that it
// carries: the header is checked before anything is read into a buffer,
// a tag that does not answer the receive is a Mismatch (never a crash),
// and the words for any two tags are well formed.
#include "core/op_signature.h"
#include "transport/tcp/pair.h"
#include "transport/transport.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace coll;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  transport::tcp::FrameHeader h;
  uint64_t want[2];
  if (size < sizeof(h) + sizeof(want)) return 0;
  std::memcpy(&h, data, sizeof(h));
  std::memcpy(want, data + sizeof(h), sizeof(want));
  const std::string bad = transport::tcp::check_frame(h);
  // Data, puts and gets pass; a notice is taken before the check, anything else fails it.
  const bool known = h.kind == transport::tcp::kFrameData || h.kind == transport::tcp::kFramePut ||
                     h.kind == transport::tcp::kFrameGetRequest || h.kind == transport::tcp::kFrameGetReply;
  if (bad.empty() != (h.magic == transport::tcp::kFrameMagic && known)) std::abort();
  try {
    transport::check_match_or_fail(0, 1, "rank 1", h.tag, h.bytes, want[0], want[1]);
    if (h.tag != want[0] || h.bytes != want[1]) std::abort();
  } catch (const transport::Mismatch& m) {
    if (m.got_tag != h.tag || m.want_tag != want[0]) std::abort();
  }
  if (describe_mismatch(want[0], h.tag).empty()) std::abort();
  return 0;
}
