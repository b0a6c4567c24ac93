// Proof of knowing the job secret, for every connection coll accepts
// (bootstrap store and transports). Challenge-response, both ways:
//
//   acceptor -> connector  ServerHello {magic, nonce_s}
//   connector -> acceptor  ClientHello {magic, identity, nonce_c, HMAC(secret, "client" purpose identity nonce_s)}
//   acceptor -> connector  ServerProof {HMAC(secret, "server" purpose identity nonce_c)}
//
// The secret never crosses the wire; a fresh nonce per connection stops
// replay. `purpose` separates uses ("store", "tcp") and `identity` binds the
// connector's claimed rank. The acceptor side is split into pure functions so
// that event loops can run it without blocking on a silent stranger.
#pragma once

#include "base/deadline.h"

#include <array>
#include <cstdint>
#include <string>

namespace coll::auth {

constexpr uint32_t kHelloMagic = 0x4c4c4f43;  // "COLL" on the wire (little-endian)

using Secret = std::array<uint8_t, 16>;
using Nonce = std::array<uint8_t, 16>;
using Mac = std::array<uint8_t, 32>;

#pragma pack(push, 1)
struct ServerHello {
  uint32_t magic;
  Nonce nonce;
};
struct ClientHello {
  uint32_t magic;
  uint32_t identity;
  Nonce nonce;
  Mac mac;
};
struct ServerProof {
  Mac mac;
};
#pragma pack(pop)

// Sets the crypto library up now: its exit handler, registered then, runs
// after any exit handler registered later (the store server's, which waits
// for its threads to be done with the library).
void init();
// Frees the calling thread's crypto state, before the thread ends: a thread
// that left it to its own end raced the library's exit handler.
void release_thread();

Secret random_secret();
Nonce random_nonce();
std::string to_hex(const Secret& secret);
// kInvalidArgument unless `hex` is exactly 32 hex digits.
Secret secret_from_hex(const std::string& hex, const char* what);
// A secret derived from text (SHA-256, first 16 bytes), for launchers that carry none.
Secret secret_from_text(const std::string& text);

ServerHello make_server_hello(const Nonce& server_nonce);
// True when the client proved knowledge of the secret for this purpose.
bool check_client_hello(const ClientHello& hello, const Secret& secret, const std::string& purpose,
                        const Nonce& server_nonce);
ServerProof make_server_proof(const Secret& secret, const std::string& purpose, uint32_t identity,
                              const Nonce& client_nonce);

// The connector's whole side, blocking until the deadline on fd. A refused or
// failed proof is kRemote naming `what`.
void client_handshake(int fd, const Secret& secret, const std::string& purpose, uint32_t identity,
                      const Deadline& deadline, const std::string& what);

}  // namespace coll::auth
