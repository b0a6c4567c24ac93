// Wire format of the bootstrap key-value store, spoken after the auth
// handshake (base/auth.h). Little-endian, fixed-size headers:
//
//   request  {op u32, key_len u32, value_len u64} key value
//   reply    {status u32, reserved u32, value_len u64} value
//
// SET stores a value; GET replies once the key exists (the server holds the
// request until then); WAIT is a GET held at most the milliseconds its
// value gives (an int64), then answered kAbsent, so that the client can look
// at the writer between waits; ADD adds a signed 64-bit value to a counter
// and replies with the sum; BYE says this rank is done with the store.
// Every length is bounded before anything is allocated for it.
#pragma once

#include <cstdint>
#include <string>

namespace coll::bootstrap {

enum class StoreOp : uint32_t { kSet = 1, kGet = 2, kAdd = 3, kBye = 4, kWait = 5 };
constexpr uint32_t kAbsent = 1;  // a reply's status: the WAIT's key was not written in time

#pragma pack(push, 1)
struct StoreRequestHeader {
  uint32_t op;
  uint32_t key_len;
  uint64_t value_len;
};
struct StoreReplyHeader {
  uint32_t status;  // 0: ok; kAbsent
  uint32_t reserved;
  uint64_t value_len;
};
#pragma pack(pop)

constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint64_t kMaxValueBytes = 16u << 20;
constexpr const char* kStorePurpose = "store";
constexpr uint32_t kStoreClientIdentity = 0xffffffffu;  // a client that is not a rank's first communicator

// The key the store itself sets (to "") when the connection of rank
// `identity`'s first communicator closes without a goodbye: that rank has
// left the job (failed or died), and a key it never wrote will not come.
std::string gone_key(uint32_t identity);

// Checks a request header from the wire; returns an empty string when it is
// acceptable, else why not.
std::string validate_request(const StoreRequestHeader& header);

struct StoreRequest {
  StoreOp op = StoreOp::kSet;
  std::string key, value;
};
enum class Parse { kTaken, kNeedMore, kBad };
// Takes the first whole request off the front of `in` (bytes as they came
// off the wire). kNeedMore leaves `in` as it was; kBad says why. Pure, so
// that it can be fuzzed (fuzz/store_protocol_fuzz.cc).
Parse take_request(std::string& in, StoreRequest* request, std::string* why);

}  // namespace coll::bootstrap
