// What a connection's first bytes can be: a client hello checked against
// the secret (never accepted without it), a unique id decoded from a
// stranger's bytes, a job secret from the environment.
#include "base/auth.h"
#include "base/error.h"
#include "bootstrap/unique_id.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace coll;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auth::Secret secret = auth::secret_from_text("fuzz");
  static const auth::Nonce nonce{};
  if (size >= sizeof(auth::ClientHello)) {
    auth::ClientHello hello;
    std::memcpy(&hello, data, sizeof(hello));
    for (const char* purpose : {"store", "tcp"})
      if (auth::check_client_hello(hello, secret, purpose, nonce)) std::abort();  // forged a MAC
  }
  coll_unique_id_t raw;
  std::memset(&raw, 0, sizeof(raw));
  std::memcpy(raw.internal, data, size < sizeof(raw.internal) ? size : sizeof(raw.internal));
  try {
    bootstrap::UniqueId id = bootstrap::UniqueId::decode(raw);
    if (id.store_address.empty()) std::abort();
  } catch (const Error& e) {
    if (e.code() != Code::kInvalidArgument) std::abort();
  }
  try {
    auth::secret_from_hex(std::string(reinterpret_cast<const char*>(data), size), "COLL_JOB_SECRET");
  } catch (const Error& e) {
    if (e.code() != Code::kInvalidArgument) std::abort();
  }
  return 0;
}
