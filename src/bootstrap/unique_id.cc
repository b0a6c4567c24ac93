#include "bootstrap/unique_id.h"

#include "base/error.h"

#include <cstring>

namespace coll::bootstrap {
namespace {

constexpr char kMagic[8] = {'c', 'o', 'l', 'l', 'i', 'd', '0', '1'};
// Layout: magic[8] secret[16] addr_len[1] addr[addr_len]
constexpr size_t kAddrOffset = sizeof(kMagic) + 16 + 1;
constexpr size_t kMaxAddr = COLL_UNIQUE_ID_BYTES - kAddrOffset;

}  // namespace

coll_unique_id_t UniqueId::encode() const {
  if (store_address.size() > kMaxAddr)
    fail(Code::kInternal, "store address '", store_address, "' too long for a unique id");
  coll_unique_id_t raw;
  std::memset(&raw, 0, sizeof(raw));
  std::memcpy(raw.internal, kMagic, sizeof(kMagic));
  std::memcpy(raw.internal + sizeof(kMagic), secret.data(), secret.size());
  raw.internal[sizeof(kMagic) + 16] = static_cast<char>(store_address.size());
  std::memcpy(raw.internal + kAddrOffset, store_address.data(), store_address.size());
  return raw;
}

UniqueId UniqueId::decode(const coll_unique_id_t& raw) {
  if (std::memcmp(raw.internal, kMagic, sizeof(kMagic)) != 0)
    fail(Code::kInvalidArgument, "id: not a coll unique id (was it filled by coll_get_unique_id on rank 0?)");
  UniqueId id;
  std::memcpy(id.secret.data(), raw.internal + sizeof(kMagic), id.secret.size());
  size_t len = static_cast<unsigned char>(raw.internal[sizeof(kMagic) + 16]);
  if (len == 0 || len > kMaxAddr) fail(Code::kInvalidArgument, "id: corrupted address length ", len);
  id.store_address.assign(raw.internal + kAddrOffset, len);
  return id;
}

}  // namespace coll::bootstrap
