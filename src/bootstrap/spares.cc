#include "bootstrap/spares.h"

#include "base/error.h"
#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace coll::bootstrap {
namespace {

// The files of offer n, by name in the directory: the offer, its seats,
// and the word that closes it.
std::string offer_name(int n) { return str_cat("offer", n); }
std::string seat_name(int n, int k) { return str_cat(offer_name(n), ".seat", k); }
std::string closed_name(int n) { return offer_name(n) + ".closed"; }

// One line: "nranks first count timeout_ms", then the id's 128 bytes.
struct Offer {
  int nranks = 0, first = 0, count = 0;
  int64_t timeout_ms = 0;
  coll_unique_id_t id{};
};

std::optional<Offer> read_offer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Offer o;
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  std::istringstream(line) >> o.nranks >> o.first >> o.count >> o.timeout_ms;
  if (!in.read(reinterpret_cast<char*>(&o.id), sizeof(o.id)) || o.count <= 0) return std::nullopt;
  return o;
}

// A file in `dir` named `name`, holding `text`, made whole before it
// appears under that name: link() never replaces, so false when one exists.
bool publish(const std::string& dir, const std::string& name, const std::string& text) {
  static std::atomic<int> made{0};
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string tmp = str_cat(dir, "/.tmp.", host, ".", getpid(), ".", made++);
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    written = static_cast<bool>(out.flush());
  }
  const int linked = written ? ::link(tmp.c_str(), str_cat(dir, "/", name).c_str()) : -1;
  const int err = errno;
  ::unlink(tmp.c_str());
  if (linked == 0) return true;
  if (written && err == EEXIST) return false;
  fail(Code::kSystem, "spares: cannot create ", dir, "/", name, ": ",
       written ? std::strerror(err) : "the temporary file could not be written", " (COLL_SPARES_DIR)");
}

bool exists(const std::string& dir, const std::string& name) {
  return ::access(str_cat(dir, "/", name).c_str(), F_OK) == 0;
}
void remove(const std::string& dir, const std::string& name) { ::unlink(str_cat(dir, "/", name).c_str()); }

}  // namespace

std::optional<std::string> spares_dir() {
  const char* dir = std::getenv("COLL_SPARES_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

bool is_spare() {
  const char* spare = std::getenv("COLL_SPARE");
  return spare != nullptr && *spare != '\0';
}

int offer_seats(const std::string& dir, const UniqueId& id, int nranks, int first, int count, int64_t timeout_ms) {
  const coll_unique_id_t raw = id.encode();
  const std::string text = str_cat(nranks, ' ', first, ' ', count, ' ', timeout_ms, '\n',
                                   std::string(reinterpret_cast<const char*>(&raw), sizeof(raw)));
  int n = 0;
  while (!publish(dir, offer_name(n), text)) ++n;  // the first free number is this offer's
  log::info(log::kInit, "comm_grow: offered ranks ", first, "..", first + count - 1, " of ", nranks,
            " to the spares in ", dir, " (offer ", n, ")");
  return n;
}

void close_offer(const std::string& dir, int n, bool joined) noexcept {
  const char* how = joined ? "joined" : "failed";
  try {
    if (publish(dir, closed_name(n), how)) log::info(log::kInit, "spares: offer ", n, " in ", dir, " closed: ", how);
  } catch (const std::exception& e) {  // the growth's outcome stands; a spare may try a seat in vain
    log::warn(log::kInit, "spares: could not close offer ", n, " (", how, "): ", e.what());
  }
}

void leave_seat(const std::string& dir, const Seat& seat) noexcept {
  close_offer(dir, seat.offer, false);
  remove(dir, seat_name(seat.offer, seat.rank - seat.first));
}

Seat take_seat(const std::string& dir) {
  log::info(log::kInit, "spare: waiting in ", dir, " for a communicator to grow");
  const char* me = std::getenv("COLL_SPARE");
  for (int n = 0;;) {
    const std::optional<Offer> offer = read_offer(str_cat(dir, "/", offer_name(n)));
    if (!offer) {  // none yet: look again
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int k = 0; k < offer->count && !exists(dir, closed_name(n)); ++k) {
      if (!publish(dir, seat_name(n, k), me != nullptr ? me : "")) continue;
      if (exists(dir, closed_name(n))) {  // closed as we sat down: the growth is over without us
        remove(dir, seat_name(n, k));
        break;
      }
      return Seat{UniqueId::decode(offer->id), offer->nranks, offer->first + k, offer->first, n, offer->timeout_ms};
    }
    ++n;  // every seat taken, or closed: the next offer
  }
}

std::set<int> seated_spares(const std::string& dir) {
  std::set<int> seated;
  for (int n = 0;; ++n) {
    const std::optional<Offer> offer = read_offer(str_cat(dir, "/", offer_name(n)));
    if (!offer) break;  // offers are numbered without gaps
    std::string how;
    std::ifstream(str_cat(dir, "/", closed_name(n))) >> how;
    if (how == "failed") continue;
    for (int k = 0; k < offer->count; ++k) {
      int who = -1;
      if (std::ifstream(str_cat(dir, "/", seat_name(n, k))) >> who) seated.insert(who);
    }
  }
  return seated;
}

}  // namespace coll::bootstrap
