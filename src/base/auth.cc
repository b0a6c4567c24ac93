#include "base/auth.h"

#include "base/error.h"
#include "base/socket.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace coll::auth {
namespace {

template <size_t N>
std::array<uint8_t, N> random_bytes() {
  std::array<uint8_t, N> out{};
  size_t got = 0;
  while (got < N) {
    ssize_t n = getrandom(out.data() + got, N - got, 0);
    if (n < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, "drawing random bytes", "getrandom");
    if (n > 0) got += static_cast<size_t>(n);
  }
  return out;
}

Mac hmac(const Secret& secret, const char* role, const std::string& purpose, uint32_t identity, const Nonce& nonce) {
  std::string message = std::string(role) + "\n" + purpose + "\n";
  message.append(reinterpret_cast<const char*>(&identity), sizeof(identity));
  message.append(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  Mac out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &len) == nullptr ||
      len != out.size())
    fail(Code::kInternal, "HMAC-SHA256 failed");
  return out;
}

}  // namespace

void init() {
  // With no option, OpenSSL 3 returns at once and registers its exit handler at the first HMAC.
  if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr) != 1) fail(Code::kInternal, "OpenSSL failed to start");
}

void release_thread() { OPENSSL_thread_stop(); }

Secret random_secret() { return random_bytes<16>(); }
Nonce random_nonce() { return random_bytes<16>(); }

std::string to_hex(const Secret& secret) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : secret) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

Secret secret_from_hex(const std::string& hex, const char* what) {
  if (hex.size() != 32) fail(Code::kInvalidArgument, what, " must be 32 hex digits, not ", hex.size(), " characters");
  Secret out{};
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    int v = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (v < 0) fail(Code::kInvalidArgument, what, " has a non-hex character '", c, "'");
    out[i / 2] = static_cast<uint8_t>(out[i / 2] | (v << (i % 2 == 0 ? 4 : 0)));
  }
  return out;
}

Secret secret_from_text(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  Secret out{};
  std::memcpy(out.data(), digest, out.size());
  return out;
}

ServerHello make_server_hello(const Nonce& server_nonce) { return ServerHello{kHelloMagic, server_nonce}; }

bool check_client_hello(const ClientHello& hello, const Secret& secret, const std::string& purpose,
                        const Nonce& server_nonce) {
  if (hello.magic != kHelloMagic) return false;
  Mac expected = hmac(secret, "client", purpose, hello.identity, server_nonce);
  return CRYPTO_memcmp(expected.data(), hello.mac.data(), expected.size()) == 0;
}

ServerProof make_server_proof(const Secret& secret, const std::string& purpose, uint32_t identity,
                              const Nonce& client_nonce) {
  return ServerProof{hmac(secret, "server", purpose, identity, client_nonce)};
}

void client_handshake(int fd, const Secret& secret, const std::string& purpose, uint32_t identity,
                      const Deadline& deadline, const std::string& what) {
  ServerHello server{};
  net::recv_all(fd, &server, sizeof(server), deadline, what);
  if (server.magic != kHelloMagic) fail(Code::kRemote, what, " is not a coll endpoint (bad greeting)");
  ClientHello hello{kHelloMagic, identity, random_nonce(), {}};
  hello.mac = hmac(secret, "client", purpose, identity, server.nonce);
  net::send_all(fd, &hello, sizeof(hello), deadline, what);
  ServerProof proof{};
  try {
    net::recv_all(fd, &proof, sizeof(proof), deadline, what);
  } catch (const Error& e) {
    if (e.code() != Code::kRemote) throw;
    fail(Code::kRemote, what,
         " closed the connection after our proof of the job secret: it refused the proof (the ranks were given "
         "different unique ids or COLL_JOB_SECRET values), or it dropped us for another reason (its handshake "
         "window passed, it was already connected, it ended): ",
         e.what());
  }
  Mac expected = hmac(secret, "server", purpose, identity, hello.nonce);
  if (CRYPTO_memcmp(expected.data(), proof.mac.data(), expected.size()) != 0)
    fail(Code::kRemote, what, " does not know the job secret: refusing it");
}

}  // namespace coll::auth
