#include "bootstrap/spares.h"

#include "base/error.h"
#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace coll::bootstrap {
namespace {

std::string offer_path(const std::string& dir, int n) { return str_cat(dir, "/offer", n); }

// One line: "nranks first count", then the id's 128 bytes.
struct Offer {
  int nranks = 0, first = 0, count = 0;
  coll_unique_id_t id{};
};

std::optional<Offer> read_offer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Offer o;
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  std::istringstream(line) >> o.nranks >> o.first >> o.count;
  if (!in.read(reinterpret_cast<char*>(&o.id), sizeof(o.id)) || o.count <= 0) return std::nullopt;
  return o;
}

// Whether this process took the seat: the first to create its file does.
// The file names the spare (COLL_SPARE), so that the launcher knows it is
// in use.
bool claim(const std::string& path) {
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    fail(Code::kSystem, "spare: cannot claim a seat at ", path, ": ", std::strerror(errno));
  }
  const std::string who = std::getenv("COLL_SPARE") != nullptr ? std::getenv("COLL_SPARE") : "";
  const ssize_t written = ::write(fd, who.data(), who.size());
  (void)written;
  ::close(fd);
  return true;
}

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

void offer_seats(const std::string& dir, const UniqueId& id, int nranks, int first, int count) {
  const std::string tmp = str_cat(dir, "/.offer.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const coll_unique_id_t raw = id.encode();
    out << nranks << ' ' << first << ' ' << count << '\n';
    out.write(reinterpret_cast<const char*>(&raw), sizeof(raw));
    if (!out.flush()) fail(Code::kSystem, "comm_grow: cannot write an offer to the spares in ", dir);
  }
  // link() never replaces: the first free number is this offer's.
  for (int n = 0;; ++n) {
    if (::link(tmp.c_str(), offer_path(dir, n).c_str()) == 0) break;
    if (errno != EEXIST) {
      const int err = errno;
      ::unlink(tmp.c_str());
      fail(Code::kSystem, "comm_grow: cannot offer seats to the spares in ", dir, ": ", std::strerror(err),
           " (COLL_SPARES_DIR)");
    }
  }
  ::unlink(tmp.c_str());
  log::info(log::kInit, "comm_grow: offered ranks ", first, "..", first + count - 1, " of ", nranks,
            " to the spares in ", dir);
}

Seat take_seat(const std::string& dir) {
  log::info(log::kInit, "spare: waiting in ", dir, " for a communicator to grow");
  for (int n = 0;;) {
    const std::optional<Offer> offer = read_offer(offer_path(dir, n));
    if (!offer) {  // none yet: look again
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int k = 0; k < offer->count; ++k)
      if (claim(str_cat(offer_path(dir, n), ".seat", k)))
        return Seat{UniqueId::decode(offer->id), offer->nranks, offer->first + k};
    ++n;  // every seat taken: the next offer
  }
}

}  // namespace coll::bootstrap
