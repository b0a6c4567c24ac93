// The bootstrap store's request parser, fed whatever a stranger might send
// after (or instead of) a valid handshake: lengths are bounded before use,
// and a request is taken whole or not at all.
#include "bootstrap/store_protocol.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace coll::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  StoreRequest request;
  std::string why;
  for (;;) {
    const size_t before = in.size();
    const Parse parsed = take_request(in, &request, &why);
    if (parsed != Parse::kTaken) {
      if (parsed == Parse::kNeedMore && in.size() != before) std::abort();  // untouched unless taken
      if (parsed == Parse::kBad && why.empty()) std::abort();               // a refusal says why
      break;
    }
    if (request.key.empty() || request.key.size() > kMaxKeyBytes || request.value.size() > kMaxValueBytes ||
        before - in.size() != sizeof(StoreRequestHeader) + request.key.size() + request.value.size())
      std::abort();
  }
  return 0;
}
