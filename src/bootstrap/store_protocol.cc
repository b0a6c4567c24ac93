#include "bootstrap/store_protocol.h"

#include "base/error.h"

#include <cstring>

namespace coll::bootstrap {

std::string gone_key(uint32_t identity) { return "gone/" + std::to_string(identity); }

std::string validate_request(const StoreRequestHeader& h) {
  if (h.op < static_cast<uint32_t>(StoreOp::kSet) || h.op > static_cast<uint32_t>(StoreOp::kWait))
    return str_cat("unknown op ", h.op);
  if (h.key_len == 0 || h.key_len > kMaxKeyBytes) return str_cat("key length ", h.key_len, " out of range");
  if (h.value_len > kMaxValueBytes) return str_cat("value length ", h.value_len, " over the limit");
  if (h.op == static_cast<uint32_t>(StoreOp::kAdd) && h.value_len != sizeof(int64_t)) return "ADD value is not 8 bytes";
  if (h.op == static_cast<uint32_t>(StoreOp::kGet) && h.value_len != 0) return "GET carries a value";
  if (h.op == static_cast<uint32_t>(StoreOp::kWait) && h.value_len != sizeof(int64_t))
    return "WAIT value is not 8 bytes";
  return {};
}

Parse take_request(std::string& in, StoreRequest* request, std::string* why) {
  StoreRequestHeader h;
  if (in.size() < sizeof(h)) return Parse::kNeedMore;
  std::memcpy(&h, in.data(), sizeof(h));
  // Bounded before anything is sized from it.
  std::string bad = validate_request(h);
  if (!bad.empty()) {
    *why = "malformed request: " + bad;
    return Parse::kBad;
  }
  const size_t need = sizeof(h) + h.key_len + h.value_len;
  if (in.size() < need) return Parse::kNeedMore;
  request->op = static_cast<StoreOp>(h.op);
  request->key.assign(in, sizeof(h), h.key_len);
  request->value.assign(in, sizeof(h) + h.key_len, h.value_len);
  in.erase(0, need);
  return Parse::kTaken;
}

}  // namespace coll::bootstrap
